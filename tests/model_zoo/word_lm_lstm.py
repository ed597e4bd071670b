"""A word-level language model: embedding -> multi-layer LSTM (or GRU / Elman RNN) -> linear
decoder, trained by truncated backpropagation through time with gradient clipping and plain
SGD on the parameters; text is generated word by word from the last hidden state.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            except KeyError as e:
                raise ValueError("An invalid option for `--model` was supplied, "
                                 "options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        # "Using the Output Embedding to Improve Language Models" (Press & Wolf, 2016)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz):
    # trim what does not divide evenly, then one column per batch element
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


# ---------------------------------------------------------------- training and generation
NTOKENS = 30
BPTT = 7
BATCH_SIZE = 3


def build_model():
    return RNNModel('LSTM', NTOKENS, ninp=12, nhid=12, nlayers=2, dropout=0.0, tie_weights=True)


def example_inputs():
    rng = np.random.default_rng(60)
    data = rng.integers(0, NTOKENS, (BPTT, BATCH_SIZE)).astype(np.int64)
    h = (0.1 * rng.standard_normal((2, BATCH_SIZE, 12))).astype(np.float32)
    c = (0.1 * rng.standard_normal((2, BATCH_SIZE, 12))).astype(np.float32)
    return data, (h, c)


def example_batch():
    rng = np.random.default_rng(61)
    return (rng.integers(0, NTOKENS, 50).astype(np.int64),)


class TrainState:
    lr = 20.0
    clip = 0.25
    hidden = None
    i = 0


def train_state(model):
    return TrainState()


def train_step(model, state, corpus):
    criterion = nn.NLLLoss()
    train_data = batchify(corpus, BATCH_SIZE)
    if state.hidden is None:
        state.hidden = model.init_hidden(BATCH_SIZE)
    data, targets = get_batch(train_data, state.i, BPTT)
    state.i += BPTT
    # detach the hidden state from the previous batch: backprop stops at the batch boundary
    hidden = repackage_hidden(state.hidden)
    model.zero_grad()
    output, hidden = model(data, hidden)
    state.hidden = hidden
    loss = criterion(output, targets)
    loss.backward()

    # clip_grad_norm helps prevent the exploding gradient problem in RNNs / LSTMs
    torch.nn.utils.clip_grad_norm_(model.parameters(), state.clip)
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-state.lr)
    return loss.item(), math.exp(loss.item())


def decode_inputs():
    return 3, 10


def decode(model, first_word, words):
    """Greedy generation: the most likely next word, fed back in, ``words`` times."""
    hidden = model.init_hidden(1)
    input = torch.full((1, 1), first_word, dtype=torch.long)
    out = []
    with torch.no_grad():  # no tracking history
        for i in range(words):
            output, hidden = model(input, hidden)
            word_weights = output.squeeze().exp().cpu()
            word_idx = torch.argmax(word_weights)
            input.fill_(word_idx)
            out.append(word_idx.item())
    return out, hidden
