"""Closures in converted code read the live cell, as Python's late binding does.

Converting a branch or loop body into a function must not change which variable a lambda or
nested function reads: ``g = lambda: i`` sees every later ``i = ...``, also inside converted
loops and branches, and lambdas made in a loop all see the loop variable's final value. Each
case runs eagerly and converted (Python and tensor inputs) and the results must agree.
"""
import numpy as np

import d2s


def _value(v):
    if isinstance(v, d2s.Tensor):
        return v.numpy().tolist()
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    return v


def _same(fn, *input_sets):
    converted = d2s.jit.to_static(fn)
    for args in input_sets:
        args = args if isinstance(args, tuple) else (args,)
        expected, got = fn(*args), converted(*args)
        assert _value(got) == _value(expected), (fn.__name__, args, expected, got)


def counter_closure(n):
    i = 0
    g = lambda: i  # noqa: E731
    s = 0
    while i < n:
        s = s * 10 + g()
        i += 1
    return s


def lambdas_in_for(n):
    fns = []
    for i in range(n):
        fns.append(lambda: i)
    return [f() for f in fns]


def lambdas_in_while(n):
    fns = []
    k = 0
    while k < n:
        t = k * 2
        fns.append(lambda: t)
        k += 1
    return [f() for f in fns]


def nested_def_reads_loop_variable(n):
    total = 0
    i = 0

    def current():
        return i * 10

    for i in range(n):
        total = total + current()
    return total, current()


def closure_after_branch(c):
    y = 1
    g = lambda: y  # noqa: E731
    if c:
        y = 5
    else:
        y = 7
    return g()


def closure_defaults_bind_early(n):
    fns = []
    for i in range(n):
        fns.append(lambda i=i: i)
    return [f() for f in fns]


def tensor_loop_closure(x, n):
    i = d2s.tensor(0)
    g = lambda: x * i  # noqa: E731
    s = x * 0.0
    while i < n:
        s = s + g()
        i = i + 1
    return s


def tensor_if_closure(x):
    y = x * 1.0
    g = lambda: y + 1.0  # noqa: E731
    if x.sum() > 0:
        y = x * 3.0
    return g()


def test_counter_closure_python_and_tensor():
    _same(counter_closure, 0, 1, 2, 3)
    _same(counter_closure, *[d2s.tensor(np.int64(k)) for k in range(4)])


def test_lambdas_made_in_loops_see_the_final_value():
    _same(lambdas_in_for, 0, 1, 3)
    _same(lambdas_in_while, 0, 1, 3)
    _same(closure_defaults_bind_early, 0, 3)


def test_nested_function_and_branch():
    _same(nested_def_reads_loop_variable, 0, 1, 4)
    _same(closure_after_branch, True, False)


def test_closures_inside_programs():
    x = d2s.tensor([1.0, -2.0, 0.5])
    _same(tensor_loop_closure, *[(x, d2s.tensor(np.int64(k))) for k in range(4)])
    _same(tensor_if_closure, x, -x, d2s.tensor([2.0, 2.0, 2.0]))
