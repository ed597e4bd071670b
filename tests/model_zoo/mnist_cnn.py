"""A convolutional digit classifier: two convolutions, max pooling, dropout, two linear layers,
log-softmax outputs with the negative log-likelihood loss; Adadelta with a step schedule.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self, channels=(32, 64), hidden=128, image_size=28, p1=0.25, p2=0.5):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, channels[0], 3, 1)
        self.conv2 = nn.Conv2d(channels[0], channels[1], 3, 1)
        self.dropout1 = nn.Dropout(p1)
        self.dropout2 = nn.Dropout(p2)
        side = (image_size - 4) // 2
        self.fc1 = nn.Linear(channels[1] * side * side, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def test(model, data, target):
    """Summed loss and number of correct predictions on one batch."""
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        output = model(data)
        test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
        pred = output.argmax(dim=1, keepdim=True)  # index of the max log-probability
        correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss, correct, pred


# ---------------------------------------------------------------- training and evaluation
def build_model():
    # small: 12x12 images, 4 and 8 channels; dropout off so that a training step is repeatable
    return Net(channels=(4, 8), hidden=16, image_size=12, p1=0.0, p2=0.0)


def example_inputs():
    rng = np.random.default_rng(50)
    x = rng.uniform(0, 1, (3, 1, 12, 12)).astype(np.float32)
    return ((x - 0.1307) / 0.3081,)


def example_batch():
    rng = np.random.default_rng(51)
    x = rng.uniform(0, 1, (4, 1, 12, 12)).astype(np.float32)
    return ((x - 0.1307) / 0.3081).astype(np.float32), rng.integers(0, 10, 4).astype(np.int64)


def train_state(model):
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    return optimizer, scheduler


def train_step(model, state, data, target):
    optimizer, scheduler = state
    model.train()
    optimizer.zero_grad()
    output = model(data)
    loss = F.nll_loss(output, target)
    loss.backward()
    optimizer.step()
    scheduler.step()  # one step per "epoch" here
    return loss.item(), scheduler.get_last_lr()


def decode_inputs():
    rng = np.random.default_rng(52)
    x = rng.uniform(0, 1, (6, 1, 12, 12)).astype(np.float32)
    return ((x - 0.1307) / 0.3081).astype(np.float32), rng.integers(0, 10, 6).astype(np.int64)


def decode(model, data, target):
    return test(model, torch.from_numpy(data), torch.from_numpy(target))
