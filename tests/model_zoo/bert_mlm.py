"""A small BERT (Devlin et al., 2018) pre-trained with masked language modelling: token +
position + segment embeddings with LayerNorm, an nn.TransformerEncoder (GELU, post-norm), the
MLM head (dense, GELU, LayerNorm, a decoder tied to the word embeddings plus its own bias) and
the masking of HuggingFace's DataCollatorForLanguageModeling (15% of the non-special tokens:
80% -> [MASK], 10% -> a random token, 10% kept; labels -100 elsewhere).
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, CLS, SEP, MASK = 0, 1, 2, 3
N_SPECIAL = 4


class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_position_embeddings, type_vocab_size, dropout):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size, padding_idx=PAD)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("position_ids", torch.arange(max_position_embeddings).expand((1, -1)), persistent=False)

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids) \
            + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertLMPredictionHead(nn.Module):
    def __init__(self, hidden_size, vocab_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.decoder = nn.Linear(hidden_size, vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden_states):
        hidden_states = self.LayerNorm(F.gelu(self.dense(hidden_states)))
        return self.decoder(hidden_states) + self.bias


class BertForMaskedLM(nn.Module):
    def __init__(self, vocab_size=30522, hidden_size=768, num_layers=12, num_heads=12, intermediate_size=3072,
                 max_position_embeddings=512, type_vocab_size=2, dropout=0.1):
        super().__init__()
        self.vocab_size = vocab_size
        self.embeddings = BertEmbeddings(vocab_size, hidden_size, max_position_embeddings, type_vocab_size, dropout)
        layer = nn.TransformerEncoderLayer(hidden_size, num_heads, intermediate_size, dropout, activation="gelu",
                                           layer_norm_eps=1e-12, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.cls = BertLMPredictionHead(hidden_size, vocab_size)
        self.apply(self._init_weights)
        # tie the output embeddings to the input embeddings
        self.cls.decoder.weight = self.embeddings.word_embeddings.weight

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, input_ids, token_type_ids, attention_mask):
        x = self.embeddings(input_ids, token_type_ids)
        x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        return self.cls(x)


def mask_tokens(inputs, special_tokens_mask, rand, vocab_size, mlm_probability=0.15):
    """DataCollatorForLanguageModeling.torch_mask_tokens, its three uniform draws per token given
    (``rand``: (B, T, 3); a data loader draws them with torch.rand(inputs.shape + (3,)))."""
    labels = inputs.clone()
    probability_matrix = torch.full(labels.shape, mlm_probability)
    probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
    masked_indices = rand[..., 0] < probability_matrix
    labels[~masked_indices] = -100  # we only compute loss on masked tokens

    # 80% of the time, we replace masked input tokens with [MASK]
    indices_replaced = (rand[..., 1] < 0.8) & masked_indices
    inputs = inputs.clone()
    inputs[indices_replaced] = MASK

    # 10% of the time, we replace masked input tokens with a random word
    indices_random = (rand[..., 2] < 0.5) & masked_indices & ~indices_replaced
    random_words = (N_SPECIAL + rand[..., 2] * 2 * (vocab_size - N_SPECIAL)).long().clamp(max=vocab_size - 1)
    inputs[indices_random] = random_words[indices_random]
    # the rest of the time (10% of the time) we keep the masked input tokens unchanged
    return inputs, labels


# ---------------------------------------------------------------- training and fill-mask
VOCAB = 40
SEQ = 10


def build_model():
    return BertForMaskedLM(vocab_size=VOCAB, hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32,
                           max_position_embeddings=16, type_vocab_size=2, dropout=0.0)


def _sentence_pairs(rng, n):
    """[CLS] a [SEP] b [SEP] [PAD]..., segment ids 0 then 1, attention mask 1 on tokens."""
    ids = np.zeros((n, SEQ), np.int64)
    types = np.zeros((n, SEQ), np.int64)
    for i in range(n):
        la, lb = rng.integers(2, 4), rng.integers(1, 4)
        a, b = rng.integers(N_SPECIAL, VOCAB, la), rng.integers(N_SPECIAL, VOCAB, lb)
        row = [CLS, *a, SEP, *b, SEP]
        ids[i, :len(row)] = row
        types[i, la + 2:len(row)] = 1
    return ids, types, (ids != PAD).astype(np.int64)


def example_inputs():
    return _sentence_pairs(np.random.default_rng(320), 3)


def example_batch():
    rng = np.random.default_rng(321)
    ids, types, attn = _sentence_pairs(rng, 6)
    rand = rng.uniform(0, 1, (6, SEQ, 3)).astype(np.float32)
    rand[..., 0] *= 0.4  # a tiny batch: about a third of its tokens masked, not 15%
    return ids, types, attn, rand


def train_state(model):
    no_decay = ["bias", "LayerNorm.weight"]
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=1e-3, eps=1e-6)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0, end_factor=0.0, total_iters=10)
    return optimizer, scheduler


def train_step(model, state, input_ids, token_type_ids, attention_mask, rand):
    optimizer, scheduler = state
    model.train()
    special = (input_ids == PAD) | (input_ids == CLS) | (input_ids == SEP)
    inputs, labels = mask_tokens(input_ids, special, rand, model.vocab_size)
    logits = model(inputs, token_type_ids, attention_mask)
    loss = F.cross_entropy(logits.view(-1, model.vocab_size), labels.view(-1), ignore_index=-100)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    with torch.no_grad():
        masked = labels != -100
        correct = (logits.argmax(-1) == labels) & masked
        accuracy = correct.sum().float() / masked.sum()
    return loss.item(), math.exp(loss.item()), accuracy.item(), int(masked.sum())


def decode_inputs():
    return ([[CLS, 5, MASK, 9, SEP, 12, MASK, SEP], [CLS, MASK, 7, SEP, 20, SEP]],)


def decode(model, sentences):
    """Fill-mask: the top 3 tokens and their probabilities at each [MASK]."""
    out = []
    with torch.no_grad():
        for ids in sentences:
            input_ids = torch.tensor([ids])
            sep = ids.index(SEP)
            token_type_ids = torch.tensor([[0] * (sep + 1) + [1] * (len(ids) - sep - 1)])
            logits = model(input_ids, token_type_ids, torch.ones_like(input_ids))
            mask_positions = (input_ids[0] == MASK).nonzero(as_tuple=True)[0]
            probs = logits[0, mask_positions].softmax(dim=-1)
            values, predictions = probs.topk(3)
            out.append((mask_positions.tolist(), predictions.tolist(), values))
    return out
