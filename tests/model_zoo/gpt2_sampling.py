"""GPT-2 (Radford et al., 2019) in the layout of HuggingFace's modeling_gpt2: Conv1D layers
(torch.addmm with a transposed weight), a registered lower-triangular "bias" buffer masking the
attention scores with torch.where and the dtype's minimum, the tanh GELU ("gelu_new"), a tied LM
head, and sampling with temperature, top-k and top-p (nucleus) filtering -- sort, cumsum,
scatter, softmax, torch.multinomial with a seeded torch.Generator.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Conv1D(nn.Module):
    """A linear layer with its weight transposed (nx, nf), as the original GPT code has it."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class GPT2Attention(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((n_positions, n_positions), dtype=torch.bool)).view(1, 1, n_positions, n_positions),
            persistent=False,
        )
        self.num_heads = n_head
        self.head_dim = n_embd // n_head
        self.split_size = n_embd
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value)

    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_dim)
        return tensor.view(new_shape).permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (self.num_heads * self.head_dim,)
        return tensor.view(new_shape)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        attn_output = self._attn(self._split_heads(query), self._split_heads(key), self._split_heads(value))
        return self.c_proj(self._merge_heads(attn_output))


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, n_embd):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, n_embd)
        self.c_proj = Conv1D(n_embd, intermediate_size)

    def forward(self, hidden_states):
        return self.c_proj(gelu_new(self.c_fc(hidden_states)))


class GPT2Block(nn.Module):
    def __init__(self, n_embd, n_head, n_positions, eps=1e-5):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=eps)
        self.attn = GPT2Attention(n_embd, n_head, n_positions)
        self.ln_2 = nn.LayerNorm(n_embd, eps=eps)
        self.mlp = GPT2MLP(4 * n_embd, n_embd)

    def forward(self, hidden_states):
        hidden_states = hidden_states + self.attn(self.ln_1(hidden_states))
        return hidden_states + self.mlp(self.ln_2(hidden_states))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.h = nn.ModuleList([GPT2Block(n_embd, n_head, n_positions) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                # scaled init of the residual projections (GPT-2 paper)
                p.data.normal_(mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, input_ids):
        position_ids = torch.arange(0, input_ids.size(-1), dtype=torch.long).unsqueeze(0)
        hidden_states = self.wte(input_ids) + self.wpe(position_ids)
        for block in self.h:
            hidden_states = block(hidden_states)
        return self.lm_head(self.ln_f(hidden_states))


def top_k_top_p_filtering(logits, top_k=0, top_p=0.0, filter_value=-float('Inf')):
    """Filter a distribution of logits using top-k and/or nucleus (top-p) filtering
        Args:
            logits: logits distribution shape (batch size, vocabulary size)
            top_k > 0: keep only top k tokens with highest probability (top-k filtering).
            top_p > 0.0: keep the top tokens with cumulative probability >= top_p (nucleus filtering).
    """
    top_k = min(top_k, logits.size(-1))  # Safety check
    if top_k > 0:
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value

    if top_p > 0.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)

        # Remove tokens with cumulative probability above the threshold
        sorted_indices_to_remove = cumulative_probs > top_p
        # Shift the indices to the right to keep also the first token above the threshold
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0

        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        logits[indices_to_remove] = filter_value
    return logits


@torch.no_grad()
def sample_sequence(model, context, length, temperature=1.0, top_k=0, top_p=0.0, generator=None):
    """Tokens sampled one at a time; returns them and each step's filtered distribution."""
    generated = context
    step_probs = []
    for _ in range(length):
        next_token_logits = model(generated)[:, -1, :] / (temperature if temperature > 0 else 1.)
        filtered_logits = top_k_top_p_filtering(next_token_logits, top_k=top_k, top_p=top_p)
        probs = F.softmax(filtered_logits, dim=-1)
        next_token = torch.multinomial(probs, num_samples=1, generator=generator)
        step_probs.append(probs)
        generated = torch.cat((generated, next_token), dim=1)
    return generated, torch.stack(step_probs, dim=1)


# ---------------------------------------------------------------- training and sampling
VOCAB = 48


def build_model():
    return GPT2LMHeadModel(vocab_size=VOCAB, n_positions=16, n_embd=16, n_layer=2, n_head=2)


def example_inputs():
    rng = np.random.default_rng(330)
    return (rng.integers(0, VOCAB, (2, 7)).astype(np.int64),)


def example_batch():
    rng = np.random.default_rng(331)
    return (rng.integers(0, VOCAB, (4, 9)).astype(np.int64),)


def train_state(model):
    return torch.optim.Adam(model.parameters(), lr=6.25e-5 * 20)


def train_step(model, optimizer, input_ids):
    model.train()
    lm_logits = model(input_ids)
    # shift so that tokens < n predict n
    shift_logits = lm_logits[..., :-1, :].contiguous()
    shift_labels = input_ids[..., 1:].contiguous()
    loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def decode_inputs():
    rng = np.random.default_rng(332)
    return (rng.integers(0, VOCAB, (3, 4)).tolist(), 6)


def decode(model, prompts, length):
    """Sampling as run_generation.py does it. The tokens a seed draws are the library's own
    (torch's generator is not reproduced), so what is compared is what a seed must give: the
    top-1 (greedy) path, the nucleus distributions along it, the same tokens from the same seed,
    and sampled tokens inside each step's nucleus."""
    context = torch.tensor(prompts, dtype=torch.long)
    greedy, _ = sample_sequence(model, context, length, temperature=1.0, top_k=1)
    g = torch.Generator().manual_seed(42)
    # the nucleus distributions along the greedy path: one step at a time on its prefixes
    nucleus = []
    for t in range(context.size(1), greedy.size(1)):
        logits = model(greedy[:, :t])[:, -1, :] / 2.5
        nucleus.append(F.softmax(top_k_top_p_filtering(logits, top_k=10, top_p=0.8), dim=-1))
    nucleus = torch.stack(nucleus, dim=1)
    sampled, probs = sample_sequence(model, context, length, temperature=2.5, top_k=10, top_p=0.8, generator=g)
    again, _ = sample_sequence(model, context, length, temperature=2.5, top_k=10, top_p=0.8,
                               generator=torch.Generator().manual_seed(42))
    new_tokens = sampled[:, context.size(1):]
    chosen = probs.gather(2, new_tokens.unsqueeze(-1)).squeeze(-1)
    kept = (probs > 0).sum(-1)
    return (greedy, nucleus, torch.equal(sampled, again), bool((chosen > 0).all()),
            bool((kept >= 1).all() and (kept <= 10).all()))
