"""to_static vs eager, values and gradients: Python-side constructs around tensor code
(helpers, recursion, closures, mode strings, raise, print/assert/len/casts, isinstance)."""
import numpy as np
import pytest

import d2s

from jit_helpers import check

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")



def _x(*vals):
    return d2s.tensor([float(v) for v in vals])


def caller(x):
    return helper_defined_later(x) * 2.0


def helper_defined_later(x):
    if x.sum() > 0:
        return x.exp()
    return x.sin()


def test_helper_defined_after_its_caller_is_converted_too():
    for v in (_x(1, 2), _x(-1, -2)):
        check(caller, v)


def recurse(x, depth):
    if depth == 0:
        return x
    if x.mean() > 0:
        x = x * 0.5
    else:
        x = x + 1.0
    return recurse(x, depth - 1)


def test_recursion_on_a_python_depth_argument():
    for v in (_x(4, 4), _x(-3, -1)):
        for depth in (0, 3):
            check(recurse, v, depth)


def make_closure(scale):
    offset = d2s.tensor([0.5, -0.5])

    def inner(x):
        y = x * scale
        if y.sum() > offset.sum():
            y = y + offset
        return y

    return inner


def test_closures_over_python_values_and_tensors():
    fn = make_closure(3.0)
    for v in (_x(1, 1), _x(-1, -1)):
        check(fn, v)


def mode_dispatch(x, mode="relu"):
    if mode == "relu":
        return x.relu()
    elif mode == "tanh":
        return x.tanh()
    elif mode == "gate":
        return x * (x.sum() > 0).cast("float32")
    raise ValueError(f"unknown mode {mode!r}")


def test_mode_strings_dispatched_with_if_elif_and_raise():
    for mode in ("relu", "tanh", "gate"):
        for v in (_x(1, -2), _x(-1, -2)):
            check(mode_dispatch, v, mode)
    with pytest.raises(ValueError, match="unknown mode"):
        d2s.jit.to_static(mode_dispatch)(_x(1), "nope")


def builtins_on_tensors(x):
    assert x.ndim == 1, "a vector please"
    n = len(x)
    k = int(x.shape[0])
    if isinstance(x, d2s.Tensor) and n > 1:
        x = x * float(k)
    m = x.max()
    if bool(m > 2.0):
        x = x - float(m)
    return x / n


def test_len_int_float_bool_isinstance_and_assert():
    for v in (_x(1, 2, 3), _x(0.1, 0.2), _x(0.5)):
        check(builtins_on_tensors, v)


def with_print(x):
    y = x * 2.0
    print("y is", y)
    if y.sum() > 1:
        y = y - 1.0
    return y


def test_print_inside_converted_code(capsys):
    for v in (_x(1, 1), _x(-1, 0)):
        check(with_print, v)
    assert "y is" in capsys.readouterr().out


def uses_lambda_and_map(x):
    fns = [lambda t: t * 2.0, lambda t: t.exp()]
    outs = [f(x) for f in fns]
    total = outs[0]
    for o in outs[1:]:
        total = total + o
    return total if total.sum() > 0 else -total


def test_lambdas_and_comprehensions():
    for v in (_x(1, 2), _x(-5, -6)):
        check(uses_lambda_and_map, v)


def item_as_a_number(x):
    k = x.sum().item()
    if k > 0:
        return x * k
    return x - k


def test_item_on_a_symbolic_tensor_is_a_0d_tensor_without_gradient():
    for v in ([1.0, 2.0], [-1.0, -3.0]):
        check(item_as_a_number, d2s.tensor(v))


def test_creation_with_dynamic_sizes_matches_eager():
    """zeros/ones/full/arange sized by a dynamic dim (InputSpec None) read it when the program runs."""
    from d2s.jit import InputSpec

    def f(x):
        z = d2s.zeros([x.shape[0], 2]) + d2s.ones(x.shape[0], 1)
        i = d2s.arange(x.shape[0])
        return (z * x.sum()).sum() + (i * 2).sum(), i

    sf = d2s.jit.to_static(f, input_spec=[InputSpec([None, 3])])
    for n in (1, 2, 5):
        x = d2s.randn(n, 3)
        got, want = sf(x), f(x)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)
    assert len(sf.programs) == 1
