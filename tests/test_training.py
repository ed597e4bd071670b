"""End-to-end training: nn + optim + data learn small synthetic tasks."""
import numpy as np

import d2s
import d2s.nn.functional as F
from d2s import nn, optim
from d2s.data import DataLoader, TensorDataset


def _regression_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 10)).astype(np.float32)
    w = rng.standard_normal((10, 1)).astype(np.float32)
    y = np.tanh(x @ w) + 0.5 * x[:, :1] ** 2
    return d2s.tensor(x), d2s.tensor(y.astype(np.float32))


def test_mlp_with_adam_reduces_mse_tenfold_in_100_steps():
    d2s.manual_seed(0)
    x, y = _regression_data()
    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(100):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    final = loss_fn(model(x), y).item()
    assert np.isfinite(final)
    assert final < losses[0] / 10, (losses[0], final)


def test_sgd_momentum_training_through_the_data_loader():
    d2s.manual_seed(1)
    x, y = _regression_data(seed=1)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, prefetch=2)
    model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with d2s.no_grad():
        start = F.mse_loss(model(x), y).item()
    for _ in range(30):
        for xb, yb in loader:
            opt.zero_grad()
            F.mse_loss(model(xb), yb).backward()
            opt.step()
    with d2s.no_grad():
        end = F.mse_loss(model(x), y).item()
    assert end < start / 5, (start, end)


def _image_data(n, seed):
    """8x8 one-channel images of 3 classes: a bright horizontal bar, vertical bar or diagonal,
    at a random position, under noise."""
    rng = np.random.default_rng(seed)
    imgs = rng.normal(0, 0.3, size=(n, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 3, size=n)
    for i, c in enumerate(labels):
        k = rng.integers(1, 7)
        if c == 0:
            imgs[i, 0, k, 1:7] += 1.0
        elif c == 1:
            imgs[i, 0, 1:7, k] += 1.0
        else:
            imgs[i, 0, np.arange(1, 7), np.arange(1, 7)] += 1.0
    return d2s.tensor(imgs), d2s.tensor(labels)


def test_small_convnet_learns_an_image_task_above_chance():
    d2s.manual_seed(0)
    x, y = _image_data(240, seed=0)
    x_test, y_test = _image_data(120, seed=1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 3))
    opt = optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(x, y), batch_size=40, shuffle=True)
    first = None
    for _ in range(8):
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
    model.eval()
    with d2s.no_grad():
        pred = d2s.argmax(model(x_test), axis=1).numpy()
        final = loss_fn(model(x), y).item()
    accuracy = (pred == y_test.numpy()).mean()
    assert accuracy > 0.8, accuracy  # chance is 1/3
    assert final < first / 2, (first, final)
