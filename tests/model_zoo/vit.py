"""A small Vision Transformer (Dosovitskiy et al., 2020): the image cut into patches by a
strided convolution, a learned class token and position embeddings, a pre-norm
nn.TransformerEncoder, and a linear head on the class token. AdamW with warmup + cosine decay.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)                  # (B, D, H/P, W/P)
        return x.flatten(2).transpose(1, 2)  # (B, N, D)


class ViT(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, embed_dim=768, depth=12,
                 num_heads=12, mlp_ratio=4.0, dropout=0.1):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(p=dropout)

        layer = nn.TransformerEncoderLayer(d_model=embed_dim, nhead=num_heads,
                                           dim_feedforward=int(embed_dim * mlp_ratio), dropout=dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=depth, norm=nn.LayerNorm(embed_dim),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(embed_dim, num_classes)

        nn.init.trunc_normal_(self.pos_embed, std=.02)
        nn.init.trunc_normal_(self.cls_token, std=.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def forward_features(self, x):
        B = x.shape[0]
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        x = self.encoder(x)
        return x[:, 0]

    def forward(self, x):
        return self.head(self.forward_features(x))


def cosine_with_warmup(optimizer, warmup_steps, total_steps):
    def lr_lambda(step):
        if step < warmup_steps:
            return float(step + 1) / float(max(1, warmup_steps))
        progress = float(step - warmup_steps) / float(max(1, total_steps - warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


# ---------------------------------------------------------------- training and prediction
NUM_CLASSES = 7


def build_model():
    return ViT(img_size=12, patch_size=4, in_chans=3, num_classes=NUM_CLASSES, embed_dim=16, depth=2,
               num_heads=2, mlp_ratio=2.0, dropout=0.0)


def example_inputs():
    rng = np.random.default_rng(170)
    return (rng.standard_normal((2, 3, 12, 12)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(171)
    return rng.standard_normal((4, 3, 12, 12)).astype(np.float32), rng.integers(0, NUM_CLASSES, 4).astype(np.int64)


def train_state(model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    return optimizer, cosine_with_warmup(optimizer, warmup_steps=3, total_steps=10)


def train_step(model, state, images, labels):
    optimizer, scheduler = state
    model.train()
    logits = model(images)
    loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    return loss.item(), optimizer.param_groups[0]["lr"]


def decode_inputs():
    rng = np.random.default_rng(172)
    return (rng.standard_normal((3, 3, 12, 12)).astype(np.float32),)


@torch.inference_mode()
def decode(model, images):
    probs = model(torch.from_numpy(images)).softmax(dim=-1)
    top5 = probs.topk(5, dim=-1)
    return top5.values, top5.indices
