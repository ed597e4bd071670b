"""Sentiment classification of padded token sequences with a small transformer encoder written
from nn.MultiheadAttention: learned positions, post-norm blocks, a key padding mask so that
padding is never attended to, and masked mean pooling before the classifier.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD_IDX = 0


class EncoderBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, padding_mask):
        attn_out, attn_weights = self.attn(x, x, x, key_padding_mask=padding_mask, need_weights=True)
        x = self.norm1(x + self.dropout(attn_out))
        x = self.norm2(x + self.dropout(self.ff(x)))
        return x, attn_weights


class SentimentClassifier(nn.Module):
    def __init__(self, vocab_size, d_model=128, n_heads=4, d_ff=256, n_layers=2, max_len=512, n_classes=2,
                 dropout=0.1):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model, padding_idx=PAD_IDX)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff, dropout) for _ in range(n_layers)])
        self.classifier = nn.Linear(d_model, n_classes)

    def forward(self, tokens):
        padding_mask = tokens == PAD_IDX  # True where there is no token
        positions = torch.arange(tokens.size(1), device=tokens.device).unsqueeze(0).expand_as(tokens)
        x = self.tok_emb(tokens) + self.pos_emb(positions)
        attentions = []
        for block in self.blocks:
            x, attn = block(x, padding_mask)
            attentions.append(attn)
        # mean over the real tokens only
        keep = (~padding_mask).unsqueeze(-1).type_as(x)
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
        return self.classifier(pooled), torch.stack(attentions, dim=1)


# ---------------------------------------------------------------- training and prediction
VOCAB_SIZE = 25


def _pad(rng, lengths, width):
    x = np.zeros((len(lengths), width), np.int64)
    for i, n in enumerate(lengths):
        x[i, :n] = rng.integers(1, VOCAB_SIZE, n)
    return x


def build_model():
    return SentimentClassifier(VOCAB_SIZE, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=16, dropout=0.0)


def example_inputs():
    rng = np.random.default_rng(190)
    return (_pad(rng, [7, 4, 1], 7),)


def example_batch():
    rng = np.random.default_rng(191)
    return _pad(rng, [8, 5, 3, 6], 8), np.array([1, 0, 1, 0], np.int64)


def train_state(model):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
    return optimizer


def train_step(model, optimizer, tokens, labels):
    model.train()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    acc = (logits.argmax(dim=-1) == labels).float().mean()
    return loss.item(), acc.item()


def decode_inputs():
    rng = np.random.default_rng(192)
    return (_pad(rng, [5, 2], 6),)


@torch.no_grad()
def decode(model, tokens):
    logits, attn = model(torch.from_numpy(tokens))
    probs = F.softmax(logits, dim=-1)
    conf, pred = probs.max(dim=-1)
    return pred, conf, attn[:, -1]
