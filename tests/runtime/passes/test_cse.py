"""cse: identical ops merged; effects never merged."""
import numpy as np

import d2s
from d2s.static import build_program
from d2s_runtime.passes import cse, dce

from _pass_helpers import assert_same_outputs, check_pure, op_types

X = d2s.tensor(np.zeros((3,), "float32"))


def test_repeated_add_is_merged():
    def f(x, y):
        a = x + y
        b = y + x  # commutative: the same value
        return a * b

    p = build_program(f, X, X)
    q = dce(check_pure(cse, p))
    assert op_types(q) == ["add", "mul"]
    a = q.block.ops[0].outputs[0]
    assert q.block.ops[1].inputs == [a, a]
    assert_same_outputs(p, q)


def test_different_attrs_are_not_merged():
    p = build_program(lambda x: x.sum(axis=0) + x.sum(), d2s.tensor(np.zeros((3, 2), "float32")))
    q = check_pure(cse, p)
    assert op_types(q).count("reduce_sum") == 2
    assert_same_outputs(p, q)


def test_random_draws_are_never_merged():
    p = build_program(lambda x: x + d2s.rand(3) - d2s.rand(3), X)
    q = check_pure(cse, p)
    assert op_types(q).count("rand") == 2


def test_empty_stacks_are_never_merged():
    """Two ``stack_new`` of the same value are two stacks (the native backend grows each in
    place: one merged stack would be one buffer for two loop carries)."""
    from d2s_runtime.ir import Op, Program
    from d2s_runtime.ops import TensorType
    p = Program()
    b = p.block
    b.add_var("x", TensorType((3,), "float32"))
    p.inputs = b.inputs = ["x"]
    for k in ("1", "2"):
        b.add_var("buf" + k, TensorType((None,), "float32"))
        b.add_var("shp" + k, TensorType((None, 1), "int64"))
        b.ops.append(Op("stack_new", ["x"], ["buf" + k, "shp" + k]))
    p.outputs = b.outputs = ["buf1", "shp1", "buf2", "shp2"]
    q = check_pure(cse, p)
    assert op_types(q) == ["stack_new", "stack_new"]


def test_outputs_are_renamed():
    p = build_program(lambda x: (d2s.exp(x), d2s.exp(x)), X)
    q = check_pure(cse, p)
    assert op_types(q) == ["exp"] and q.outputs[0] == q.outputs[1]
    assert_same_outputs(p, q)
