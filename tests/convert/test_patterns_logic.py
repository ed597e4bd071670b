"""Converted vs eager: and/or/not, chained comparisons, lists in loops, builtins, Python side."""
import pytest

import d2s
from convert_helpers import check, t

X = t([1.0, 2.0, 3.0])


def n_(v):
    return d2s.tensor(v)


def none_short_circuit(x, a):
    if a is not None and a.sum() > 1:
        return x + a
    return x


def test_and_short_circuits_on_none():
    check(none_short_circuit, (X, None), (X, t([1.0, 1.0, 1.0])), (X, t([0.0, 0.0, 0.0])))


def or_tensors(x):
    if x[0] > 2 or x[1] > 1:
        return x * 2
    return x


def test_or_on_tensors():
    check(or_tensors, X, t([0.0, 0.0, 0.0]), t([3.0, 0.0, 0.0]))


def not_tensor(x):
    if not x.sum() > 3:
        return x - 1
    return x + 1


def test_not_on_tensor():
    check(not_tensor, X, t([0.0, 1.0, 1.0]))


def and_python_first(x, use):
    if use and x.sum() > 0:
        return x * 5
    return x


def test_and_mixing_python_and_tensor():
    check(and_python_first, (X, True), (X, False), (-X, True))


def chained(x):
    s = x.sum()
    if 0 < s < 10:
        return x
    return -x


def test_chained_comparison():
    check(chained, X, t([5.0, 5.0, 5.0]), t([-1.0, 0.0, 0.0]))


def list_append_loop(x, n):
    out = []
    i = 0
    while i < n:
        out.append(x * float(i))
        i += 1
    return d2s.stack(out), out[0]


def test_list_append_in_tensor_loop_then_stack_and_index():
    check(list_append_loop, (X, n_(3)), (X, n_(1)))


def list_append_for(m):
    rows = []
    for row in m:
        rows.append(row * 2)
    return d2s.concat(rows)


def test_list_append_in_for_over_rows_then_concat():
    check(list_append_for, t([[1.0, 2.0], [3.0, 4.0]]))


def list_pop_loop(x, n):
    out = [x, x + 1]
    i = 0
    while i < n:
        out.append(x * 3)
        i += 1
    last = out.pop()
    return last


def test_list_pop_after_tensor_loop():
    check(list_pop_loop, (X, n_(2)), (X, n_(1)))


def builtins_on_tensors(x):
    n = len(x)
    k = int(x.sum())
    f = float(x[0])
    b = bool(x[1] > 0)
    return n, k, f, b


def test_len_int_float_bool():
    check(builtins_on_tensors, X, t([-1.5, 2.5, 0.25]), static=False)


def casts_in_program(x):
    k = int(x.sum())
    f = float(k)
    return k, f, bool(x[1])


def test_int_float_bool_become_casts():
    check(casts_in_program, X, t([-1.5, 2.5, 0.25]))


def isinstance_and_print(x, y):
    print("x is", x)
    if isinstance(y, d2s.Tensor):
        return x + y
    return x * y


def test_isinstance_and_print(capsys):
    check(isinstance_and_print, (X, X), (X, 3.0))
    assert "x is" in capsys.readouterr().out


def asserting(x):
    assert x.ndim == 1, "need a vector"
    return x + 1


def test_assert_python_condition():
    check(asserting, X)
    from d2s.transformers import convert_function
    with pytest.raises(AssertionError, match="need a vector"):
        convert_function(asserting).fn(t([[1.0]]))


def helper_defined_after(x):
    return later_helper(x) * 2


def later_helper(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


def test_helper_defined_after_its_caller_is_converted():
    check(helper_defined_after, X, -X)


def recursive(x, depth):
    if depth == 0:
        return x
    if x.sum() > 0:
        x = x - 1
    return recursive(x, depth - 1)


def test_recursion_on_python_depth():
    check(recursive, (X, 3), (-X, 2))


def with_lambda(x):
    sq = lambda v: v * v  # noqa: E731
    return sq(x) + 1


def test_lambdas():
    check(with_lambda, X)


def make_closure(scale):
    def inner(x):
        if x.sum() > 0:
            return x * scale
        return x
    return inner


def test_closures():
    check(make_closure(3.0), X, -X)


def nested_def_called(x):
    def step(v):
        if v.sum() > 5:
            return v - 1
        return v + 1
    return step(step(x))


def test_nested_def_called_is_converted():
    check(nested_def_called, X, t([5.0, 5.0, 5.0]))


class Net(d2s.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = d2s.nn.Linear(3, 3)

    def forward(self, x, n):
        i = 0
        while i < n:
            x = self.lin(x)
            if self.training:
                x = x * 1.0
            i += 1
        return x


def test_submodule_called_in_loop():
    d2s.manual_seed(0)
    net = Net()
    from d2s.transformers import convert_function
    conv = convert_function(net.forward).fn
    for n in (0, 2):
        expected = net(X[None], n_(n)).numpy()
        import numpy as np
        np.testing.assert_allclose(conv(X[None], n_(n)).numpy(), expected, rtol=1e-5)
    from convert_helpers import run_static
    import numpy as np
    got = run_static(net.forward, X[None], n_(2))
    np.testing.assert_allclose(got[0], net(X[None], n_(2)).numpy(), rtol=1e-5)


def marked(x):
    return x


marked.__d2s_not_to_static__ = True


def test_convert_call_leaves_marked_library_and_builtin_functions_alone():
    import numpy as np
    from d2s.convert import convert_call, convert_len
    assert convert_call(marked) is marked
    assert convert_call(np.sum) is np.sum
    assert convert_call(d2s.relu) is d2s.relu
    assert convert_call(len) is convert_len
    converted = convert_call(later_helper)
    assert converted is not later_helper and convert_call(later_helper) is converted  # cached
