"""An LSTM encoder-decoder with Luong ("general") attention and a batched beam search decoder.

The encoder is a bidirectional LSTM whose final states initialize the decoder; training uses
teacher forcing on padded target batches (padding ignored by the loss); beam search keeps the
best ``beam_size`` partial translations as rows of one tensor and finishes them at EOS, with
length-normalized scores.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS = 0, 1, 2


class Encoder(nn.Module):
    def __init__(self, vocab_size, emb_dim, hid_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=PAD)
        self.rnn = nn.LSTM(emb_dim, hid_dim, batch_first=True, bidirectional=True)

    def forward(self, src):
        outputs, (h, c) = self.rnn(self.embedding(src))
        # (2, B, H) forward and backward directions -> (1, B, 2H)
        h = torch.cat([h[0:1], h[1:2]], dim=2)
        c = torch.cat([c[0:1], c[1:2]], dim=2)
        return outputs, (h, c)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.W = nn.Linear(dim, dim, bias=False)

    def forward(self, output, memory, src_mask):
        # output (B, T, D), memory (B, S, D)
        scores = torch.bmm(output, self.W(memory).transpose(1, 2))
        scores = scores.masked_fill(~src_mask.unsqueeze(1), -1e9)
        attn = F.softmax(scores, dim=-1)
        return torch.bmm(attn, memory), attn


class Decoder(nn.Module):
    def __init__(self, vocab_size, emb_dim, hid_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=PAD)
        self.rnn = nn.LSTM(emb_dim, hid_dim, batch_first=True)
        self.attention = Attention(hid_dim)
        self.concat = nn.Linear(2 * hid_dim, hid_dim)
        self.out = nn.Linear(hid_dim, vocab_size)

    def forward(self, tgt, state, memory, src_mask):
        output, state = self.rnn(self.embedding(tgt), state)
        context, _ = self.attention(output, memory, src_mask)
        output = torch.tanh(self.concat(torch.cat([output, context], dim=-1)))
        return self.out(output), state


class Seq2Seq(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, emb_dim=32, hid_dim=64):
        super().__init__()
        self.encoder = Encoder(src_vocab, emb_dim, hid_dim)
        self.decoder = Decoder(tgt_vocab, emb_dim, 2 * hid_dim)

    def forward(self, src, tgt_in):
        memory, state = self.encoder(src)
        logits, _ = self.decoder(tgt_in, state, memory, src != PAD)
        return logits


@torch.no_grad()
def beam_search(model, src, beam_size=3, max_len=10, len_penalty=1.0):
    """The best translation of one source sentence src (1, S): (tokens, score)."""
    model.eval()
    memory, (h, c) = model.encoder(src)
    src_mask = src != PAD
    # one row per beam
    memory = memory.expand(beam_size, -1, -1)
    src_mask = src_mask.expand(beam_size, -1)
    h = h.repeat(1, beam_size, 1)
    c = c.repeat(1, beam_size, 1)

    tokens = torch.full((beam_size, 1), BOS, dtype=torch.long)
    scores = torch.zeros(beam_size)
    scores[1:] = float('-inf')  # all beams start identical: keep one
    finished = []

    for step in range(max_len):
        logits, (h, c) = model.decoder(tokens[:, -1:], (h, c), memory, src_mask)
        log_probs = F.log_softmax(logits[:, -1], dim=-1)  # (beam, V)
        vocab_size = log_probs.size(-1)
        candidates = (scores.unsqueeze(1) + log_probs).view(-1)
        top_scores, top_ids = candidates.topk(beam_size)
        beam_ids = torch.div(top_ids, vocab_size, rounding_mode='floor')
        token_ids = top_ids % vocab_size

        tokens = torch.cat([tokens.index_select(0, beam_ids), token_ids.unsqueeze(1)], dim=1)
        h = h.index_select(1, beam_ids)
        c = c.index_select(1, beam_ids)
        scores = top_scores.clone()

        ended = (token_ids == EOS).nonzero(as_tuple=True)[0]
        for b in ended.tolist():
            length = tokens.size(1) - 1
            finished.append((scores[b].item() / length ** len_penalty, tokens[b, 1:].tolist()))
            scores[b] = float('-inf')
        if len(finished) >= beam_size:
            break

    if not finished:
        best = scores.argmax()
        finished.append((scores[best].item() / (tokens.size(1) - 1) ** len_penalty, tokens[best, 1:].tolist()))
    finished.sort(key=lambda t: t[0], reverse=True)
    return finished[0][1], finished[0][0]


# ---------------------------------------------------------------- training and decoding
SRC_VOCAB, TGT_VOCAB = 15, 13


def build_model():
    return Seq2Seq(SRC_VOCAB, TGT_VOCAB, emb_dim=8, hid_dim=8)


def _padded(rng, rows, length, vocab, lengths):
    x = np.full((rows, length), PAD, np.int64)
    for i, n in enumerate(lengths):
        x[i, :n - 1] = rng.integers(3, vocab, n - 1)
        x[i, n - 1] = EOS
    return x


def example_inputs():
    rng = np.random.default_rng(100)
    src = _padded(rng, 2, 6, SRC_VOCAB, [6, 4])
    tgt = _padded(rng, 2, 5, TGT_VOCAB, [5, 3])
    tgt_in = np.concatenate([np.full((2, 1), BOS, np.int64), tgt[:, :-1]], axis=1)
    return src, tgt_in


def example_batch():
    rng = np.random.default_rng(101)
    src = _padded(rng, 3, 7, SRC_VOCAB, [7, 5, 3])
    tgt = _padded(rng, 3, 6, TGT_VOCAB, [6, 4, 2])
    return src, tgt


def train_state(model):
    return torch.optim.Adam(model.parameters(), lr=2e-3), nn.CrossEntropyLoss(ignore_index=PAD)


def train_step(model, state, src, tgt):
    optimizer, criterion = state
    model.train()
    bos = torch.full((tgt.size(0), 1), BOS, dtype=torch.long)
    tgt_in = torch.cat([bos, tgt[:, :-1]], dim=1)
    logits = model(src, tgt_in)
    loss = criterion(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    return loss


def decode_inputs():
    rng = np.random.default_rng(102)
    return _padded(rng, 1, 5, SRC_VOCAB, [5]), _padded(rng, 1, 5, SRC_VOCAB, [4])


def decode(model, src_a, src_b):
    src_a, src_b = torch.from_numpy(src_a), torch.from_numpy(src_b)
    return [beam_search(model, src_a, beam_size=3, max_len=8), beam_search(model, src_b, beam_size=4, max_len=6)]
