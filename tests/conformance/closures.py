"""Nested functions, lambdas, closures over loop variables, nonlocal/global, default
arguments, decorators and calls to other user functions."""
import functools

import d2s

from .harness import T, case

POS, NEG, MIX = T([1.0, 2.0, 3.0]), T([-1.0, -2.0, -0.5]), T([-2.0, 0.5, 1.0])
N0, N2, N3 = T(0), T(2), T(3)
LOG = []
COUNTER = 0
SCALE = 3.0


def helper_with_branch(u):
    if u.sum() > 0:
        return u * 2.0
    return u - 1.0


def helper_with_loop(u, n):
    for _ in range(n):
        u = u * 0.5
    return u


@case(POS, NEG, MIX)
def calls_helper_with_branch(x):
    return helper_with_branch(x) + helper_with_branch(-x)


@case((POS, N0), (POS, N3), (MIX, 2))
def calls_helper_with_loop(x, n):
    return helper_with_loop(x, n)


@case(POS, NEG, MIX)
def nested_function_reads_outer(x):
    k = x.mean()

    def shift(v):
        return v - k

    if k > 0:
        return shift(x)
    return shift(-x)


@case(POS, NEG, MIX)
def lambda_in_branch(x):
    f = (lambda v: v * 2.0) if x.sum() > 0 else (lambda v: v - 2.0)
    return f(x)


@case(0, 1, 2, N0, N2, N3)
def closure_sees_loop_updates(n):
    i = 0
    g = lambda: i  # noqa: E731
    s = 0
    while i < n:
        s = s * 10 + g()
        i += 1
    return s


@case(0, 3, N0, N3)
def lambdas_capture_late(n):
    fns = []
    for i in range(n):
        fns.append(lambda: i)
    return [f() for f in fns]


@case(0, 3)
def lambdas_capture_early_with_default(n):
    fns = []
    for i in range(n):
        fns.append(lambda i=i: i * 2)
    return [f() for f in fns]


@case(POS, NEG, MIX)
def nonlocal_counter(x):
    calls = 0

    def step(v):
        nonlocal calls
        calls += 1
        return v * 0.5

    y = step(x)
    if y.sum() > 0:
        y = step(y)
    return y, calls


@case(POS, MIX)
def nonlocal_in_python_loop(x):
    total = 0

    def add(k):
        nonlocal total
        total += k

    for k in range(4):
        add(k)
    return x * total


@case(0, 3, N3)
def global_list_append(n):
    LOG.clear()
    for i in range(3):
        LOG.append(i)
    return list(LOG)


@case(POS, NEG)
def global_counter_increment(x):
    global COUNTER
    COUNTER = 0
    for _ in range(3):
        COUNTER += 1
    return x * COUNTER


@case(POS, NEG, MIX)
def reads_module_constant(x):
    if x.sum() > 0:
        return x * SCALE
    return x / SCALE


@case(POS, MIX)
def default_argument_values(x, scale=2.0, shift=None):
    if shift is None:
        shift = 1.0
    return x * scale + shift


@case((POS,), (POS, 3.0), (MIX, 0.5, 2.0))
def called_with_varying_arity(x, scale=2.0, shift=1.0):
    return x * scale + shift


@case(POS, NEG, MIX)
def recursion_on_python_depth(x):
    def apply(v, depth):
        if depth == 0:
            return v
        return apply(d2s.tanh(v), depth - 1)
    return apply(x, 3)


def twice(fn):
    @functools.wraps(fn)
    def wrapper(v):
        return fn(fn(v))
    return wrapper


@twice
def _halve_if_big(v):
    if v.max() > 1.0:
        return v * 0.5
    return v


@case(POS, NEG, T([8.0, 1.0, 1.0]))
def calls_decorated_helper(x):
    return _halve_if_big(x)


@case(POS, NEG, MIX)
def closure_factory(x):
    def make_scaler(k):
        def scale(v):
            return v * k
        return scale

    double, triple = make_scaler(2.0), make_scaler(3.0)
    if x.sum() > 0:
        return double(x)
    return triple(x)


@case((POS, N0), (POS, N3), (MIX, N2))
def nested_function_with_tensor_loop(x, n):
    def body(v):
        return v * 0.5 + 1.0

    for _ in range(n):
        x = body(x)
    return x


@case((POS, N2), (MIX, N3), (NEG, N0))
def closure_over_tensor_updated_in_loop(x, n):
    acc = x * 0.0
    get = lambda: acc  # noqa: E731
    out = []
    for i in range(3):
        acc = acc + x
        out.append(get().sum())
    return out


@case(POS, NEG)
def functools_partial_call(x):
    f = functools.partial(d2s.clip, min=-1.0, max=1.5)
    if x.sum() > 0:
        return f(x)
    return f(x * 2.0)


@case(POS, NEG, MIX)
def method_on_helper_object(x):
    class Acc:
        def __init__(self):
            self.total = 0.0

        def add(self, v):
            self.total = self.total + v

    a = Acc()
    for v in [1.0, 2.0]:
        a.add(x * v)
    if a.total.sum() > 0:
        a.add(x)
    return a.total


@case((POS, N3), (POS, N0), (MIX, 2))
def lambda_applied_in_tensor_loop(x, n):
    act = lambda v: d2s.relu(v) - 0.1  # noqa: E731
    for _ in range(n):
        x = act(x)
    return x


@case((POS, N2), (MIX, 3))
def closure_appends_to_outer_list(x, n):
    hist = []

    def record(v):
        hist.append(v.sum())

    for i in range(3):
        record(x * i)
    return hist


@case((True, N2), (True, 0), (False, N0), (True, N0))
def python_if_binds_list_then_loop_mutates(flag, n):
    if flag:
        items = []
    for i in range(n):
        items.append(i)
    return len(items)
