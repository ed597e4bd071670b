"""Big parameters updated a block of rows at a time (d2s/optim/_blocks.py) end bitwise where the
update of the whole parameter ends: parameters and state after 3 steps, for every optimizer and
the options that create state during a step, with gradients laid out as products give them."""
import numpy as np
import pytest

import d2s
from d2s.optim import _blocks

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=1e-2, maximize=True)),
    ("Adamax", dict(lr=1e-2, weight_decay=0.1)),
    ("NAdam", dict(lr=1e-2, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=1e-2, lr_decay=0.1)),
    ("Adadelta", dict(lr=1.0)),
    ("ASGD", dict(lr=1e-2, t0=1)),
    ("Rprop", dict(lr=1e-2)),
]

# (300, 300): two blocks of rows, the second partial; (70000,): one row per element;
# (3, 40000): rows bigger than a block. The gradient of the first is transposed (as x^T g is).
SHAPES = [(300, 300), (70000,), (3, 40000)]


def _train(name, kwargs, by_blocks):
    rng = np.random.default_rng(0)
    params = [d2s.nn.Parameter(d2s.tensor(rng.standard_normal(s).astype("float32"))) for s in SHAPES]
    opt = getattr(d2s.optim, name)(params, **kwargs)
    opt._by_blocks = by_blocks
    for _ in range(3):
        for i, p in enumerate(params):
            g = rng.standard_normal(p.shape[::-1] if i == 0 else p.shape).astype("float32")
            p.grad = d2s.tensor(g.T if i == 0 else g)
        opt.step()
    return [p.detach().numpy() for p in params], opt.state_dict()["state"]


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_blocks_equal_the_whole_update_bitwise(name, kwargs, monkeypatch):
    calls = []
    real = _blocks.update_by_blocks
    monkeypatch.setattr("d2s.optim.optimizer.update_by_blocks", lambda *a: calls.append(1) or real(*a))
    blocked, blocked_state = _train(name, kwargs, True)
    assert len(calls) == 3 * len(SHAPES)  # every parameter went by blocks
    whole, whole_state = _train(name, kwargs, False)
    for a, b in zip(blocked, whole):
        np.testing.assert_array_equal(a, b)
    assert blocked_state.keys() == whole_state.keys()
    for i in whole_state:
        assert list(blocked_state[i]) == list(whole_state[i])  # the same entries, in the same order
        for key, v in whole_state[i].items():
            np.testing.assert_array_equal(np.asarray(blocked_state[i][key]), np.asarray(v), err_msg=key)


def test_small_single_row_and_non_numpy_parameters_are_updated_whole():
    big = np.zeros((2, 70000))
    assert _blocks.blockable(np, big, big, {})
    assert not _blocks.blockable(np, np.zeros((2, 100)), np.zeros((2, 100)), {})
    assert not _blocks.blockable(np, np.zeros((1, 70000)), np.zeros((1, 70000)), {})
    assert not _blocks.blockable(object(), big, big, {})  # cupy: one kernel per op already
    assert not _blocks.blockable(np, big, big, {"buf": np.zeros((70000, 2))})  # state of another shape
