"""A character-level MLP language model (Bengio et al., 2003) making up names: the previous
block_size characters are embedded, concatenated, and go through a hidden layer with batch norm
and tanh to the logits of the next character. Plain SGD on the parameters; names are sampled
one character at a time until the end token.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

words = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "charlotte", "amelia", "harper", "evelyn"]
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
block_size = 3  # how many characters predict the next one


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]  # crop and append
    X = torch.tensor(X)
    Y = torch.tensor(Y)
    return X, Y


class MLP(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd=10, n_hidden=200):
        super().__init__()
        self.C = nn.Embedding(vocab_size, n_embd)
        self.net = nn.Sequential(
            nn.Linear(n_embd * block_size, n_hidden, bias=False),
            nn.BatchNorm1d(n_hidden),
            nn.Tanh(),
            nn.Linear(n_hidden, vocab_size),
        )
        with torch.no_grad():
            self.net[-1].weight *= 0.1  # a less confident last layer at initialization

    def forward(self, x):
        emb = self.C(x)  # (batch, block_size, n_embd)
        x = emb.view(emb.shape[0], -1)
        return self.net(x)


@torch.no_grad()
def split_loss(model, X, Y):
    model.eval()
    logits = model(X)
    return F.cross_entropy(logits, Y).item()


# ---------------------------------------------------------------- training and sampling
def build_model():
    return MLP(vocab_size, block_size, n_embd=6, n_hidden=24)


def example_inputs():
    rng = np.random.default_rng(80)
    return (rng.integers(0, vocab_size, (5, block_size)).astype(np.int64),)


def example_batch():
    return (words,)


class TrainState:
    step = 0


def train_state(model):
    return TrainState()


def train_step(model, state, words):
    Xtr, Ytr = build_dataset(words)
    # a fixed minibatch of 16 rows per step (torch.randint with a generator in a longer run)
    ix = torch.arange(16) * 3 + state.step
    Xb, Yb = Xtr[ix], Ytr[ix]
    model.train()

    logits = model(Xb)
    loss = F.cross_entropy(logits, Yb)
    for p in model.parameters():
        p.grad = None
    loss.backward()

    lr = 0.1 if state.step < 100000 else 0.01  # step learning rate decay
    for p in model.parameters():
        p.data += -lr * p.grad
    state.step += 1
    return loss.item(), split_loss(model, Xtr, Ytr)


def decode_inputs():
    return ("a", "e", "o")


@torch.no_grad()
def decode(model, *starts, greedy=True):
    """A name per start letter: each next character the most likely one (greedy) or sampled."""
    model.eval()
    g = torch.Generator().manual_seed(2147483647 + 10)
    names = []
    for start in starts:
        out = [stoi[start]]
        context = [0] * (block_size - 1) + out
        while True:
            logits = model(torch.tensor([context]))
            probs = F.softmax(logits, dim=1)
            if greedy:
                ix = torch.argmax(probs, dim=1).item()
            else:
                ix = torch.multinomial(probs, num_samples=1, generator=g).item()
            context = context[1:] + [ix]
            out.append(ix)
            if ix == 0 or len(out) >= 12:
                break
        names.append(''.join(itos[i] for i in out))
    return names
