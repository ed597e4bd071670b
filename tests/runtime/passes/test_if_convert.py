"""passes/if_convert.py: which branches become a ``where``, and the converted program computes
what the branch did, for both predicate values."""
import numpy as np

import d2s
from d2s.static import build_program
from d2s_runtime import Executor
from d2s_runtime.passes.if_convert import if_convert


def _types(program):
    return [op.type for b in program.blocks for op in b.ops]


def _check_both_ways(fn, *arrays):
    prog = build_program(fn, *[d2s.tensor(a) for a in arrays])
    conv = if_convert(prog)
    assert "cond" in _types(prog) and "cond" not in _types(conv) and "where" in _types(conv)
    conv.verify()
    for sign in (1.0, -1.0):
        args = [a * sign for a in arrays]
        want = Executor(prog).run(*args)
        got = Executor(conv).run(*args)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and w.shape == g.shape
            np.testing.assert_array_equal(g, w)
    return conv


def test_a_cheap_pure_branch_becomes_a_where():
    def f(x, s):
        return d2s.cond(x.sum() > 0, lambda a, b: (b + a * 0.5, a.max()), lambda a, b: (b - a, a.min()), x, s)

    x = np.linspace(-1, 2, 6, dtype="float32").reshape(2, 3)
    _check_both_ways(f, x, np.ones((2, 3), "float32"))


def test_what_stays_a_branch():
    x = d2s.tensor(np.ones((2, 3), "float32"))
    w = d2s.tensor(np.ones((3, 3), "float32"))
    cases = [
        # a matrix product is not cheap
        (lambda a, b: d2s.cond(a.sum() > 0, lambda u, v: u @ v, lambda u, v: u + 1.0, a, b), (x, w)),
        # integer floor division may raise on the branch not taken
        (lambda a, b: d2s.cond(a.sum() > 0, lambda u: u // 2, lambda u: u * 2, (a * 3.0).int()), (x, w)),
        # a random draw is an effect
        (lambda a, b: d2s.cond(a.sum() > 0, lambda u: u + d2s.rand(2, 3), lambda u: u, a), (x, w)),
    ]
    for fn, args in cases:
        prog = build_program(fn, *args)
        assert if_convert(prog) is prog, fn


def test_a_program_without_branches_is_returned_as_it_is():
    prog = build_program(lambda a: a * 2.0, d2s.tensor(np.ones(3, "float32")))
    assert if_convert(prog) is prog
