"""Binary classification of tabular data: categorical columns through embeddings, continuous
columns through batch norm, an MLP of Linear / BatchNorm1d / SiLU / Dropout blocks, a logit
trained with BCEWithLogitsLoss weighted for the rare positive class; AdamW, and the learning
rate reduced when the validation loss stops improving.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import ReduceLROnPlateau


class TabularModel(nn.Module):
    def __init__(self, emb_szs, n_cont, layers, ps=0.1, emb_drop=0.0):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(ni, nf) for ni, nf in emb_szs])
        self.emb_drop = nn.Dropout(emb_drop)
        self.bn_cont = nn.BatchNorm1d(n_cont)
        n_emb = sum(e.embedding_dim for e in self.embeds)
        sizes = [n_emb + n_cont] + layers
        blocks = []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            # no bias: the batch norm right after removes it
            blocks += [nn.Linear(n_in, n_out, bias=False), nn.BatchNorm1d(n_out), nn.SiLU(), nn.Dropout(ps)]
        self.layers = nn.Sequential(*blocks)
        self.head = nn.Linear(sizes[-1], 1)

    def forward(self, x_cat, x_cont):
        x = [e(x_cat[:, i]) for i, e in enumerate(self.embeds)]
        x = torch.cat(x, 1)
        x = self.emb_drop(x)
        x_cont = self.bn_cont(x_cont)
        x = torch.cat([x, x_cont], 1)
        return self.head(self.layers(x)).squeeze(-1)


@torch.no_grad()
def evaluate(model, x_cat, x_cont, y, threshold=0.5):
    model.eval()
    logits = model(x_cat, x_cont)
    probs = torch.sigmoid(logits)
    preds = (probs > threshold).long()
    tp = ((preds == 1) & (y == 1)).sum().item()
    fp = ((preds == 1) & (y == 0)).sum().item()
    fn = ((preds == 0) & (y == 1)).sum().item()
    precision = tp / max(tp + fp, 1)
    recall = tp / max(tp + fn, 1)
    val_loss = F.binary_cross_entropy_with_logits(logits, y.float()).item()
    return preds, round(precision, 6), round(recall, 6), val_loss


# ---------------------------------------------------------------- training and evaluation
CARDINALITIES = [5, 3, 7]


def build_model():
    emb_szs = [(c, min(4, (c + 1) // 2)) for c in CARDINALITIES]
    return TabularModel(emb_szs, n_cont=4, layers=[16, 8], ps=0.0)


def _data(rng, n):
    x_cat = np.stack([rng.integers(0, c, n) for c in CARDINALITIES], axis=1).astype(np.int64)
    x_cont = rng.standard_normal((n, 4)).astype(np.float32) * np.array([1.0, 10.0, 0.1, 3.0], np.float32)
    y = (rng.uniform(0, 1, n) < 0.25).astype(np.float32)
    return x_cat, x_cont, y


def example_inputs():
    x_cat, x_cont, _ = _data(np.random.default_rng(220), 5)
    return x_cat, x_cont


def example_batch():
    return _data(np.random.default_rng(221), 12)


def train_state(model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    scheduler = ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=0)
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))
    return optimizer, scheduler, criterion


def train_step(model, state, x_cat, x_cont, y):
    optimizer, scheduler, criterion = state
    model.train()
    optimizer.zero_grad()
    loss = criterion(model(x_cat, x_cont), y)
    loss.backward()
    optimizer.step()
    val_loss = evaluate(model, x_cat, x_cont, y)[-1]
    scheduler.step(val_loss)
    return loss.item(), val_loss, optimizer.param_groups[0]['lr']


def decode_inputs():
    return _data(np.random.default_rng(222), 8)


def decode(model, x_cat, x_cont, y):
    return evaluate(model, torch.from_numpy(x_cat), torch.from_numpy(x_cont), torch.from_numpy(y))
