"""The models of ``bench_models.py``, each written once for either library (``lib`` is ``torch``
or ``d2s``: the same source builds both, so both run the same architecture), and their data.

* ``resnet18``: torchvision's ResNet-18 layout (BasicBlocks 64-128-256-512, BatchNorm, max and
  adaptive average pooling), batch 8, 64x64 inputs, 10 classes; SGD (momentum 0.9).
* ``gpt``: a nanoGPT-style decoder, 6 layers, width 256, 4 heads, MLP 1024 (exact GELU), learned
  position embeddings, pre-norm LayerNorm, causal attention through
  ``F.scaled_dot_product_attention(is_causal=True)``, vocabulary 1024, batch 8, sequence 128;
  the loss is computed inside ``forward`` (as nanoGPT does); AdamW.
* ``lstm``: a word language model (PyTorch's ``word_language_model`` layout): embedding 256,
  a 2-layer ``nn.LSTM`` of 256 units over time-major batches, a decoder to a vocabulary of
  1000; batch 16, sequence 64; the loss inside ``forward``; SGD.
* ``mobilenet``: MobileNetV2 (inverted residuals with depthwise 3x3 convolutions, BatchNorm,
  ReLU6, width 1.0, 1000 classes), inference in eval mode under ``no_grad``, batch 1, 224x224.
"""
import numpy as np


def resnet18(lib, num_classes=10):
    """torchvision's ResNet-18 layout with ``lib``'s layers."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                               if stride != 1 or cin != cout else None)

        def forward(self, x):
            out = lib.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return lib.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            blocks, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*blocks)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(lib.relu(self.bn1(self.conv1(x))))
            x = self.avgpool(self.layers(x))
            return self.fc(lib.flatten(x, 1))

    return ResNet()


def gpt(lib, vocab=1024, width=256, layers=6, heads=4, block=128):
    """A nanoGPT-style causal language model; ``forward(idx, targets)`` returns the loss."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(width)
            self.c_attn = nn.Linear(width, 3 * width)
            self.c_proj = nn.Linear(width, width)
            self.ln_2 = nn.LayerNorm(width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q = q.view(B, T, heads, C // heads).transpose(1, 2)
            k = k.view(B, T, heads, C // heads).transpose(1, 2)
            v = v.view(B, T, heads, C // heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.c_proj(y)
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.wpe = nn.Embedding(block, width)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.lm_head = nn.Linear(width, vocab, bias=False)

        def forward(self, idx, targets):
            T = idx.shape[1]
            pos = lib.arange(0, T, dtype=lib.int64)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.h:
                x = blk(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def lstm_lm(lib, vocab=1000, emb=256, hidden=256, layers=2):
    """PyTorch's word_language_model LSTM (no dropout); ``forward(tokens, targets)`` over
    time-major (T, B) tokens returns the loss."""
    nn, F = lib.nn, lib.nn.functional

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, emb)
            self.rnn = nn.LSTM(emb, hidden, layers)
            self.decoder = nn.Linear(hidden, vocab)

        def forward(self, tokens, targets):
            output, _ = self.rnn(self.encoder(tokens))
            logits = self.decoder(output)
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    return RNNModel()


def mobilenet_v2(lib, num_classes=1000):
    """torchvision's MobileNetV2 layout (width 1.0)."""
    nn = lib.nn

    def conv_bn(cin, cout, kernel, stride, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        return layers + [nn.ReLU6(inplace=True)] if act else layers

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.use_res = stride == 1 and cin == cout
            layers = conv_bn(cin, hidden, 1, 1) if expand != 1 else []
            layers += conv_bn(hidden, hidden, 3, stride, groups=hidden) + conv_bn(hidden, cout, 1, 1, act=False)
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            return x + self.conv(x) if self.use_res else self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            layers, cin = conv_bn(3, 32, 3, 2), 32
            for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                               (6, 160, 3, 2), (6, 320, 1, 1)):
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            layers += conv_bn(cin, 1280, 1, 1)
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

        def forward(self, x):
            x = self.features(x)
            x = lib.flatten(nn.functional.adaptive_avg_pool2d(x, (1, 1)), 1)
            return self.classifier(x)

    return MobileNetV2()


# ------------------------------------------------------------------ data (numpy, the same for every column)
def resnet18_data(batch=8, size=64):
    rng = np.random.default_rng(0)
    return rng.standard_normal((batch, 3, size, size)).astype("float32"), rng.integers(0, 10, batch)


def gpt_data(batch=8, seq=128, vocab=1024):
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, vocab, (batch, seq + 1))
    return tokens[:, :-1].copy(), tokens[:, 1:].copy()


def lstm_data(batch=16, seq=64, vocab=1000):
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, vocab, (seq + 1, batch))
    return tokens[:-1].copy(), tokens[1:].copy()


def mobilenet_data(size=224):
    return (np.random.default_rng(3).standard_normal((1, 3, size, size)).astype("float32"),)
