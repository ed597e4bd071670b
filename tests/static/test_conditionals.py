"""The branches' family (d2s/static/conditionals.py): the n-ary ``switch`` op.

A symbolic index builds one ``switch`` op, whose values and gradients are eager's on every
index (out-of-range ones clamped, as JAX does) on the interpreter, the generated Python and the
native backend; where a branch hands back a tensor from outside (or updates one in place) the
branches are chosen by ``cond`` ops instead, which keep eager code's tensor objects; a saved
program round-trips; reach flags leave ``.grad`` None for a parameter the taken branch never
read, as eager autograd does; the loader refuses a malformed switch."""
import json
import os

import numpy as np
import pytest

import d2s
from d2s.autograd import gradcheck
from d2s.jit import InputSpec, to_static
from d2s_runtime import Executor, FormatError, load_program, save_program

pytestmark = pytest.mark.usefixtures("backend")
RNG = np.random.default_rng(31)
BRANCHES = [lambda v: v * 2.0, lambda v: d2s.sin(v) - 1.0, lambda v: d2s.tanh(v) * v, lambda v: v * v * v]


def pick(i, x):
    return d2s.switch(i, BRANCHES, x)


def _types(program):
    out = []

    def walk(block):
        for op in block.ops:
            out.append(op.type)
            for sub in op.blocks.values():
                walk(sub)

    walk(program.block)
    return out


def test_one_switch_op_gives_eager_values_and_gradients_on_every_index():
    sf = to_static(pick, input_spec=[InputSpec([], "int64"), InputSpec([5], "float64")])
    x = d2s.tensor(RNG.standard_normal(5))
    for index in (-4, 0, 1, 2, 3, 11):
        want = BRANCHES[min(max(index, 0), 3)](x)
        got = sf(d2s.tensor(index), x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        assert gradcheck(lambda v, i=index: sf(d2s.tensor(i), v), (x,))
    types = _types(sf.concrete_programs[0].raw_program)
    assert types.count("switch") == 1 and "cond" not in types


@pytest.mark.parametrize("mode", ["interp", "codegen"])
def test_the_op_runs_alike_on_every_tier(mode):
    sf = to_static(pick, input_spec=[InputSpec([], "int32"), InputSpec([2, 3], "float32")])
    x = RNG.standard_normal((2, 3)).astype("float32")
    sf(d2s.tensor(0, dtype="int32"), d2s.tensor(x))
    program = sf.concrete_programs[0].raw_program
    ex = Executor(program, mode=mode)
    for index in (-1, 0, 1, 2, 3, 9):
        (got,) = ex.run(np.int32(index), x)
        want = BRANCHES[min(max(index, 0), 3)](d2s.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_branch_handing_back_an_outside_tensor_keeps_eagers_objects():
    # branch 0 returns the tensor x it reads from outside: eagerly y is x, so writing into y
    # writes x
    def f(i, x):
        y = d2s.switch(i, [lambda v: x, lambda v: v * 2.0, lambda v: v + 1.0], x)
        y.add_(10.0)
        return x, y

    sf = to_static(f, input_spec=[InputSpec([], "int64"), InputSpec([3], "float32")])
    for index in (0, 1, 2):
        got = sf(d2s.tensor(index), d2s.tensor([1.0, 2.0, 3.0]))
        want = f(d2s.tensor(index), d2s.tensor([1.0, 2.0, 3.0]))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert "switch" not in _types(sf.concrete_programs[0].raw_program)  # (cond ops, which track objects)


def test_a_saved_switch_round_trips(tmp_path):
    sf = to_static(pick, input_spec=[InputSpec([], "int64"), InputSpec([4], "float64")])
    x = RNG.standard_normal(4)
    sf(d2s.tensor(1), d2s.tensor(x))
    save_program(sf.concrete_programs[0].raw_program, str(tmp_path / "m"))
    program, _, _ = load_program(str(tmp_path / "m"))
    for index in (-2, 2, 5):
        (got,) = Executor(program).run(np.int64(index), x)
        np.testing.assert_allclose(got, BRANCHES[min(max(index, 0), 3)](d2s.tensor(x)).numpy(), rtol=1e-12)


def test_the_loader_refuses_a_switch_whose_branches_do_not_match_its_attr(tmp_path):
    sf = to_static(pick, input_spec=[InputSpec([], "int64"), InputSpec([4], "float64")])
    sf(d2s.tensor(1), d2s.tensor(RNG.standard_normal(4)))
    save_program(sf.concrete_programs[0].raw_program, str(tmp_path / "m"))
    path = tmp_path / "m" / "program.json"
    doc = json.loads(path.read_text())
    op = next(o for o in doc["program"]["block"]["ops"] if o["type"] == "switch")
    op["attrs"]["branches"] = 5
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="switch.*blocks"):
        load_program(str(tmp_path / "m"))


class TwoHeads(d2s.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = d2s.nn.Linear(3, 1)
        self.b = d2s.nn.Linear(3, 1)

    def forward(self, i, x):
        return d2s.switch(i, [lambda v: self.a(v), lambda v: self.b(v) * 2.0], x).sum()


def test_a_parameter_the_taken_branch_never_read_keeps_no_gradient():
    eager = TwoHeads()
    converted = TwoHeads()
    converted.load_state_dict(eager.state_dict())
    forward = to_static(converted.forward)
    x = d2s.tensor(RNG.standard_normal((2, 3)).astype("float32"))
    for index in (0, 1):
        for m in (eager, converted):
            m.zero_grad(set_to_none=True)
        eager(d2s.tensor(index), x).backward()
        forward(d2s.tensor(index), x).backward()
        for name in ("a", "b"):
            ge, gc = getattr(eager, name).weight.grad, getattr(converted, name).weight.grad
            assert (ge is None) == (gc is None), (index, name)
            if ge is not None:
                np.testing.assert_allclose(gc.numpy(), ge.numpy(), rtol=1e-6)
