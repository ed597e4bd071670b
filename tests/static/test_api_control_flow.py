"""The public contract of API.md §4 (functional control flow): d2s.cond, d2s.while_loop and
d2s.scan, eagerly (with gradients) and inside programs."""
import numpy as np
import pytest

import d2s

from api_helpers import X, close


def functional_cond(x):
    return d2s.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)


def functional_while(x):
    i, s = d2s.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2.0), (d2s.tensor(0), x))
    return s


def functional_scan(xs):
    return d2s.scan(lambda c, e: (c + e, c * e), d2s.zeros_like(xs[0]), xs)


class TestFunctionalControlFlow:
    def test_cond(self):
        x = d2s.tensor(X)
        close(d2s.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x), X * 2)
        close(d2s.cond(x.sum() < 0, lambda v: v * 2.0, lambda v: v - 1.0, x), X - 1)
        close(d2s.cond(d2s.tensor(True), lambda: d2s.tensor(1.0), lambda: d2s.tensor(2.0)), 1.0)
        v = d2s.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
        d2s.cond(v.sum() > 0, lambda a: a * a, lambda a: a, v).sum().backward()
        close(v.grad, [2.0, 4.0])

    def test_while_loop(self):
        i, s = d2s.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (d2s.tensor(0), d2s.tensor(0)))
        assert i.item() == 5 and s.item() == 10
        v = d2s.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
        _, s = d2s.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * s), (d2s.tensor(0), v))
        s.sum().backward()
        close(v.grad, 8 * np.array([1.0, 2.0]) ** 7)

    def test_scan(self):
        carry, ys = d2s.scan(lambda c, e: (c + e, c * e), d2s.tensor(0.0), d2s.tensor([1.0, 2.0, 3.0]))
        close(carry, 6.0)
        close(ys, [0.0, 2.0, 9.0])

    @pytest.mark.parametrize("fn, op", [(functional_cond, "cond"), (functional_while, "while"),
                                        (functional_scan, "scan")])
    def test_inside_programs(self, fn, op):
        x = d2s.tensor(X)
        prog = d2s.static.build_program(fn, x)
        assert op in [o.type for o in prog.global_block().ops]
        want = fn(x)
        got = d2s.jit.to_static(fn)(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            close(g, w.numpy())
