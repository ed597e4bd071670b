"""Classifying names by language from their characters: each name is a sequence of one-hot
letters read by a recurrent network; the final hidden state goes through a linear layer and
log-softmax. Trained one name at a time with SGD; ``predict`` prints the top guesses.
"""
import string

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
all_categories = ['English', 'French', 'German', 'Italian', 'Polish', 'Russian']
n_categories = len(all_categories)


def letterToIndex(letter):
    return all_letters.find(letter)


def lineToTensor(line):
    """A name as a <line_length x 1 x n_letters> tensor of one-hot letters."""
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, num_layers=1):
        super(CharRNN, self).__init__()
        self.rnn = nn.RNN(input_size, hidden_size, num_layers=num_layers)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[-1])
        output = self.softmax(output)
        return output


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


def evaluate(rnn, line_tensor):
    with torch.no_grad():
        return rnn(line_tensor)


def predict(rnn, input_line, n_predictions=3):
    output = evaluate(rnn, lineToTensor(input_line))
    # the top n categories
    topv, topi = output.topk(n_predictions, 1, True)
    predictions = []
    for i in range(n_predictions):
        value = topv[0][i].item()
        category_index = topi[0][i].item()
        predictions.append([round(value, 4), all_categories[category_index]])
    return predictions


# ---------------------------------------------------------------- training and prediction
def build_model():
    return CharRNN(n_letters, 16, n_categories, num_layers=2)


def _one_hot_name(name):
    x = np.zeros((len(name), 1, n_letters), np.float32)
    for i, ch in enumerate(name):
        x[i, 0, all_letters.find(ch)] = 1
    return x


def example_inputs():
    return (_one_hot_name("Nakamura"),)


def example_batch():
    return "Schmidt", all_categories.index('German')


def train_state(model):
    return torch.optim.SGD(model.parameters(), lr=0.005), nn.NLLLoss()


def train_step(rnn, state, name, category):
    optimizer, criterion = state
    category_tensor = torch.tensor([category], dtype=torch.long)
    line_tensor = lineToTensor(name)
    rnn.train()
    optimizer.zero_grad()
    output = rnn(line_tensor)
    loss = criterion(output, category_tensor)
    loss.backward()
    nn.utils.clip_grad_norm_(rnn.parameters(), 3)
    optimizer.step()
    guess, guess_i = categoryFromOutput(output)
    return loss.item(), guess


def decode_inputs():
    return ("Dovesky",)


def decode(rnn, name):
    return predict(rnn, name, 3) + [F.softmax(evaluate(rnn, lineToTensor(name)), dim=1)]
