"""MobileNetV2 (Sandler et al., 2018): inverted residual blocks of expand (1x1) -> depthwise
(3x3, groups=channels) -> project (1x1, linear), ReLU6 activations, batch norm.

Trained with RMSprop as in the paper; evaluation prints the top-3 classes with their scores.
"""
import numpy as np
import torch
from torch import nn


def _make_divisible(v, divisor, min_value=None):
    """Round the channel count v to a multiple of divisor, never below 90% of v."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(out_planes),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        self.stride = stride
        assert stride in [1, 2]

        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup

        layers = []
        if expand_ratio != 1:
            # pointwise expansion
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1))
        layers.extend([
            # depthwise
            ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
            # pointwise projection, linear
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None, round_nearest=8,
                 last_channel=1280, dropout=0.2):
        super().__init__()
        input_channel = 32

        if inverted_residual_setting is None:
            inverted_residual_setting = [
                # t, c, n, s
                [1, 16, 1, 1],
                [6, 24, 2, 2],
                [6, 32, 3, 2],
                [6, 64, 4, 2],
                [6, 96, 3, 1],
                [6, 160, 3, 2],
                [6, 320, 1, 1],
            ]
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError("inverted_residual_setting should be a non-empty list of 4-element lists, "
                             "got {}".format(inverted_residual_setting))

        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features = [ConvBNReLU(3, input_channel, stride=2)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(InvertedResidual(input_channel, output_channel, stride, expand_ratio=t))
                input_channel = output_channel
        features.append(ConvBNReLU(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)

        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(self.last_channel, num_classes),
        )

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out')
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        # global average pooling as a functional call (exports to ONNX as GlobalAveragePool)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


# ---------------------------------------------------------------- training and evaluation
NUM_CLASSES = 5
CLASSES = ["cat", "dog", "car", "ship", "tree"]


def build_model():
    setting = [[1, 8, 1, 1], [6, 12, 2, 2], [6, 16, 2, 2]]
    model = MobileNetV2(num_classes=10, width_mult=0.5, inverted_residual_setting=setting,
                        round_nearest=4, last_channel=32, dropout=0.0)
    # fine-tuning: a new head for our classes
    model.classifier[1] = nn.Linear(model.last_channel, NUM_CLASSES)
    return model


def example_inputs():
    rng = np.random.default_rng(30)
    return (rng.standard_normal((2, 3, 24, 24)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(31)
    return rng.standard_normal((4, 3, 24, 24)).astype(np.float32), rng.integers(0, NUM_CLASSES, 4).astype(np.int64)


def train_state(model):
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.01, alpha=0.9, eps=0.0316, momentum=0.9,
                                    weight_decay=4e-5)
    return nn.CrossEntropyLoss(), optimizer


def train_step(model, state, images, labels):
    criterion, optimizer = state
    optimizer.zero_grad()
    outputs = model(images)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    return loss.item()


def decode_inputs():
    rng = np.random.default_rng(32)
    return (rng.standard_normal((1, 3, 24, 24)).astype(np.float32),)


@torch.no_grad()
def decode(model, image):
    image = torch.from_numpy(image)
    output = model(image)
    probabilities = torch.nn.functional.softmax(output[0], dim=0)
    top_prob, top_catid = torch.topk(probabilities, 3)
    return [(CLASSES[top_catid[i]], top_prob[i].item()) for i in range(top_prob.size(0))]
