"""d2s/convert/builtins.py: ``max``/``min`` builtins in converted code make Python's choice:
the first of the largest (smallest) value, returned as it is. A tensor against a Python number
gives back the Python number when it wins (its exact value, of its type) and the tensor
otherwise, as eager code does; what a program cannot reproduce raises at the user's line.
Converted vs eager on inputs taking each side of every comparison."""
import math

import pytest

import d2s


def min_half(x):
    return min(x.sum(), 0.1)


def max_int(x):
    return max(x.sum(), 3)


def number_first(x):
    return min(0.1, x.sum())


def three(x):
    return max(x[0], 0.25, x[1])


def then_scaled(x):
    y = min(x.sum(), 0.1)
    return y * 3, y + x


def of_rows(x):
    return max(x), min(x)


def two_tensors(x):
    return max(x[0], x[1]) * 2.0


def vector(x):
    return max(x, 0.5)


def int_against_float(x):
    return min(x.sum(), 0.1)


def mixed_dtypes(x):
    return max(x.sum(), x.sum().to(d2s.float64))


def compared(x):
    y = min(x.sum(), 0.5)
    return y > 0.2, y == 0.5, -y, abs(y), [y, {"y": y}]


def running_max(x):
    best = 0
    for i in range(3):
        best = max(best, x[i])
    return best


XS = [d2s.tensor([1.0, 2.0]), d2s.tensor([0.01, 0.02]), d2s.tensor([0.05, 0.05]), d2s.tensor([0.3, -0.5]),
      d2s.tensor([float("nan"), 0.5]), d2s.tensor([0.5, float("nan")]), d2s.tensor([3.0, 0.0])]


def _same(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    if isinstance(want, dict):
        assert type(got) is dict and list(got) == list(want)
        for k in want:
            _same(got[k], want[k])
        return
    assert type(got) is type(want), (got, want)
    if isinstance(want, float):
        assert got == want or (math.isnan(got) and math.isnan(want)), (got, want)
    elif isinstance(want, d2s.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        a, b = got.numpy(), want.numpy()
        assert ((a == b) | ((a != a) & (b != b))).all(), (got, want)
    else:
        assert got == want, (got, want)


@pytest.mark.parametrize("fn", [min_half, max_int, number_first, three, then_scaled, of_rows, two_tensors, compared])
def test_converted_min_max_returns_what_eager_returns(fn):
    static = d2s.jit.to_static(fn)
    kinds = set()
    for x in XS:
        want = fn(x)
        _same(static(x), want)
        kinds.add(type(want[0] if isinstance(want, tuple) else want))
    assert static.programs
    if fn in (min_half, max_int, number_first, three, then_scaled, compared):
        assert len(kinds) == 2, kinds  # the inputs took both sides of the choice


def test_int_tensor_min_max():
    static = d2s.jit.to_static(max_int)
    for x in (d2s.tensor([1, 1]), d2s.tensor([5, 2]), d2s.tensor([2, 1])):
        _same(static(x), max_int(x))


@pytest.mark.parametrize("fn, x, match", [
    (vector, d2s.tensor([1.0, 2.0]), "ambiguous"),
    (int_against_float, d2s.tensor([1, 2]), "tensor of dtype int64 and a Python float"),
    (mixed_dtypes, d2s.tensor([1.0, 2.0]), "different dtypes"),
    (of_rows, d2s.ones(3, 2), "ambiguous"),
])
def test_what_a_program_cannot_choose_raises_at_the_users_line(fn, x, match):
    with pytest.raises((ValueError, TypeError), match=match) as e:
        d2s.jit.to_static(fn)(x)
    assert "test_builtins_min_max.py" in str(e.value)


def test_a_running_max_from_a_python_int():
    # best is a Python int until a tensor element beats it (never, for all-negative rows)
    static = d2s.jit.to_static(running_max)
    for x in (d2s.tensor([1, 5, 3]), d2s.tensor([-1, -2, -3]), d2s.tensor([0, 0, 2])):
        _same(static(x), running_max(x))
