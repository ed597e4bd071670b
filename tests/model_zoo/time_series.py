"""Predicting sine waves with two stacked LSTM cells, stepped by hand over time in float64;
after the given steps the model's own outputs are fed back to predict the future.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=51):
        super(Sequence, self).__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def make_waves(n, length, T=20, seed=0):
    rng = np.random.RandomState(seed)
    x = np.empty((n, length), 'int64')
    x[:] = np.array(range(length)) + rng.randint(-4 * T, 4 * T, n).reshape(n, 1)
    return np.sin(x / 1.0 / T).astype('float64')


# ---------------------------------------------------------------- training and prediction
RTOL = 1e-9  # float64 throughout


def build_model():
    return Sequence(hidden=8).double()


def example_inputs():
    return (make_waves(3, 12, seed=150),)


def example_batch():
    data = make_waves(4, 16, seed=151)
    return data[:, :-1], data[:, 1:]


def train_state(model):
    return optim.Adam(model.parameters(), lr=0.05), nn.MSELoss()


def train_step(seq, state, input, target):
    optimizer, criterion = state
    optimizer.zero_grad()
    out = seq(input)
    loss = criterion(out, target)
    loss.backward()
    optimizer.step()
    return loss.item()


def decode_inputs():
    data = make_waves(2, 10, seed=152)
    return data[:, :-1], data[:, 1:]


def decode(seq, test_input, test_target):
    criterion = nn.MSELoss()
    future = 5
    test_input, test_target = torch.from_numpy(test_input), torch.from_numpy(test_target)
    with torch.no_grad():
        pred = seq(test_input, future=future)
        loss = criterion(pred[:, :-future], test_target)
        y = pred.detach().numpy()
    return loss.item(), y
