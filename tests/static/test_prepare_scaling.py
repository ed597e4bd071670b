"""Preparation stays near-linear in the size of the function (issue 27), counted, not timed:
the maybe-alias bookkeeping of a tensor ``if`` in an unrolled Python loop (it walked every
earlier ``if``'s links again at each new one: n^4 time, 42 M calls of ``id()`` at n = 70), the
alias flags of loops replayed for a gradient (replays see and make no alias links: a fuzz-found
training program made 20,000+ ``_add_flag`` calls in its first 40 s, and took 629 s), and the
constants that traces thrown away used to leave in the program."""
import collections
import importlib.util

import numpy as np
import pytest

import d2s
from d2s.static import object_identity as cf  # (alias_flag, alias_targets and ObjectCarry live there)


def _load(tmp_path, src, name="f"):
    path = tmp_path / f"m_{abs(hash(src))}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def unrolled(n):
    return f"""
def f(x):
    for i in range({n}):
        if x.sum() > i:
            x = x - 1.0
    return x
"""


@pytest.fixture
def counted(monkeypatch):
    """Calls of the alias walks and of _ObjectCarry._add_flag while the test runs."""
    calls = collections.Counter()
    for owner, name in ((cf, "alias_flag"), (cf, "alias_targets"), (cf._ObjectCarry, "_add_flag")):
        orig = getattr(owner, name)

        def wrapped(*a, _orig=orig, _name=name, **k):
            calls[_name] += 1
            return _orig(*a, **k)
        monkeypatch.setattr(owner, name, wrapped)
    return calls


def test_alias_bookkeeping_of_an_unrolled_tensor_if_grows_linearly(tmp_path, counted):
    x = d2s.tensor([10.0, 20.0, 30.0])
    per_n = {}
    for n in (30, 60):
        counted.clear()
        f = _load(tmp_path, unrolled(n))
        out = d2s.jit.to_static(f)(x)
        np.testing.assert_allclose(out.numpy(), f(x).numpy())
        per_n[n] = dict(counted)
    # (before: alias_flag ran about n * (n - 1) times, each walk longer than the last)
    assert per_n[60].get("alias_flag", 0) <= 2 * per_n[30].get("alias_flag", 0) + 4
    assert per_n[60]["alias_targets"] <= 2.2 * per_n[30]["alias_targets"]
    assert per_n[60].get("alias_flag", 0) < 60


# program 3 of the fuzz-found functions whose training preparation took minutes
# (../shared/regressions/slow_grad_3.py): nested tensor while/for/if, early return, break
SLOW_GRAD = '''
import d2s


def slow_grad(x, y, z, n):
    z = d2s.tanh((d2s.abs(x) * (y * 0.0 + 2.0)))
    k1 = d2s.tensor(0)
    while k1 < 3 and ((z.max() <= 0.62) and (x.mean() > 0.53)):
        k1 = k1 + 1
        if x.sum() <= -1.07:
            k2 = d2s.tensor(0)
            while k2 < 4 and ((z.mean() < 0.42) or (z.mean() >= -0.64)):
                k2 = k2 + 1
                y = d2s.tanh(z)
            y = d2s.tanh(d2s.sin(((z * x) + (y + (z * 0.0 + 1.0)))))
            for i3 in range(n):
                x = x + d2s.cast(i3, 'float32') * 0.1
                x = d2s.tanh(((d2s.sin(x) * 0.9) - (d2s.tanh(y) + (z * z))))
        else:
            k4 = d2s.tensor(0)
            while k4 < 1 and (x.sum() <= 1.03):
                k4 = k4 + 1
                z = d2s.tanh(x)
        if (x.min() > 1.45) or (x.mean() < 1.33):
            k5 = d2s.tensor(0)
            while k5 < 1 and ((z.max() <= -0.23) and (x.sum() <= 0.74)):
                k5 = k5 + 1
                y = d2s.tanh((d2s.abs(x) * d2s.abs((y - (y * 0.0 + 0.5)))))
                z = d2s.tanh(((d2s.sin(z) + (x + z)) * x))
            x = d2s.tanh(z)
        else:
            if (z.min() < 1.33) and (x.mean() >= 0.32):
                return d2s.sin(d2s.abs((x * 0.9)))
            z = d2s.tanh(x)
        if z.min() < 1.21:
            k6 = d2s.tensor(0)
            while k6 < 1 and (x.max() >= -0.46):
                k6 = k6 + 1
                x = d2s.tanh((z + (((z * 0.0 + 1.0) - z) * 0.9)))
                z = d2s.tanh(d2s.sin((((z * 0.0 + 0.5) - y) * (x * y))))
            x = d2s.tanh(d2s.sin(d2s.abs(d2s.abs(x))))
        else:
            k8 = d2s.tensor(0)
            while k8 < 4 and (z.min() <= -0.68):
                k8 = k8 + 1
                y = d2s.tanh(d2s.tanh(((y * 0.0 + -0.25) * 0.9)))
            if (x.min() < -1.1) or (y.mean() > -1.33):
                break
            z = d2s.tanh(d2s.sin(z))
    return x + y * 0.5 + z * 0.25
'''


def _count_ops(block):
    return sum(1 + sum(_count_ops(b) for b in op.blocks.values()) for op in block.ops)


def test_a_training_program_replays_loops_without_alias_flags(tmp_path, counted):
    fn = _load(tmp_path, SLOW_GRAD, "slow_grad")
    static = d2s.jit.to_static(fn)
    rng = np.random.default_rng(3)
    for trial in range(3):
        vals = [rng.normal(size=3).astype(np.float32) * 0.5 + 0.8 for _ in range(3)]
        got = [d2s.tensor(v, requires_grad=True) for v in vals]
        want = [d2s.tensor(v, requires_grad=True) for v in vals]
        n = d2s.tensor(trial)
        static(*got, n).sum().backward()
        fn(*want, n).sum().backward()
        for g, w in zip(got, want):
            assert (g.grad is None) == (w.grad is None)
            if w.grad is not None:
                np.testing.assert_allclose(g.grad.numpy(), w.grad.numpy(), rtol=1e-4, atol=1e-5)
    # the value build's own loops may carry a few flags; the gradient's replays carry none
    # (before: more than 20,000 calls in the first 40 s of the first training call)
    assert counted["_add_flag"] < 50
    program = static.concrete_programs[-1].raw_program
    assert _count_ops(program.block) < 1500  # (traces thrown away left a constant op per number)
