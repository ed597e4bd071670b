"""LoopElse: a loop's `else` runs after the loop (no break) or under a `no_break` flag; the
converted function equals eager in Python loops and as a program over tensor loops."""
import pytest

import d2s
from convert_helpers import check, run_static, same_code, t, transformed
from d2s.static import InputSpec
from d2s.transformers import convert_function
from d2s.transformers.loop_else import LoopElse


def test_else_without_break_follows_the_loop():
    got = transformed("""
        def f(n):
            for i in range(n):
                n = n + 1
            else:
                n = n * 2
            return n
    """, LoopElse)
    same_code(got, """
        def f(n):
            for i in range(n):
                n = n + 1
            n = n * 2
            return n
    """)


def test_else_with_break_is_guarded_by_a_flag():
    got = transformed("""
        def f(x):
            while x < 10:
                if x > 5:
                    break
                x = x + 1
            else:
                x = 0
            return x
    """, LoopElse)
    same_code(got, """
        def f(x):
            no_break = True
            while x < 10:
                if x > 5:
                    no_break = False
                    break
                x = x + 1
            if no_break:
                x = 0
            return x
    """)


def test_break_of_an_inner_loop_does_not_clear_the_outer_flag():
    got = transformed("""
        def f(xs):
            for a in xs:
                for b in xs:
                    break
            else:
                a = 0
            return a
    """, LoopElse)
    assert "no_break" not in got  # the outer loop has no break of its own


# ------------------------------------------------------------------ equivalence with eager
def for_else_search(xs, limit):
    found = d2s.tensor(-1.0)
    for v in xs:
        if v > limit:
            found = v
            break
    else:
        found = d2s.tensor(0.0)
    return found


def while_else_break(x, n):
    i = 0
    while i < n:
        i += 1
        if x.sum() > 6.0:
            break
        x = x + 1.0
    else:
        x = x - 1.0
    return x


def return_in_else(x, n):
    for i in range(n):
        if x.sum() > 4.0:
            break
        x = x + 1.0
    else:
        return x * -1.0
    return x


def nested_else_with_continue(x, n):
    total = x * 0.0
    for i in range(n):
        for j in range(n):
            if (x * j).sum() > 3.0:
                break
            total = total + x
        else:
            total = total + 100.0
            continue
        total = total - 1.0
    return total


def return_in_loop_body_skips_else(x, n):
    for i in range(n):
        if x.sum() > 5.0:
            return x * 3.0
        x = x + 1.0
    else:
        x = x - 100.0
    return x


@pytest.mark.parametrize("xs, limit", [([1.0, 5.0, 2.0], 3.0), ([1.0, 2.0], 3.0), ([], 0.0)])
def test_for_else_over_a_tensor(xs, limit):
    check(for_else_search, (t(xs), t(limit)))


@pytest.mark.parametrize("fn", [while_else_break, return_in_else, nested_else_with_continue,
                                return_in_loop_body_skips_else])
@pytest.mark.parametrize("x, n", [([1.0, 2.0], 0), ([1.0, 2.0], 3), ([-5.0, -4.0], 4), ([3.0, 4.0], 2)])
def test_python_bounds(fn, x, n):
    check(fn, (t(x), n))


@pytest.mark.parametrize("fn", [while_else_break, return_in_else, nested_else_with_continue,
                                return_in_loop_body_skips_else])
@pytest.mark.parametrize("x, n", [([1.0, 2.0], 0), ([1.0, 2.0], 3), ([-5.0, -4.0], 4), ([3.0, 4.0], 2)])
def test_tensor_bounds(fn, x, n):
    # one program per function, run on every input: the trip count and break are data
    n_t = d2s.tensor(n)
    expected = fn(t(x), n_t).numpy()
    got = run_static(fn, t(x), n_t, specs=[InputSpec([2]), InputSpec([], n_t.dtype)])[0]
    assert got.shape == expected.shape
    assert (abs(got - expected) < 1e-5).all(), (got, expected)


def test_python_loop_else_runs_as_python():
    def f(xs):
        out = []
        for v in xs:
            if v == 3:
                break
            out.append(v)
        else:
            out.append("done")
        return out
    conv = convert_function(f).fn
    assert conv([1, 2]) == f([1, 2]) == [1, 2, "done"]
    assert conv([1, 3, 4]) == f([1, 3, 4]) == [1]
    assert conv([]) == f([]) == ["done"]


def test_break_inside_try_clears_the_flag():
    def f(xs):
        out = 0
        for v in xs:
            try:
                if v == 2:
                    break
                out += v
            finally:
                out += 100
        else:
            out -= 1000
        return out
    conv = convert_function(f).fn
    for xs in ([1, 2], [1, 3, 4], [], [2, 3], [5]):
        assert conv(xs) == f(xs), xs


def test_break_inside_match_clears_the_flag():
    got = transformed("""
        def f(xs):
            for v in xs:
                match v:
                    case 3:
                        break
            else:
                v = 0
            return v
    """, LoopElse)
    assert "no_break = False" in got and "if no_break:" in got
