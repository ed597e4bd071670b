"""dce: unused ops removed, effects kept, unused constants dropped."""
import numpy as np

import d2s
from d2s.static import build_program
from d2s_runtime.passes import dce

from _pass_helpers import assert_same_outputs, check_pure, op_types

X = d2s.tensor(np.zeros((20,), "float32"))


def test_unused_ops_are_removed():
    def f(x):
        d2s.exp(x) * 3.0  # never used
        return d2s.tanh(x)

    p = build_program(f, X)
    q = check_pure(dce, p)
    assert op_types(q) == ["tanh"]
    assert_same_outputs(p, q)


def test_effects_are_kept():
    p = build_program(lambda x: (d2s.rand(20), x + 1.0)[1], X)
    q = check_pure(dce, p)
    assert "rand" in op_types(q)


def test_unused_program_constants_are_dropped():
    c = np.arange(20, dtype="float32")
    p = build_program(lambda x: (x + c, x * 2.0)[1], X)
    assert p.constants
    q = check_pure(dce, p)
    assert not q.constants and op_types(q) == ["constant", "mul"]
    assert_same_outputs(p, q)


# ------------------------------------------------------------------ control-flow outputs nothing reads
from d2s.static import InputSpec  # noqa: E402
from d2s_runtime import Executor  # noqa: E402

N = InputSpec([], "int64")
V = InputSpec([4])


def _only(program, kind):
    ops = [op for op in program.block.ops if op.type == kind]
    assert len(ops) == 1
    return ops[0]


def _same_on(p, q, cases):
    for args in cases:
        for a, b in zip(Executor(q).run(*args), Executor(p).run(*args)):
            np.testing.assert_array_equal(a, b)


def _vec(seed):
    return np.random.default_rng(seed).standard_normal(4).astype("float32")


def test_a_while_keeps_the_carries_its_results_and_condition_need():
    # carries: i (condition), s (the result), t (feeds s), u (feeds only itself), flag (feeds only
    # itself, as a reach flag does): u and flag go, with the ops computing them
    def f(x, n):
        def body(i, s, t, u, flag):
            return i + 1, s + t * 0.5, t * 0.9 + x, d2s.exp(u * 0.01) * 2.0, flag | (u.sum() > 1.0)
        out = d2s.while_loop(lambda i, s, t, u, flag: i < n, body,
                             (d2s.tensor(0), x, x * 2.0, x + 1.0, d2s.tensor(False)))
        return out[1]

    p = build_program(f, V, N)
    q = check_pure(dce, p)
    before, after = _only(p, "while"), _only(q, "while")
    assert len(before.outputs) == 5 and len(after.outputs) == 3
    assert {"exp", "bitwise_or", "reduce_sum"}.isdisjoint(op.type for op in after.blocks["body"].ops)
    _same_on(p, q, [(_vec(s), np.array(n)) for s, n in ((0, 0), (1, 1), (2, 5))])


def test_a_carry_is_kept_when_a_kept_carry_reads_it_a_later_iteration():
    # r's new value reads u, u's reads w, w's reads r: all three are needed for r (a cycle
    # through the iterations); z is read by nothing and goes
    def f(x, n):
        def body(i, r, u, w, z):
            return i + 1, r + u, u * 0.5 + w, w * 0.25 + r * 0.1, z * 3.0
        return d2s.while_loop(lambda i, r, u, w, z: i < n, body, (d2s.tensor(0), x, x + 1.0, x + 2.0, x))[1]

    p = build_program(f, V, N)
    q = check_pure(dce, p)
    assert len(_only(q, "while").outputs) == 4
    _same_on(p, q, [(_vec(s), np.array(n)) for s, n in ((0, 0), (1, 1), (2, 4))])


def test_a_carry_only_the_condition_reads_stays():
    def f(x, n):
        def body(i, s, budget):
            return i + 1, s * 1.5, budget - s.sum()
        return d2s.while_loop(lambda i, s, budget: (i < n) & (budget > 0.0), body,
                              (d2s.tensor(0), x, d2s.tensor(10.0)))[1]

    p = build_program(f, V, N)
    q = check_pure(dce, p)
    assert len(_only(q, "while").outputs) == 3
    _same_on(p, q, [(np.abs(_vec(s)), np.array(n)) for s, n in ((0, 0), (1, 2), (2, 9))])


def test_a_cond_computes_only_the_outputs_read():
    def f(x, flag):
        a, b, c = d2s.cond(flag, lambda: (x * 2.0, d2s.exp(x), x.sum()), lambda: (x - 1.0, d2s.sin(x), x.max()))
        return a + c

    p = build_program(f, V, InputSpec([], "bool"))
    q = check_pure(dce, p)
    op = _only(q, "cond")
    assert len(op.outputs) == 2 and all(len(b.outputs) == 2 for b in op.blocks.values())
    assert {"exp", "sin"}.isdisjoint(o.type for b in op.blocks.values() for o in b.ops)
    _same_on(p, q, [(_vec(s), np.array(flag)) for s, flag in ((0, True), (1, False))])


def test_a_scan_drops_ys_and_carries_nothing_reads():
    # carries c (result) and k (feeds only itself); ys: cumulative values (read) and exps (not)
    def f(x, xs):
        def step(carry, xt):
            c, k = carry
            c = c * 0.5 + xt
            return (c, k * 2.0 + 1.0), (c * 1.0, d2s.exp(xt))
        (c, _), (cs, _) = d2s.scan(step, (x, x * 0.0), xs)
        return c, cs

    p = build_program(f, V, InputSpec([None, 4]))
    q = check_pure(dce, p)
    op = _only(q, "scan")
    assert op.attrs["n_carry"] == 1 and len(op.outputs) == 2
    assert "exp" not in [o.type for o in op.blocks["body"].ops]
    _same_on(p, q, [(_vec(s), np.random.default_rng(s).standard_normal((t, 4)).astype("float32"))
                    for s, t in ((0, 3), (1, 1))])


def test_a_loop_with_an_effect_keeps_what_the_effect_reads():
    def f(x, n):
        def body(i, s, noise):
            return i + 1, s + 1.0, noise + d2s.rand(4)   # a draw: an effect
        return d2s.while_loop(lambda i, s, noise: i < n, body, (d2s.tensor(0), x, x * 0.0))[1]

    p = build_program(f, V, N)
    q = check_pure(dce, p)
    assert "rand" in [o.type for o in _only(q, "while").blocks["body"].ops]
