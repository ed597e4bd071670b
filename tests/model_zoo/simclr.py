"""SimCLR (Chen et al., 2020): a small convolutional encoder and an MLP projection head trained
with the NT-Xent contrastive loss -- two augmented views of each image, L2-normalized
projections, a cosine-similarity matrix over the 2N views with its diagonal masked out, divided
by a temperature, and cross-entropy against the index of each view's partner. The same loss in
the form of the UvA deep-learning tutorial (F.cosine_similarity, masked_fill_ with a large
negative, a rolled positive mask, logsumexp) and its top-1/top-5 retrieval accuracy.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SimCLR(nn.Module):
    def __init__(self, in_channels=3, hidden=32, out_dim=16, temperature=0.5):
        super().__init__()
        self.temperature = temperature
        self.encoder = nn.Sequential(
            nn.Conv2d(in_channels, hidden // 2, 3, padding=1, bias=False),
            nn.BatchNorm2d(hidden // 2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(hidden // 2, hidden, 3, padding=1, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Flatten(),
        )
        # the projection head g(.) of the paper: a hidden layer, ReLU, the output layer
        self.projector = nn.Sequential(
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, out_dim),
        )

    def forward(self, x):
        h = self.encoder(x)
        z = self.projector(h)
        return h, F.normalize(z, dim=1)


def nt_xent_loss(z1, z2, temperature):
    """The NT-Xent loss of a batch of pairs (z1[i], z2[i])."""
    batch_size = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    similarity_matrix = torch.matmul(z, z.T)
    # a view is not its own negative
    mask = torch.eye(2 * batch_size, dtype=torch.bool, device=z.device)
    logits = similarity_matrix.masked_fill(mask, float('-inf')) / temperature
    labels = torch.arange(batch_size, device=z.device)
    labels = torch.cat([labels + batch_size, labels], dim=0)
    return F.cross_entropy(logits, labels)


def info_nce_loss(feats, temperature):
    """The tutorial's form: feats are the two views' projections stacked along dim 0."""
    cos_sim = F.cosine_similarity(feats[:, None, :], feats[None, :, :], dim=-1)
    self_mask = torch.eye(cos_sim.shape[0], dtype=torch.bool, device=cos_sim.device)
    cos_sim.masked_fill_(self_mask, -9e15)
    # the positive of view i is view i + N (mod 2N)
    pos_mask = self_mask.roll(shifts=cos_sim.shape[0] // 2, dims=0)
    cos_sim = cos_sim / temperature
    nll = -cos_sim[pos_mask] + torch.logsumexp(cos_sim, dim=-1)
    nll = nll.mean()
    # where the positive ranks among all candidates
    comb_sim = torch.cat([cos_sim[pos_mask][:, None], cos_sim.masked_fill(pos_mask, -9e15)], dim=-1)
    sim_argsort = comb_sim.argsort(dim=-1, descending=True).argmin(dim=-1)
    acc_top1 = (sim_argsort == 0).float().mean()
    acc_top5 = (sim_argsort < 5).float().mean()
    return nll, acc_top1, acc_top5, sim_argsort.float().mean() + 1


# ---------------------------------------------------------------- training
def build_model():
    return SimCLR(hidden=16, out_dim=8, temperature=0.5)


def example_inputs():
    rng = np.random.default_rng(300)
    return (rng.standard_normal((4, 3, 8, 8)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(301)
    images = rng.standard_normal((6, 3, 8, 8)).astype(np.float32)
    # two "augmentations": a horizontal flip plus noise, and a brightness change plus noise
    view1 = images[:, :, :, ::-1] + 0.1 * rng.standard_normal(images.shape)
    view2 = 1.2 * images + 0.1 * rng.standard_normal(images.shape)
    return np.ascontiguousarray(view1, dtype=np.float32), view2.astype(np.float32)


def train_state(model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    return optimizer


def train_step(model, optimizer, x1, x2):
    model.train()
    optimizer.zero_grad()
    x = torch.cat([x1, x2], dim=0)
    _, z = model(x)
    z1, z2 = z.chunk(2, dim=0)
    loss = nt_xent_loss(z1, z2, model.temperature)
    nll, top1, top5, mean_pos = info_nce_loss(z, model.temperature)
    loss.backward()
    optimizer.step()
    return loss.item(), nll.item(), top1.item(), top5.item(), mean_pos.item()
