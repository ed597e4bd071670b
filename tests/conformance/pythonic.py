"""Everyday Python around tensor code: try/except/finally, with, walrus, match, assert,
generators, *args/**kwargs, raising, builtins, del, attribute updates."""
import contextlib

import d2s

from .harness import T, case

POS, NEG, MIX = T([1.0, 2.0, 3.0]), T([-1.0, -2.0, -0.5]), T([-2.0, 0.5, 1.0])
N0, N2, N3 = T(0), T(2), T(3)


@case(POS, NEG, MIX)
def try_except_around_tensor_if(x):
    try:
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = x - 1.0
    except ValueError:
        y = x
    return y


@case((POS, "a"), (POS, 3))
def try_except_python_error(x, key):
    table = {"a": 2.0}
    try:
        k = table[key]
    except KeyError:
        k = -1.0
    return x * k


@case(POS, NEG, MIX)
def try_finally_counts(x):
    steps = []
    try:
        if x.mean() > 0:
            x = x + 1.0
        steps.append("body")
    finally:
        steps.append("finally")
    return x, steps


@case(POS, NEG, MIX)
def with_no_grad_tensor_if(x):
    with d2s.no_grad():
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = -x
    return y


@contextlib.contextmanager
def recording(log):
    log.append("enter")
    yield log
    log.append("exit")


@case(POS, NEG)
def with_custom_context_manager(x):
    log = []
    with recording(log):
        if x.sum() > 0:
            x = x * 3.0
    return x, log


@case(POS, NEG, MIX)
def walrus_in_condition(x):
    if (s := x.sum()) > 0:
        return x / s
    return x * 0.0 + s


@case((POS, N3), (POS, N0))
def walrus_in_while(x, n):
    i = 0
    while (i := i + 1) <= n:
        x = x * 1.5
    return x


@case((POS, "double"), (POS, "neg"), (MIX, "keep"), (NEG, ("scale", 4.0)))
def match_on_python_command(x, cmd):
    match cmd:
        case "double":
            return x * 2.0
        case "neg":
            return -x
        case ("scale", k):
            return x * k
        case _:
            return x


@case((POS, [1]), (POS, [1, 2]), (MIX, []))
def match_sequence_pattern(x, shape):
    match shape:
        case []:
            return x.sum()
        case [a]:
            return x * a
        case [a, b]:
            return x * a + b
    return None


@case(POS, MIX)
def assert_on_tensor_passes(x):
    assert x.shape[0] == 3, "needs three values"
    if x.max() > 0:
        x = x + 1.0
    return x


@case(POS, NEG)
def assert_python_fails(x):
    assert x.ndim == 2, "needs a matrix"
    return x


@case(POS, NEG, MIX)
def raise_in_python_branch_only(x):
    if x.ndim != 1:
        raise ValueError("expects a vector")
    if x.sum() > 0:
        return x
    return -x


def gen_scaled(x, n):
    for i in range(n):
        yield x * i


@case((POS, 3), (POS, 0))
def consumes_generator(x, n):
    total = x * 0.0
    for v in gen_scaled(x, n):
        total = total + v
    return total


@case((POS, 3), (MIX, 2))
def generator_inside_function(x, n):
    def pieces():
        for i in range(n):
            if i % 2 == 0:
                yield x + i
    return list(pieces())


@case((POS,), (POS, 2.0, 3.0), (MIX, 1.0))
def star_args(x, *scales):
    for s in scales:
        x = x * s
    if x.sum() > 0:
        x = x + len(scales)
    return x


def _apply(x, **opts):
    if opts.get("negate", False):
        x = -x
    return x * opts.get("scale", 1.0)


@case(POS, NEG)
def kwargs_passthrough(x):
    opts = {"scale": 2.0}
    if x.sum() > 0:
        return _apply(x, negate=True, **opts)
    return _apply(x, **opts)


@case(POS, NEG, MIX)
def builtins_min_max_abs(x):
    a = max(x[0], x[1])
    b = min(x[1], x[2])
    return abs(a - b), round(3.14159, 2)


@case(POS, NEG, MIX)
def float_of_tensor_in_python(x):
    v = float(x.sum())
    if v > 0:
        return v * 2
    return v


@case(POS, NEG)
def fstring_with_python_values(x):
    name = f"layer{x.ndim}_{len(x)}"
    return name, x


@case(POS, NEG, MIX)
def del_temporary(x):
    tmp = x * 2.0
    y = tmp + 1.0
    del tmp
    if y.sum() > 0:
        y = y * 0.5
    return y


@case(POS, NEG, MIX)
def attribute_update_on_simple_object(x):
    class State:
        pass

    st = State()
    st.value = x
    st.steps = 0
    if st.value.sum() > 0:
        st.value = st.value * 2.0
        st.steps = 1
    return st.value, st.steps


@case(POS, NEG, MIX)
def print_does_not_change_result(x):
    if x.sum() > 0:
        print("positive", x.shape)
    return x + 1.0


@case(POS, NEG, MIX)
def chained_method_calls(x):
    y = x.abs().sqrt().clip(0.5, 1.5)
    if y.mean() > 1.0:
        y = y.exp().log()
    return y


@case(POS, NEG, MIX)
def raise_in_tensor_branch(x):
    if x.sum() < -3.0:
        raise ValueError("sum too small")
    return x * 2.0


@case(POS, NEG)
def assert_on_tensor_value(x):
    assert x.sum() > 0, "expects a positive sum"
    return x + 1.0


def _factorial(n):
    if n <= 1:
        return n * 0 + 1
    return n * _factorial(n - 1)


@case(T(3), T(1), 4)
def recursion_with_tensor_condition(n):
    return _factorial(n)


MODE = None


@case(POS, NEG)
def global_assigned_in_tensor_branch(x):
    global MODE
    if x.sum() > 0:
        MODE = "up"
    else:
        MODE = "down"
    return x, MODE


@case(POS, NEG, MIX)
def mutates_input_tensor_in_branch(x):
    if x.sum() > 0:
        x[0] = 0.0
    return x.sum()


@case(POS, NEG)
def augassign_on_input_tensor(x):
    x += 1.0
    if x.sum() > 3:
        x *= 2.0
    return x


@case(POS, NEG, MIX)
def dict_same_key_both_branches(x):
    out = {}
    if x.sum() > 0:
        out["v"] = x
    else:
        out["v"] = -x
    return out


@case(POS, NEG, MIX)
def break_in_python_list_loop_with_tensor_if(x):
    total = x * 0.0
    for scale in [1.0, 2.0, 3.0]:
        total = total + x * scale
        if total.sum() > 5.0:
            break
    return total
