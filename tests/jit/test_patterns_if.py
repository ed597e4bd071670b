"""to_static vs eager, values and gradients: if/elif/else, returns, logical operators.

Every test runs on inputs that take each branch."""
import pytest

import d2s

from jit_helpers import check

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py), and
# on the python and the native backend (tests/backend_fixture.py; native on "cpu" only)
pytestmark = pytest.mark.usefixtures("device", "backend")


def _x(*vals):
    return d2s.tensor([float(v) for v in vals])


def if_elif_else(x):
    s = x.sum()
    if s > 2.0:
        y = x * 3.0
    elif s > 0.0:
        y = x.exp()
    else:
        y = -x * x
    return y


def test_if_elif_else():
    for v in (_x(2, 1), _x(0.5, 0.1), _x(-1, -2)):
        check(if_elif_else, v)


def nested_three_deep(x, y):
    if x.sum() > 0:
        if y.sum() > 0:
            if (x * y).sum() > 1:
                z = x * y
            else:
                z = x + y
        else:
            z = x - y
    else:
        z = y * 2.0
    return z.tanh()


def test_nested_three_deep():
    for a, b in ((_x(1, 2), _x(1, 1)), (_x(0.1, 0.1), _x(0.2, 0.1)), (_x(1, 1), _x(-1, -1)), (_x(-3, 1), _x(1, 1))):
        check(nested_three_deep, a, b)


def if_on_bool_tensor(x, flag):
    if flag:
        x = x * 2.0
    return x + 1.0


def test_if_on_0d_bool_tensor_without_else():
    for f in (True, False):
        check(if_on_bool_tensor, _x(1, -2), d2s.tensor(f))


def one_branch_temporary(x):
    if x.mean() > 0:
        tmp = x * 2.0  # branch-local, unused after
        x = tmp + 1.0
    return x * x


def test_branch_local_temporary():
    for v in (_x(1, 2), _x(-1, -2)):
        check(one_branch_temporary, v)


def nested_only_assign(x):
    y = x
    if x.sum() > 0:
        if x.max() > 2:
            y = x * 5.0
    return y.sin()


def test_variable_assigned_only_in_nested_branch():
    for v in (_x(3, 1), _x(1, 1), _x(-2, -1)):
        check(nested_only_assign, v)


def successive_ifs(x):
    if x[0] > 0:
        x = x * 2.0
    if x[1] > 0:
        x = x - 1.0
    if x.sum() > 3:
        x = x.sqrt()
    return x


def test_successive_ifs():
    for v in (_x(1, 1), _x(-1, 1), _x(1, -1), _x(4, 4), _x(-1, -1)):
        check(successive_ifs, v)


def ternaries(x):
    a = x * 2.0 if x.sum() > 0 else x * -3.0
    g = (lambda t: t.exp() if t.mean() > 0.5 else t.cos())
    return a + g(x)


def test_ternaries_also_in_lambdas():
    for v in (_x(1, 1), _x(0.2, 0.3), _x(-1, -1)):
        check(ternaries, v)


def if_elif_returns(x):
    if x.sum() > 1:
        return x * 2.0, x.sum()
    elif x.sum() > -1:
        y = x + 1.0
        return y * y, y.sum()
    y = x.abs()
    return y, y.mean()


def test_early_return_tuples_in_if_elif_chain():
    for v in (_x(2, 1), _x(0, 0.5), _x(-3, -1)):
        check(if_elif_returns, v)


class Box:
    pass


def targets_in_branches(x):
    d = {"a": x}
    box = Box()
    box.v = x
    arr = [x, x]
    if x.sum() > 0:
        d["a"] = x * 2.0
        box.v = x + 3.0
        arr[1] = x.exp()
    else:
        d["a"] = x * -1.0
        box.v = x - 3.0
        arr[1] = x.sin()
    return d["a"] + box.v + arr[1]


def test_dict_attribute_subscript_targets_in_branches():
    for v in (_x(1, 2), _x(-1, -2)):
        check(targets_in_branches, v)


def short_circuit(x, a=None):
    if a is not None and a.sum() > 1:
        x = x + a
    if x.sum() > 0 or x.max() > 5:
        x = x * 2.0
    if not (x.min() > -1):
        x = x.abs()
    return x


def test_and_or_not_with_short_circuit_on_none():
    for v in (_x(1, 2), _x(-3, 1), _x(-5, -4)):
        check(short_circuit, v)
        check(short_circuit, v, _x(1, 1))
        check(short_circuit, v, _x(0.1, 0.1))


def chained_comparison(x):
    s = x.sum()
    if 0 < s < 10:
        return x * s
    return x - s


def test_chained_comparison():
    for v in (_x(1, 2), _x(10, 5), _x(-1, -2)):
        check(chained_comparison, v)


def logical_tensor_values(x):
    pos = x.sum() > 0
    big = x.abs().max() > 1
    both = pos and big  # on 0-d bool tensors, the value of eager `and` / `or`
    either = pos or big
    return d2s.where(both, x, 0.0) + d2s.where(either, x * 2.0, 0.0)


def test_logical_operators_on_tensors_as_values():
    for v in (_x(2, 0.5), _x(0.5, 0.2), _x(-3, 0.5), _x(-0.1, -0.2)):
        check(logical_tensor_values, v)


def shape_condition(x):
    if x.shape[0] > 2:  # static shape: plain Python; dynamic: a tensor cond
        return x[:2] * 2.0
    return x * 3.0


def test_shape_in_condition_static_and_dynamic():
    from d2s.jit import InputSpec, to_static
    for v in (_x(1, 2, 3), _x(1, 2)):
        check(shape_condition, v)
    sf = to_static(shape_condition, input_spec=[InputSpec([None])])
    import numpy as np
    for v in (_x(1, 2), _x(1, 2, 3, 4)):
        np.testing.assert_allclose(sf(v).numpy(), shape_condition(v).numpy())


def int_pred_branches(x, k):
    # an integer tensor predicate and a Python predicate mixed
    if k > 2 and x.sum() > 0:
        out = x ** 2
    else:
        out = x * float(2)
    return out


def test_int_tensor_predicate_mixed_with_python():
    for k in (0, 3):
        for v in (_x(1, 1), _x(-1, -1)):
            check(int_pred_branches, v, d2s.tensor(k))
