"""Converting a long function with early returns nested in tensor loops (the one
benchmarks/bench_to_static.py times): the result equals eager on inputs that leave through
different returns, and converting it no longer retraces nested `if`s exponentially."""
import importlib.util
import os
import sys

import numpy as np
import pytest

import d2s
import d2s.convert.control_flow as cf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_to_static_src",
                                                  os.path.join(ROOT, "benchmarks", "bench_to_static.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _function(tmp_path, blocks):
    path = tmp_path / f"many_returns_{blocks}.py"
    path.write_text(_bench().many_returns_source(blocks))
    spec = importlib.util.spec_from_file_location(f"many_returns_{blocks}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.many_returns


def _leaves_equal(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = g.numpy() if isinstance(g, d2s.Tensor) else np.asarray(g)
        e = e.numpy() if isinstance(e, d2s.Tensor) else np.asarray(e)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_long_function_with_nested_early_returns_equals_eager(tmp_path):
    fn = _function(tmp_path, 8)
    converted = d2s.jit.to_static(fn)
    cases = [([0.5, 1.0, -0.3], 3), ([0.5, 1.0, -0.3], 0), ([20.0, 20.0, 20.0], 2),   # first return
             ([-30.0, -30.0, -30.0], 1), ([-70.0, -70.0, -70.0], 0), ([2.0, -1.0, 0.0], 5)]
    for x, n in cases:
        args = (d2s.tensor(np.float32(x)), d2s.tensor(np.int64(n)))
        _leaves_equal(converted(*args), fn(*args))


def test_nested_ifs_are_traced_once(tmp_path, monkeypatch):
    """Tensor `if`s where a Python number on one side meets a tensor on the other: the true
    branch's traced block gets the tensor added instead of both branches being traced again
    (which retraced every nested `if`: doubling per level). Each `if` is traced once."""
    calls = [0]
    real = cf._static_if

    def counting(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(cf, "_static_if", counting)
    fn = _function(tmp_path, 4)
    x, n = d2s.tensor([0.5, 1.0, -0.3]), d2s.tensor(3)
    _leaves_equal(d2s.jit.to_static(fn)(x, n), fn(x, n))
    blocks4 = calls[0]
    calls[0] = 0
    fn8 = _function(tmp_path, 8)
    _leaves_equal(d2s.jit.to_static(fn8)(x, n), fn8(x, n))
    # twice the code, twice the traced ifs (2**depth growth gave far more than 16x)
    assert calls[0] <= 2 * blocks4 + 2, (blocks4, calls[0])


def _one_sided_chain(tmp_path, depth):
    """Nested tensor `if`s, each binding its own variable on one side only (read after all of
    them): every level must retrace its branches once to carry a "bound" flag."""
    lines, indent = ["def chain(x):"], "    "
    for level in range(depth):
        lines += [f"{indent}if x.sum() > {level}:", f"{indent}    a{level} = x * {level + 1}", f"{indent}else:"]
        indent += "    "
    lines += [f"{indent}pass", "    return x + " + " + ".join(f"a{level}" for level in range(depth))]
    path = tmp_path / f"one_sided_chain_{depth}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"one_sided_chain_{depth}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.chain


def test_retraced_ifs_replay_their_nested_ifs_decisions(tmp_path, monkeypatch):
    """A retrace of an `if` replays the decisions its nested `if`s reached (convert/replay.py):
    the traced `if`s grow with the square of the depth, not as 2**depth (127 at depth 7)."""
    calls = [0]
    real = cf._static_if

    def counting(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(cf, "_static_if", counting)
    fn = _one_sided_chain(tmp_path, 7)
    converted = d2s.jit.to_static(fn)
    for x in ([1.0, 2.0], [-1.0, -2.0], [10.0, 10.0]):
        x = d2s.tensor(x)
        with pytest.raises(UnboundLocalError):
            fn(x)
        with pytest.raises(UnboundLocalError):
            converted(x)
    assert calls[0] <= 7 * 8 // 2, calls[0]
