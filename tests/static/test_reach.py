"""Per-call "used" flags (``d2s.static.reach``): under to_static, ``.grad`` is ``None`` exactly
where eager autograd leaves it (a value read only on the path not taken), and equal otherwise."""
import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.static.reach import add_reach_flags
from d2s_runtime import Executor

W = [d2s.tensor(np.linspace(-1, 1, 3) + k, dtype="float64", requires_grad=True) for k in range(4)]


def one_branch(x):
    if x.sum() > 0:
        return (x * W[0]).sum()
    return (x * W[1]).sum()


def nested(x):
    h = W[2] * 2.0  # computed at the top, used on one path only
    if x.sum() > 0:
        if x[0] > 0.5:
            y = x * h
        else:
            y = x * W[0]
    else:
        y = x.exp()
    return (y * W[3]).sum()


def comparison_only(x):
    # W[1] steers the branch but carries no gradient to the output
    if (x * W[1]).sum() > 0:
        y = x * W[0]
    else:
        y = x + 1.0
    return y.sum()


def in_loop(x, n):
    i = d2s.tensor(0)
    y = x
    while i < n:
        y = y * W[0]
        i = i + 1
    if y.sum() > 100.0:
        y = y * W[1]
    return y.sum()


INPUTS = [np.array([0.9, 0.2, 0.1]), np.array([0.1, 0.2, 0.1]), np.array([-0.5, -0.2, -1.0])]


def _grads(fn, *args):
    """The call's value, then the .grad of each of W and of x (None where none)."""
    for w in W:
        w.grad = None
    x = d2s.tensor(args[0], requires_grad=True)
    out = fn(x, *args[1:])
    out.backward()
    return [out.numpy().copy()] + [None if t.grad is None else t.grad.numpy().copy() for t in W + [x]]


def _compare(fn, *args):
    static = d2s.jit.to_static(fn)
    want = _grads(fn, *args)
    for _ in range(2):  # the second call runs the optimized programs
        got = _grads(static, *args)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        for g, e in zip(got[1:], want[1:]):
            assert (g is None) == (e is None), (got, want)
            if e is not None:
                np.testing.assert_allclose(g, e, rtol=1e-12)


@pytest.mark.parametrize("x", INPUTS)
@pytest.mark.parametrize("fn", [one_branch, nested, comparison_only])
def test_grad_is_none_exactly_where_eager_leaves_it(fn, x):
    _compare(fn, x)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_loop_then_branch(n):
    for x in INPUTS:
        _compare(in_loop, x * 10, d2s.tensor(n))


def test_nested_flag_is_returned_by_the_outer_cond():
    x = d2s.tensor(INPUTS[0])
    p = d2s.jit.to_static(nested).get_program(x)
    params = list(p.params)
    flagged = add_reach_flags(p, params).verify()
    assert len(flagged.outputs) == len(p.outputs) + len(params)
    outer = [op for op in flagged.block.ops if op.type == "cond"][0]
    before = [op for op in p.block.ops if op.type == "cond"][0]
    # W[0] is used only when the inner predicate holds: the outer cond now returns that flag
    assert len(outer.outputs) > len(before.outputs)
    feeds = {n: W[k].numpy() for n, k in zip(params, _param_index(p))}
    for xv in INPUTS:
        outs = Executor(flagged).run(xv, params=feeds)
        eager = _grads(nested, xv)
        used = {k: bool(f) for k, f in zip(_param_index(p), outs[len(p.outputs):])}
        assert used == {k: eager[1 + k] is not None for k in used}  # (eager[0]: the value)


def _param_index(program):
    """Which of W each param of a program of ``nested`` is (by value)."""
    entry = d2s.jit.to_static(nested)
    entry(d2s.tensor(INPUTS[0]))
    (cp,) = entry.concrete_programs
    return [next(k for k, w in enumerate(W) if w is t) for _, t in cp.params]


def test_module_branch_parameters_stay_none_for_the_optimizer():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 2), nn.Linear(3, 2)

        def forward(self, x):
            if x.sum() > 0:
                return self.a(x).sum()
            return self.b(x).sum()

    eager, static = M(), M()
    static.load_state_dict(eager.state_dict())
    static = d2s.jit.to_static(static)
    opts = [d2s.optim.Adam(m.parameters(), lr=0.1) for m in (eager, static)]
    for sign in (1, -1, 1, 1):
        x = d2s.tensor(sign * np.ones((2, 3), np.float32))
        for m, opt in zip((eager, static), opts):
            opt.zero_grad()
            m(x).backward()
            opt.step()
        for pe, ps in zip(eager.parameters(), static.parameters()):
            assert (pe.grad is None) == (ps.grad is None)
            np.testing.assert_allclose(ps.numpy(), pe.numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ branches inside loop bodies
def branch_in_while(x, n):
    i = d2s.tensor(0)
    while i < n:
        if x.sum() > 0:
            x = x * W[0]
        else:
            x = x + W[1]
        i = i + 1
    return (x * W[2]).sum()


def branch_on_the_counter(x, n):
    # which branch runs changes from one iteration to the next: W[1] only from the third on
    i = d2s.tensor(0)
    while i < n:
        if i < 2:
            x = x * W[0]
        else:
            x = x * W[1]
        i = i + 1
    return x.sum()


def nested_loops(x, n):
    i = d2s.tensor(0)
    while i < n:
        j = d2s.tensor(0)
        while j < i:
            if x.sum() > 0:
                x = x * W[0]
            else:
                x = x * W[1]
            j = j + 1
        i = i + 1
    return (x + W[3]).sum()


def loop_inside_a_branch(x, n):
    if x.sum() > 0:
        i = d2s.tensor(0)
        while i < n:
            if x[0] > 0.5:
                x = x * W[0]
            i = i + 1
    else:
        x = x * W[1]
    return x.sum()


@pytest.mark.parametrize("n", [0, 1, 2, 4])
@pytest.mark.parametrize("fn", [branch_in_while, branch_on_the_counter, nested_loops, loop_inside_a_branch])
def test_branch_inside_a_loop_body_counts_only_when_some_iteration_took_it(fn, n):
    for x in INPUTS:
        _compare(fn, x, d2s.tensor(n))


def branch_in_scan(x):
    # (a function passed to d2s.scan is not source-converted: its branch is a d2s.cond)
    def step(h, xt):
        h = d2s.cond(xt.sum() > 0, lambda h, xt: h * W[0] + xt, lambda h, xt: h - xt * W[1], h, xt)
        return h, h.sum()

    h, ys = d2s.scan(step, x, d2s.stack([x, x * 2.0]))
    return h.sum() + ys.sum()


@pytest.mark.parametrize("x", INPUTS)
def test_branch_inside_a_scan_body(x):
    _compare(branch_in_scan, x)


def test_flag_carries_keep_the_program_valid_and_runnable():
    x, n = d2s.tensor(INPUTS[0]), d2s.tensor(2)
    p = d2s.jit.to_static(branch_in_while).get_program(x, n)
    flagged = add_reach_flags(p, list(p.params), per_output=True).verify()
    loop = next(op for op in flagged.block.ops if op.type == "while")
    before = next(op for op in p.block.ops if op.type == "while")
    assert len(loop.outputs) > len(before.outputs)  # a bool carry for each branch-only param
    Executor(flagged).run(INPUTS[0], 2, params=None if not flagged.params else
                          {name: np.ones(3) for name in flagged.params})


def scan_body_param(h, xs):
    def step(c, x):
        c = c * W[0] + x
        return c, c.sum()

    c, ys = d2s.scan(step, h, xs)
    return c.sum() + ys.sum()


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("length", [0, 1, 3])
def test_a_scan_of_length_zero_leaves_its_body_params_unused(length, dynamic):
    spec = [d2s.jit.InputSpec([3], "float64"), d2s.jit.InputSpec([None, 3], "float64")] if dynamic else None
    static = d2s.jit.to_static(scan_body_param, input_spec=spec)
    xs = np.linspace(0.1, 0.9, 3 * length).reshape(length, 3)
    want = _grads(scan_body_param, INPUTS[0], d2s.tensor(xs))
    for _ in range(2):
        got = _grads(static, INPUTS[0], d2s.tensor(xs))
        for g, e in zip(got, want):
            assert (g is None) == (e is None), (got, want)
            if e is not None:
                np.testing.assert_allclose(g, e, rtol=1e-12)


def overwritten_carry(x, n):
    # the body replaces y without reading it: W[2] reaches the result only when the loop runs
    # zero times (found by `python -m tests.fuzz 100 1 --grads`, program 87)
    y = W[2] * 2.0
    i = d2s.tensor(0)
    while i < n:
        y = x * W[0]
        i = i + 1
    return (y * W[1]).sum() + x.sum()


def overwritten_carry_and_condition(x, n):
    # the same under a condition with `and` (a branch in the loop's cond block, which cannot be
    # evaluated again outside the loop: a bool carry says whether the body ran); W[2] only
    # steers the loop and never gets a gradient
    y = W[3] * 1.0
    k = 0
    while k < 1 and ((y * W[2]).sum() < n):
        k += 1
        y = x * W[0]
    return y.sum() + x.sum()


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("fn", [overwritten_carry, overwritten_carry_and_condition])
def test_a_carry_the_body_overwrites_counts_only_when_the_loop_runs_zero_times(fn, n):
    for x in INPUTS:
        _compare(fn, x, d2s.tensor(float(n)) if fn is overwritten_carry_and_condition else d2s.tensor(n))


def carry_overwritten_under_a_branch(x, n):
    # each iteration replaces y only when its branch runs: W[2] reaches the result when no
    # iteration took the branch (every iteration passed y on), whatever the trip count
    y = W[2] * 2.0
    i = d2s.tensor(0)
    while i < n:
        if x.sum() > 0.5:
            y = x * W[0]
        i = i + 1
    return (y * W[1]).sum() + x.sum()


def _compare_inputs(fn, n, inputs=INPUTS):
    for x in inputs:
        _compare(fn, x, d2s.tensor(n))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_carry_replaced_under_a_branch_counts_when_no_iteration_replaced_it(n):
    _compare_inputs(carry_overwritten_under_a_branch, n)


def carry_moved_to_another_under_a_branch(x, n):
    # y's value moves into z only on the iterations whose branch runs, and y is replaced on the
    # others: W[2] (y's start) reaches the result only when the first iteration to move y
    # came before any replaced it, W[0] only when one moved it after a replacement
    y = W[2] * 2.0
    z = x * 1.0
    i = d2s.tensor(0)
    while i < n:
        if x.sum() + i > 1.5:
            z = y * 1.0
        else:
            y = x * W[0]
        i = i + 1
    return (z * W[1]).sum()


def carry_moved_by_an_early_return(x, n):
    # the same through `return` inside a nested loop: y reaches the return value only on the
    # iterations that return, and W[2] (y's start) nothing once an iteration replaced y
    # (fuzz --grads seed 2, program 31)
    y = W[2] * 2.0
    i = d2s.tensor(0)
    while i < n:
        i = i + 1
        if x.sum() < 0.0:
            y = x * W[0]
        else:
            for _ in range(2):
                if x.sum() > 1.0:
                    return (y * W[1]).sum()
    return (x * W[3]).sum() + (y * W[1]).sum()


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("fn", [carry_moved_to_another_under_a_branch, carry_moved_by_an_early_return])
def test_a_carry_moved_to_another_carry_counts_only_along_the_path_taken(fn, n):
    _compare_inputs(fn, n)


def updated_in_place_then_replaced(x, n):
    # `y += ...` leaves the builder's select of y's object (in-place updates reach every name
    # holding it); only the side the flag picks reaches the result
    y = W[2] * 1.0
    i = d2s.tensor(0)
    while i < n:
        i = i + 1
        y += x * W[0]
        if x.sum() < 0.5:
            y = x * 0.5
    return (y * W[1]).sum()


def alias_taken_under_a_branch(x, n):
    # `a = b` on some iterations: a later `b += ...` reaches a only when a is b (fuzz --grads
    # seed 2, program 31, minimized)
    a = x * 1.0
    b = W[2] * 1.0
    i = d2s.tensor(0)
    while i < n:
        i = i + 1
        b += W[0] * 0.5
        if x.sum() < 0.5:
            b = x * 0.1
        else:
            a = b
    return (a * W[1]).sum() + (b * W[3]).sum()


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("fn", [updated_in_place_then_replaced, alias_taken_under_a_branch])
def test_in_place_updates_reach_an_alias_only_where_it_is_one(fn, n):
    _compare_inputs(fn, n)


def alias_updated_in_loops_under_branches(x, n):
    # three tensor branches (a Python loop), each holding a loop that updates b, an alias of
    # a, in place and then rebinds it: the flag expressions outgrow the cap on terms unless
    # large ones are named by a var (fuzz --grads seed 2, programs 54 and 70)
    a = x * W[0]
    b = a
    for _ in range(3):
        if (a - W[1]).sum() > 100.0:
            i = d2s.tensor(0)
            while i < n:
                b -= W[2] * 0.5
                b = a + 0.5
                i = i + 1
    return (a + b * 0.5).sum()


@pytest.mark.parametrize("n", [0, 1, 2])
def test_large_flag_expressions_stay_exact(n):
    _compare_inputs(alias_updated_in_loops_under_branches, n, INPUTS + [np.full(3, 200.0)])


@pytest.mark.parametrize("fn", [carry_moved_by_an_early_return, alias_updated_in_loops_under_branches])
def test_each_flag_a_block_returns_is_its_own_var(fn):
    """A flag a sub-block returns is never one of its inputs nor another of its outputs: the
    gradient rules rebuild loops and branches from these blocks with the builders, which take
    one object returned in two places for two aliases and track it (fuzz --grads seed 2
    program 70's training split grew to 1,185,077 ops so)."""
    x = d2s.tensor(INPUTS[0], requires_grad=True)
    p = d2s.jit.to_static(fn).get_program(x, d2s.tensor(3))
    flagged = add_reach_flags(p, [p.inputs[0], *p.params], per_output=True).verify()
    flags = 0

    def check(block):
        nonlocal flags
        for op in block.ops:
            for sub in op.blocks.values():
                new = [o for o in sub.outputs if o.startswith("used_")]
                flags += len(new)
                assert len(set(new)) == len(new) and not set(new) & set(sub.inputs), sub.outputs
                check(sub)

    check(flagged.block)
    assert flags > 0
