"""A word-level language model built on nn.TransformerEncoder: token embeddings scaled by
sqrt(d), sinusoidal positional encoding, a square subsequent mask, a linear decoder with
log-softmax; sequence-first tensors (seq_len, batch).
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    r"""Adds the sinusoidal position signal of "Attention Is All You Need":

        PE(pos, 2i) = sin(pos / 10000^(2i / d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))
    """

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Module):
    """Container module with an encoder, a transformer encoder stack, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerModel, self).__init__()
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout, max_len=64)
        encoder_layers = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        mask = (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
        mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
        return mask

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.encoder(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


# ---------------------------------------------------------------- training and generation
NTOKENS = 24
BPTT = 6


def build_model():
    return TransformerModel(NTOKENS, ninp=16, nhead=2, nhid=32, nlayers=2, dropout=0.0)


def example_inputs():
    rng = np.random.default_rng(70)
    return (rng.integers(0, NTOKENS, (BPTT, 2)).astype(np.int64),)


def example_batch():
    rng = np.random.default_rng(71)
    source = rng.integers(0, NTOKENS, (BPTT + 1, 3)).astype(np.int64)
    return source[:-1], source[1:].reshape(-1)


def train_state(model):
    return 5.0  # learning rate


def train_step(model, lr, data, targets):
    criterion = nn.NLLLoss()
    model.zero_grad()
    output = model(data)
    output = output.view(-1, NTOKENS)
    loss = criterion(output, targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    return loss


def decode_inputs():
    return 5, 8


def decode(model, first_word, words):
    input = torch.tensor([[first_word]], dtype=torch.long)
    with torch.no_grad():
        for i in range(words):
            output = model(input, False)
            word_weights = output[-1].squeeze().exp().cpu()
            word_idx = torch.argmax(word_weights)
            word_tensor = torch.Tensor([[word_idx]]).long()
            input = torch.cat([input, word_tensor], 0)
    return input.view(-1).tolist()
