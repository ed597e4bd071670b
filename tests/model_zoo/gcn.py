"""A graph convolutional network (Kipf & Welling, 2017) for graph classification, written from
scratch as PyTorch-Geometric tutorials do it: GCNConv with self-loops and the symmetric
normalization D^-1/2 (A + I) D^-1/2 (degrees by scatter_add_, deg.pow(-0.5), messages gathered
along edge_index and summed into their targets with index_add_), a GraphSAGE-style mean
aggregation with scatter_add_ over an expanded index, and global mean / max pooling over the
batch vector of a mini-batch of graphs.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def add_self_loops(edge_index, num_nodes):
    loop_index = torch.arange(0, num_nodes, dtype=torch.long, device=edge_index.device)
    loop_index = loop_index.unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loop_index], dim=1)


def degree(index, num_nodes, dtype):
    out = torch.zeros((num_nodes, ), dtype=dtype, device=index.device)
    one = torch.ones((index.size(0), ), dtype=out.dtype, device=out.device)
    return out.scatter_add_(0, index, one)


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.Tensor(out_channels))
        self.reset_parameters()

    def reset_parameters(self):
        self.lin.reset_parameters()
        self.bias.data.zero_()

    def forward(self, x, edge_index):
        # x has shape [N, in_channels], edge_index has shape [2, E]
        edge_index = add_self_loops(edge_index, num_nodes=x.size(0))
        x = self.lin(x)

        # the symmetric normalization of each edge
        row, col = edge_index
        deg = degree(col, x.size(0), dtype=x.dtype)
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt[deg_inv_sqrt == float('inf')] = 0
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]

        # messages from the sources, summed at the targets
        msg = norm.view(-1, 1) * x[row]
        out = torch.zeros_like(x).index_add_(0, col, msg)
        return out + self.bias


class SAGEConv(nn.Module):
    """Mean aggregation of the neighbours, a root weight (GraphSAGE)."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin_l = nn.Linear(in_channels, out_channels)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        index = dst.unsqueeze(-1).expand(-1, x.size(1))
        summed = torch.zeros_like(x).scatter_add_(0, index, x[src])
        count = torch.zeros(x.size(0), dtype=x.dtype).scatter_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
        mean = summed / count.clamp(min=1).unsqueeze(-1)
        return self.lin_l(mean) + self.lin_r(x)


def global_mean_pool(x, batch, size=None):
    size = int(batch.max().item() + 1) if size is None else size
    out = torch.zeros(size, x.size(1), dtype=x.dtype).index_add_(0, batch, x)
    count = torch.bincount(batch, minlength=size).clamp(min=1)
    return out / count.unsqueeze(-1).to(x.dtype)


def global_max_pool(x, batch, size=None):
    size = int(batch.max().item() + 1) if size is None else size
    index = batch.unsqueeze(-1).expand_as(x)
    out = torch.full((size, x.size(1)), float('-inf'), dtype=x.dtype)
    return out.scatter_reduce(0, index, x, reduce='amax', include_self=True)


class GCN(nn.Module):
    def __init__(self, num_node_features, hidden_channels, num_classes):
        super(GCN, self).__init__()
        self.conv1 = GCNConv(num_node_features, hidden_channels)
        self.conv2 = GCNConv(hidden_channels, hidden_channels)
        self.conv3 = SAGEConv(hidden_channels, hidden_channels)
        self.lin = nn.Linear(2 * hidden_channels, num_classes)

    def forward(self, x, edge_index, batch):
        # 1. node embeddings
        x = self.conv1(x, edge_index)
        x = x.relu()
        x = self.conv2(x, edge_index)
        x = x.relu()
        x = self.conv3(x, edge_index)

        # 2. a readout layer
        x = torch.cat([global_mean_pool(x, batch), global_max_pool(x, batch)], dim=1)  # [batch_size, 2 * hidden]

        # 3. the classifier
        x = F.dropout(x, p=0.5, training=self.training)
        return self.lin(x)


# ---------------------------------------------------------------- training and prediction
FEATURES = 5
NUM_CLASSES = 3


def _graphs(rng, sizes):
    """A mini-batch of random undirected graphs: node features, edge_index (both directions),
    the batch vector; one graph's nodes are numbered after the previous graph's."""
    xs, edges, batch = [], [], []
    offset = 0
    for g, n in enumerate(sizes):
        xs.append(rng.standard_normal((n, FEATURES)))
        for i in range(n):
            for j in range(i + 1, n):
                if rng.uniform() < 0.5 or j == i + 1:
                    edges += [(offset + i, offset + j), (offset + j, offset + i)]
        batch += [g] * n
        offset += n
    return (np.concatenate(xs).astype(np.float32), np.array(edges, np.int64).T.copy(),
            np.array(batch, np.int64))


def build_model():
    return GCN(FEATURES, hidden_channels=8, num_classes=NUM_CLASSES)


def example_inputs():
    return _graphs(np.random.default_rng(350), [4, 3, 5])


def example_batch():
    rng = np.random.default_rng(351)
    x, edge_index, batch = _graphs(rng, [3, 5, 4, 4])
    y = rng.integers(0, NUM_CLASSES, 4)
    return x, edge_index, batch, y


def train_state(model):
    return torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)


def train_step(model, optimizer, x, edge_index, batch, y):
    model.train()
    # dropout off in these steps: d2s's random stream is not torch's
    model.eval()
    optimizer.zero_grad()
    out = model(x, edge_index, batch)
    loss = F.cross_entropy(out, y)
    loss.backward()
    optimizer.step()
    pred = out.argmax(dim=1)
    return loss.item(), int((pred == y).sum())


def decode_inputs():
    return _graphs(np.random.default_rng(352), [2, 6])


def decode(model, x, edge_index, batch):
    with torch.no_grad():
        out = model(torch.from_numpy(x), torch.from_numpy(edge_index), torch.from_numpy(batch))
        return out.softmax(dim=-1), out.argmax(dim=-1)
