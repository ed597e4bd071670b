"""M5 (Dai et al., 2016): a 1-d convolutional network on raw audio waveforms for keyword
classification -- a wide strided first convolution, then convolution / batch norm / ReLU /
max pooling stages, global average pooling over time and log-softmax.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

labels = ["yes", "no", "up", "down", "left", "right", "on", "off"]


class M5(nn.Module):
    def __init__(self, n_input=1, n_output=35, stride=16, n_channel=32):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=80, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(2)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(self.bn1(x))
        x = self.pool1(x)
        x = self.conv2(x)
        x = F.relu(self.bn2(x))
        x = self.pool2(x)
        x = self.conv3(x)
        x = F.relu(self.bn3(x))
        x = self.pool3(x)
        x = F.avg_pool1d(x, x.shape[-1])
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        return F.log_softmax(x, dim=2)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def number_of_correct(pred, target):
    # count number of correct predictions
    return pred.squeeze().eq(target).sum().item()


def get_likely_index(tensor):
    # find most likely label index for each element in the batch
    return tensor.argmax(dim=-1)


def index_to_label(index):
    return labels[index]


# ---------------------------------------------------------------- training and prediction
def build_model():
    return M5(n_input=1, n_output=len(labels), stride=8, n_channel=6)


def _waves(rng, n, length=800):
    t = np.arange(length) / 8000.0
    f = rng.uniform(200, 2000, (n, 1, 1))
    return (np.sin(2 * np.pi * f * t) + 0.3 * rng.standard_normal((n, 1, length))).astype(np.float32)


def example_inputs():
    return (_waves(np.random.default_rng(210), 2),)


def example_batch():
    rng = np.random.default_rng(211)
    return _waves(rng, 4), rng.integers(0, len(labels), 4).astype(np.int64)


def train_state(model):
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0001)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.1)
    return optimizer, scheduler


def train_step(model, state, data, target):
    optimizer, scheduler = state
    model.train()
    output = model(data)
    # negative log-likelihood of a (batch, 1, n_output) output
    loss = F.nll_loss(output.squeeze(), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    return loss.item()


def decode_inputs():
    rng = np.random.default_rng(212)
    return _waves(rng, 3), rng.integers(0, len(labels), 3)


def decode(model, data, target):
    model.eval()
    data, target = torch.from_numpy(data), torch.from_numpy(target)
    with torch.no_grad():
        output = model(data)
        pred = get_likely_index(output)
        correct = number_of_correct(pred, target)
        words = [index_to_label(i) for i in pred.squeeze().tolist()]
    return words, correct
