"""A character-level GPT (the GPT-2 layout of nanoGPT) with a static key/value cache, sampling
and beam search: a PyTorch model file whose imports name d2s (`benchmarks/bench_generate.py`
runs this very file under PyTorch by changing those three lines back).

`GPT.generate` is a plain Python decoding loop: `for _ in range(max_new_tokens)` around the
model, temperature and top-k sampling, an end-of-text stop. `d2s.jit.to_static` turns it into
ONE program holding one `while` op, whatever `max_new_tokens` is (docs/to_static/generation.md).
With `use_cache=True` the keys and values of every position are kept in tensors of the final
length, written in place at the new position each step, so each step runs the model on one
token with fixed shapes.
"""
import math
from dataclasses import dataclass

import d2s as torch
import d2s.nn as nn
import d2s.nn.functional as F


@dataclass
class GPTConfig:
    vocab_size: int = 96
    block_size: int = 256  # the longest sequence (prompt and generated text) the model reads
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout

    def forward(self, x, cache=None, positions=None):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                               is_causal=True)
        else:
            # the static cache: (B, nh, L, hs) tensors written in place at this step's positions;
            # each query sees the positions up to its own
            k_cache, v_cache = cache
            k_cache.index_copy_(2, positions, k)
            v_cache.index_copy_(2, positions, v)
            visible = torch.arange(k_cache.size(2)) <= positions[:, None]
            y = F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=visible)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x, cache=None, positions=None):
        x = x + self.attn(self.ln_1(x), cache, positions)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None, cache=None, pos=0):
        """Logits (b, t, vocab) of the tokens ``idx`` (b, t), and the loss against ``targets``.
        With ``cache`` (from :meth:`new_cache`) the tokens sit at positions ``pos ..`` and the
        cache keeps their keys and values."""
        b, t = idx.size()
        positions = torch.arange(t) + pos
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(positions))
        caches = cache if cache is not None else [None] * len(self.transformer.h)
        for block, layer_cache in zip(self.transformer.h, caches):
            x = block(x, layer_cache, positions)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def new_cache(self, batch, length):
        """Empty keys and values for ``batch`` sequences of up to ``length`` positions."""
        c = self.config
        shape = (batch, c.n_head, length, c.n_embd // c.n_head)
        return [(torch.zeros(shape), torch.zeros(shape)) for _ in range(c.n_layer)]

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        decay = [p for p in self.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @staticmethod
    def sample(logits, temperature=1.0, top_k=None):
        """One token per row of ``logits`` (b, vocab): the most likely one when ``temperature``
        is 0, else drawn from the softmax of ``logits / temperature`` over the ``top_k`` best."""
        if temperature == 0.0:
            return logits.argmax(dim=-1, keepdim=True)
        logits = logits / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        return torch.multinomial(probs, num_samples=1)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, eos=None, use_cache=False):
        """``idx`` (b, t) continued by up to ``max_new_tokens`` tokens. A sequence that emits
        ``eos`` is finished (it repeats ``eos`` from then on), and generation stops once every
        sequence is. ``use_cache``: keep the keys and values of the positions already read
        (the prompt and what is generated must then fit in ``block_size``)."""
        finished = torch.zeros(idx.size(0), dtype=torch.bool)
        if use_cache:
            cache = self.new_cache(idx.size(0), idx.size(1) + max_new_tokens)
            logits, _ = self(idx, cache=cache)
        for step in range(max_new_tokens):
            if not use_cache:
                # the sequence, cropped to the last block_size tokens
                idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
                logits, _ = self(idx_cond)
            idx_next = self.sample(logits[:, -1, :], temperature, top_k)
            if eos is not None:
                idx_next = idx_next.masked_fill(finished[:, None], eos)
                finished = finished | (idx_next[:, 0] == eos)
            idx = torch.cat((idx, idx_next), dim=1)
            if eos is not None and finished.all():
                break
            if use_cache:
                logits, _ = self(idx_next, cache=cache, pos=idx.size(1) - 1)
        return idx


@torch.no_grad()
def beam_search(model, idx, max_new_tokens, beam_size=4, eos=0):
    """The most likely continuation of each prompt of ``idx`` (b, t) by beam search: ``beam_size``
    hypotheses per prompt, all kept as rows of one batch; a hypothesis that emits ``eos`` has
    ended (it extends with ``eos`` at no cost). Stops early once every hypothesis has ended.

    Returns:
        (the prompts with the best continuation of each, (b, t + steps); its log-probability, (b,)).
    """
    B, T = idx.shape
    K = beam_size
    cache = model.new_cache(B * K, T + max_new_tokens)
    logits, _ = model(idx.repeat_interleave(K, dim=0), cache=cache)
    logits = logits[:, -1, :]
    V = logits.size(-1)
    scores = torch.zeros(B, K)
    scores[:, 1:] = -float("inf")  # the beams of a prompt start identical: keep one
    ended = torch.zeros(B, K, dtype=torch.bool)
    tokens = torch.zeros(max_new_tokens, B, K, dtype=torch.long)
    parents = torch.zeros(max_new_tokens, B, K, dtype=torch.long)
    only_eos = torch.full((V,), -float("inf"))
    only_eos[eos] = 0.0
    steps = 0
    for t in range(max_new_tokens):
        logp = F.log_softmax(logits, dim=-1).view(B, K, V)
        logp = torch.where(ended[:, :, None], only_eos, logp)
        scores, best = (scores[:, :, None] + logp).view(B, K * V).topk(K, dim=-1)
        parent = torch.div(best, V, rounding_mode="floor")
        token = best % V
        tokens[t] = token
        parents[t] = parent
        ended = ended.gather(1, parent) | (token == eos)
        # the surviving hypotheses' keys and values move to their rows
        rows = (parent + torch.arange(B)[:, None] * K).view(-1)
        for k_cache, v_cache in cache:
            k_cache.copy_(k_cache.index_select(0, rows))
            v_cache.copy_(v_cache.index_select(0, rows))
        steps = t + 1
        if ended.all():
            break
        logits, _ = model(token.view(B * K, 1), cache=cache, pos=T + t)
        logits = logits[:, -1, :]
    # backtrack from each prompt's best hypothesis
    beam = scores.argmax(dim=-1)
    best_score = scores.gather(1, beam[:, None])[:, 0]
    out = torch.zeros(B, steps, dtype=torch.long)
    for s in range(steps - 1, -1, -1):
        out[:, s] = tokens[s].gather(1, beam[:, None])[:, 0]
        beam = parents[s].gather(1, beam[:, None])[:, 0]
    return torch.cat((idx, out), dim=1), best_score
