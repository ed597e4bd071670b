"""Metric learning with a triplet network: a small embedding CNN with L2-normalized outputs,
trained with a triplet margin loss on (anchor, positive, negative) images plus a cosine
embedding loss; retrieval ranks a gallery by distance to each query.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class EmbeddingNet(nn.Module):
    def __init__(self, embedding_dim=128, channels=(32, 64)):
        super().__init__()
        c1, c2 = channels
        self.convnet = nn.Sequential(
            nn.Conv2d(1, c1, 5), nn.PReLU(),
            nn.MaxPool2d(2, stride=2),
            nn.Conv2d(c1, c2, 5), nn.PReLU(),
            nn.MaxPool2d(2, stride=2),
        )
        self.fc = nn.Sequential(
            nn.Linear(c2 * 4 * 4, 256),
            nn.PReLU(),
            nn.Linear(256, embedding_dim),
        )

    def forward(self, x):
        output = self.convnet(x)
        output = output.view(output.size()[0], -1)
        output = self.fc(output)
        return F.normalize(output, p=2, dim=1)


class TripletNet(nn.Module):
    def __init__(self, embedding_net):
        super().__init__()
        self.embedding_net = embedding_net

    def forward(self, x1, x2, x3):
        output1 = self.embedding_net(x1)
        output2 = self.embedding_net(x2)
        output3 = self.embedding_net(x3)
        return output1, output2, output3

    def get_embedding(self, x):
        return self.embedding_net(x)


def retrieve(model, queries, gallery, k=3):
    """The k nearest gallery items of each query and their distances."""
    q = model.get_embedding(queries)
    g = model.get_embedding(gallery)
    dist = torch.cdist(q, g)
    values, indices = dist.topk(k, dim=1, largest=False)
    cos = F.cosine_similarity(q.unsqueeze(1), g.unsqueeze(0), dim=-1)
    return indices, values, cos


# ---------------------------------------------------------------- training and retrieval
def build_model():
    return TripletNet(EmbeddingNet(embedding_dim=8, channels=(4, 6)))


def example_inputs():
    rng = np.random.default_rng(260)
    return tuple(rng.standard_normal((2, 1, 28, 28)).astype(np.float32) for _ in range(3))


def example_batch():
    rng = np.random.default_rng(261)
    a, p, n = (rng.standard_normal((4, 1, 28, 28)).astype(np.float32) for _ in range(3))
    p = (a + 0.3 * p).astype(np.float32)  # positives look like their anchors
    return a, p, n


def train_state(model):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return optimizer, nn.TripletMarginLoss(margin=1.0, p=2), nn.CosineEmbeddingLoss(margin=0.2)


def train_step(model, state, anchor, positive, negative):
    optimizer, triplet_loss, cosine_loss = state
    model.train()
    optimizer.zero_grad()
    ea, ep, en = model(anchor, positive, negative)
    target = torch.ones(ea.size(0))
    loss = triplet_loss(ea, ep, en) + 0.5 * (cosine_loss(ea, ep, target) + cosine_loss(ea, en, -target))
    loss.backward()
    optimizer.step()
    return loss.item(), F.pairwise_distance(ea, ep).mean().item()


def decode_inputs():
    rng = np.random.default_rng(262)
    queries = rng.standard_normal((2, 1, 28, 28)).astype(np.float32)
    return queries, rng.standard_normal((6, 1, 28, 28)).astype(np.float32)


@torch.no_grad()
def decode(model, queries, gallery):
    return retrieve(model, torch.from_numpy(queries), torch.from_numpy(gallery))
