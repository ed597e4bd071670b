"""to_static vs eager, values and gradients: while/for loops, break/continue, tensor lists.

Every loop is also run with zero iterations."""
import pytest

import d2s

from jit_helpers import check

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")

# a representative part runs on the python and the native backend (tests/backend_fixture.py):
# tensor while/for with zero trips, break/continue, nesting, early return, a tensor list
on_both_backends = pytest.mark.usefixtures("backend")


def _x(*vals):
    return d2s.tensor([float(v) for v in vals])


def while_tensor_cond(x):
    while x.sum() < 10.0:
        x = x * 1.5 + 0.5
    return x


@on_both_backends
def test_while_on_tensor_condition_including_zero_trips():
    for v in (_x(1, 1), _x(4, 4), _x(20, 1)):
        check(while_tensor_cond, v)


def while_python_cond(x, n):
    i = 0
    while i < n:  # Python counter: unrolled
        x = x.sin() + x
        i += 1
    return x


def test_while_on_python_condition_unrolls():
    for n in (0, 1, 4):
        sf = check(while_python_cond, _x(0.3, -0.2), n)
    assert all(op.type != "while" for op in sf.programs[0].block.ops)


def mixed_condition(x, limit):
    i = 0
    while i < limit and not (x.max() > 8.0):
        x = x * 2.0
        i = i + 1
    return x + float(i)


def test_while_condition_mixing_python_and_tensor():
    for v in (_x(1, 0.5), _x(9, 1)):
        for lim in (0, 2, 10):
            check(mixed_condition, v, lim)


def nested_tensor_bounds(x, n, m):
    total = x * 0.0
    i = d2s.tensor(0)
    while i < n:
        j = d2s.tensor(0)
        while j < m:
            total = total + x * (i + j).cast("float32")
            j = j + 1
        i = i + 1
    return total


@on_both_backends
def test_nested_loops_with_tensor_bounds():
    for n, m in ((0, 2), (2, 0), (2, 3)):
        check(nested_tensor_bounds, _x(1, 2), d2s.tensor(n), d2s.tensor(m))


def created_in_loop(x, n):
    last = x
    k = 0
    for k in range(n):
        y = x * float(k + 1)
        last = y + last
    return last * float(k)


def test_variables_created_in_loop_and_loop_var_after():
    for n in (1, 3):
        check(created_in_loop, _x(1, -1), d2s.tensor(n))
        check(created_in_loop, _x(1, -1), n)


def range_tensor(x, n):
    acc = x
    for i in range(n):
        acc = acc * 0.5 + x
    return acc


@on_both_backends
def test_for_range_of_tensor_including_zero():
    for n in (0, 1, 5):
        check(range_tensor, _x(2, -3), d2s.tensor(n))


def range_start_stop_step(x, start, stop):
    acc = x * 0.0
    for i in range(stop, start, -2):
        acc = acc + x * float(i)
    for j in range(start, stop):
        acc = acc - x
    return acc


def test_for_range_with_start_stop_negative_step():
    for a, b in ((0, 5), (2, 3), (4, 1)):
        check(range_start_stop_step, _x(1, 2), d2s.tensor(a), d2s.tensor(b))


def over_rows(m):
    acc = d2s.zeros(m.shape[1])
    for row in m:
        acc = acc * 0.9 + row.tanh()
    return acc


def test_for_over_tensor_rows():
    d2s.manual_seed(0)
    for n in (1, 4):
        check(over_rows, d2s.randn(n, 3))


def enumerate_zip(a, b):
    acc = a[0] * 0.0
    for i, (u, v) in enumerate(zip(a, b)):
        acc = acc + u * v * float(i + 1)
    for i, u in enumerate(a, 2):
        acc = acc + u * float(i)
    return acc


def test_enumerate_with_start_and_zip_of_tensors():
    d2s.manual_seed(1)
    check(enumerate_zip, d2s.randn(3, 2), d2s.randn(3, 2))


def over_python_containers(x, scales, named):
    for s in scales:
        x = x * s
    for k, v in named.items():
        if k == "shift":
            x = x + v
        else:
            x = x * v
    return x


def test_for_over_python_lists_and_dict_items_unrolls():
    check(over_python_containers, _x(1, 2), [0.5, 2.0, 3.0], {"shift": 1.0, "scale": 2.0})
    check(over_python_containers, _x(1, 2), [], {})


def static_shape_range(x):
    out = x[0] * 0.0
    for i in range(x.shape[0]):  # static shape: Python loop
        out = out + x[i] * i
    return out


def test_range_of_static_shape_is_a_python_loop():
    d2s.manual_seed(2)
    check(static_shape_range, d2s.randn(4, 2))


def break_in_while(x):
    i = 0
    while i < 10:
        x = x * 1.3
        if x.sum() > 5.0:
            break
        i += 1
    return x


@on_both_backends
def test_break_in_while_under_tensor_condition():
    for v in (_x(10, 1), _x(1, 1), _x(0.01, 0.01)):
        check(break_in_while, v)


def continue_in_for(x, n):
    acc = x * 0.0
    for i in range(n):
        if (x * float(i)).sum() > 3.0:
            continue
        acc = acc + x * float(i)
    return acc


@on_both_backends
def test_continue_in_for_under_tensor_condition():
    for n in (0, 2, 6):
        check(continue_in_for, _x(0.5, 0.5), d2s.tensor(n))


def break_continue_both_branches(x, n):
    acc = x * 0.0
    i = d2s.tensor(0)
    while i < n:
        i = i + 1
        if (acc.sum() + i.cast("float32")) > 4.0:
            acc = acc + x
            break
        else:
            acc = acc - x * 0.5
            continue
        acc = acc * 100.0  # dead code
    return acc


def test_break_and_continue_in_both_branches_with_dead_code():
    for n in (0, 3, 10):
        check(break_continue_both_branches, _x(1, 2), d2s.tensor(n))


def nested_break(x, n):
    acc = x * 0.0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            acc = acc + x * float(i * j + 1)
        if acc.sum() > 20.0:
            break
    return acc


def test_break_in_nested_loops():
    for n in (0, 2, 5):
        check(nested_break, _x(1, 0.5), d2s.tensor(n))


def return_in_loop(x, n):
    for i in range(n):
        x = x * 2.0
        if x.sum() > 10.0:
            return x - 1.0
    return x + 1.0


@on_both_backends
def test_return_under_tensor_if_inside_a_loop():
    for v in (_x(4, 4), _x(0.1, 0.1)):
        for n in (0, 2, 6):
            check(return_in_loop, v, d2s.tensor(n))


def list_append_loop(x, n):
    outs = []
    h = x
    for i in range(n):
        h = h.tanh() + 0.5
        outs.append(h)
    return d2s.stack(outs), outs[-1]


@on_both_backends
def test_list_append_in_tensor_loop_then_stack():
    for n in (1, 3):
        check(list_append_loop, _x(0.1, -0.4), d2s.tensor(n))


def python_counter_around_tensor_if(x):
    for i in range(20):  # one while op holding one cond (a long range loop: issue 29)
        if x.sum() > 0:
            x = x - 0.3
        else:
            x = x + 0.2
    return x


def test_python_counter_loop_around_tensor_if():
    for v in (_x(1, 1), _x(-1, -1)):
        sf = check(python_counter_around_tensor_if, v)
    prog = sf.programs[0]
    assert [op.type for op in prog.block.ops].count("while") == 1
    assert sum(op.type == "cond" for b in prog.blocks for op in b.ops) == 1
    d2s.jit.config.unroll_threshold, limit = None, d2s.jit.config.unroll_threshold
    try:  # unrolled: 20 cond ops
        sf = check(python_counter_around_tensor_if, _x(1, 1))
    finally:
        d2s.jit.config.unroll_threshold = limit
    assert sum(op.type == "cond" for op in sf.programs[0].block.ops) == 20


def break_in_unrolled_python_for(x):
    # beyond AutoGraph/Paddle: a tensor-dependent break in an unrolled Python loop
    for s in [1.0, 2.0, 3.0, 4.0]:
        x = x * s
        if x.sum() > 10.0:
            break
    return x


def test_tensor_break_inside_unrolled_python_for():
    for v in (_x(0.01, 0.01), _x(1, 1), _x(3, 3), _x(20, 20)):
        check(break_in_unrolled_python_for, v)


def growing_carry(x, n):
    # beyond: the loop-carried value's shape changes every iteration (dims widen)
    acc = x
    i = d2s.tensor(0)
    while i < n:
        acc = d2s.concat([acc, x * i.cast("float32")])
        i = i + 1
    return acc.sum(), acc


def test_loop_carried_shape_that_changes():
    for n in (0, 1, 3):
        check(growing_carry, _x(1, 2), d2s.tensor(n))


def none_then_tensor_for(x, n):
    # a variable that starts as None and becomes a tensor in the first iteration of a tensor loop
    h = None
    for i in range(n):
        h = x if h is None else h * 0.5 + x * i
    return h


def none_then_growing_while(x, n):
    out = None
    i = 0
    while i < n:
        step = x * (i + 1.0)
        out = step if out is None else d2s.concat([out, step])
        i += 1
    return out


def test_variable_initialized_to_none_before_a_tensor_loop():
    # the first iteration is peeled under a cond, where `h is None` still holds
    for n in (1, 2, 4):
        check(none_then_tensor_for, _x(1, -2), d2s.tensor(n))
        check(none_then_growing_while, _x(1, -2), d2s.tensor(n))
    sf = d2s.jit.to_static(none_then_tensor_for)
    assert none_then_tensor_for(_x(1, -2), d2s.tensor(0)) is None
    assert sf(_x(1, -2), d2s.tensor(0)) is None  # zero trips: None, as Python leaves it
    assert sf(_x(1, -2), d2s.tensor(2)).numpy().tolist() == none_then_tensor_for(_x(1, -2), d2s.tensor(2)).numpy().tolist()
    assert len(sf.programs) == 1


def fixed_list_carried(x, n):
    hs = [x, x * 2.0]
    for i in range(n):
        hs[0] = hs[0] + hs[1]
        hs[1] = hs[1] * 0.5
    return hs, hs[0] * hs[1]


def test_list_of_fixed_length_carried_by_a_tensor_loop_takes_item_assignment():
    for n in (0, 1, 3):
        check(fixed_list_carried, _x(1, -2), d2s.tensor(n))
