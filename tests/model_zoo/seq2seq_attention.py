"""Sequence to sequence translation with attention: a GRU encoder, and a GRU decoder that at
every step attends over the encoder outputs (additive, Bahdanau-style attention). Trained with
teacher forcing; translated greedily, each predicted word fed back as the next input.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

SOS_token = 0
EOS_token = 1
MAX_LENGTH = 6


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size

        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super(BahdanauAttention, self).__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)

        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)

        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                # teacher forcing: the target is the next input
                decoder_input = target_tensor[:, i].unsqueeze(1)
            else:
                # without teacher forcing: the decoder's own prediction is the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)

        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))

        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)

        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)

        return output, hidden, attn_weights


class Seq2Seq(nn.Module):
    """The encoder and the decoder, saved and loaded together."""

    def __init__(self, input_size, output_size, hidden_size, dropout_p=0.1):
        super().__init__()
        self.encoder = EncoderRNN(input_size, hidden_size, dropout_p)
        self.decoder = AttnDecoderRNN(hidden_size, output_size, dropout_p)

    def forward(self, input_tensor, target_tensor=None):
        encoder_outputs, encoder_hidden = self.encoder(input_tensor)
        return self.decoder(encoder_outputs, encoder_hidden, target_tensor)


def train_batch(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion):
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()

    encoder_outputs, encoder_hidden = encoder(input_tensor)
    decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

    loss = criterion(
        decoder_outputs.view(-1, decoder_outputs.size(-1)),
        target_tensor.view(-1)
    )
    loss.backward()

    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item()


def evaluate(encoder, decoder, input_tensor, output_words):
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)

        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()

        decoded_words = []
        for idx in decoded_ids:
            if idx.item() == EOS_token:
                decoded_words.append('<EOS>')
                break
            decoded_words.append(output_words[idx.item()])
    return decoded_words, decoder_attn


# ---------------------------------------------------------------- training and translation
INPUT_WORDS = ["SOS", "EOS"] + [f"src{i}" for i in range(14)]
OUTPUT_WORDS = ["SOS", "EOS"] + [f"tgt{i}" for i in range(12)]


STATIC_MODULES = ("encoder", "decoder")  # the parts the training loop calls


def build_model():
    return Seq2Seq(len(INPUT_WORDS), len(OUTPUT_WORDS), hidden_size=12, dropout_p=0.0)


def example_inputs():
    rng = np.random.default_rng(90)
    src = rng.integers(2, len(INPUT_WORDS), (2, 5)).astype(np.int64)
    src[:, -1] = EOS_token
    return (src,)


def example_batch():
    rng = np.random.default_rng(91)
    src = rng.integers(2, len(INPUT_WORDS), (3, MAX_LENGTH)).astype(np.int64)
    tgt = rng.integers(2, len(OUTPUT_WORDS), (3, MAX_LENGTH)).astype(np.int64)
    src[:, -1] = EOS_token
    tgt[:, -1] = EOS_token
    return src, tgt


def train_state(model):
    learning_rate = 0.001
    encoder_optimizer = optim.Adam(model.encoder.parameters(), lr=learning_rate)
    decoder_optimizer = optim.Adam(model.decoder.parameters(), lr=learning_rate)
    return encoder_optimizer, decoder_optimizer, nn.NLLLoss()


def train_step(model, state, input_tensor, target_tensor):
    encoder_optimizer, decoder_optimizer, criterion = state
    return train_batch(input_tensor, target_tensor, model.encoder, model.decoder, encoder_optimizer,
                       decoder_optimizer, criterion)


def decode_inputs():
    rng = np.random.default_rng(92)
    src = rng.integers(2, len(INPUT_WORDS), (1, 4)).astype(np.int64)
    src[0, -1] = EOS_token
    return (src,)


def decode(model, input_tensor):
    return evaluate(model.encoder, model.decoder, torch.from_numpy(input_tensor), OUTPUT_WORDS)
