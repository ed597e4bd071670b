"""Programs found by differential fuzzing (tests/regressions/*.py), each a function of three
float32 (3,) tensors and an int64 0-d ``n``: the converted function must equal the eager one
on random inputs and every ``n`` in 0..3.

Both failed with ``UnboundLocalError`` inside a converted branch: an inner ``if`` passed a name
that both its branches bind to its branch functions, reading it in an enclosing branch function
where it was a local not yet bound.
"""
import importlib.util
import os

import numpy as np
import pytest

import d2s

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "regressions")
NAMES = sorted(f[:-3] for f in os.listdir(HERE) if f.startswith("fuzz_") and f.endswith(".py"))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


@pytest.mark.parametrize("name", NAMES)
def test_regression_program_equals_eager(name):
    fn = _load(name)
    converted = d2s.jit.to_static(fn)
    rng = np.random.default_rng(0)
    for trial in range(12):
        args = [d2s.tensor(rng.normal(size=3).astype(np.float32)) for _ in range(3)]
        n = d2s.tensor(np.int64(trial % 4))
        expected = fn(*args, n)
        got = converted(*args, n)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} on {[a.numpy() for a in args]}, n={trial % 4}")


def test_regressions_are_present():
    assert len(NAMES) >= 2
