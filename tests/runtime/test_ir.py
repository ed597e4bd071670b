"""The IR data classes: verify() rejects malformed programs naming op and var; clone()."""
import numpy as np
import pytest

import d2s
from d2s.static import build_program
from d2s_runtime import Executor, VerifyError
from d2s_runtime.ir import Block, Op, Program
from d2s_runtime.ops import OPS, BlockLayout, OpDef, TensorType


class _BodyLayout(BlockLayout):
    """A test op's layout: one block, ``body``."""

    def block_keys(self, op):
        return frozenset({"body"})


def _register_structured(monkeypatch, name, run):
    """Register a structured op ``name`` (no shape rule) run by ``run(ctx, op, values)``."""
    opdef = OpDef(name, None, None, None, "a test op", layout=_BodyLayout())
    opdef.rules["run"] = run
    monkeypatch.setitem(OPS, name, opdef)


T3 = TensorType((3,), "float32")


def _prog():
    return build_program(lambda x, y: d2s.exp(x * y) + x.sum(), d2s.tensor(np.ones(3, "float32")),
                         d2s.tensor(np.ones(3, "float32")))


def test_built_programs_verify():
    p = _prog()
    assert p.verify() is p
    assert p.global_block() is p.blocks[0]
    assert set(p.inputs) <= set(p.global_block().vars)


def test_use_before_definition_is_rejected():
    p = _prog()
    ops = p.block.ops
    ops[0], ops[1] = ops[1], ops[0]
    with pytest.raises(VerifyError, match=r"op #0 'exp'.*reads var '.'.*before it is defined"):
        p.verify()


def test_double_definition_is_rejected():
    p = _prog()
    first = p.block.ops[0].outputs[0]
    p.block.ops[1].outputs = [first]
    with pytest.raises(VerifyError, match=f"var '{first}' is defined twice"):
        p.verify()


def test_wrong_output_type_is_rejected():
    p = _prog()
    out = p.block.ops[0].outputs[0]
    p.block.vars[out].type = TensorType((4,), "float32")
    with pytest.raises(VerifyError, match=rf"output var '{out}' is typed f32\[4\] but the shape rule of 'mul' gives f32\[3\]"):
        p.verify()


def test_unknown_op_type_is_rejected():
    p = _prog()
    p.block.ops[0].type = "frobnicate"
    with pytest.raises(VerifyError, match="unknown op type 'frobnicate'"):
        p.verify()


def test_shape_rule_rejection_is_reported():
    p = _prog()
    p.block.ops[0].type = "matmul"
    with pytest.raises(VerifyError, match="matmul.*shape rule"):
        p.verify()


def _with_sub_block(monkeypatch, body_reads):
    _register_structured(monkeypatch, "test_call", lambda ctx, op, vals: ctx.run_block(op.blocks["body"], vals))
    p = Program()
    gb = p.block
    for n in ("x", "y"):
        gb.add_var(n, T3)
    body = Block(parent=gb)
    body.add_var("c", T3)
    body.add_var("d", T3)
    body.inputs = ["c"]
    body.ops = [Op("neg", [body_reads], ["d"])]
    body.outputs = ["d"]
    gb.ops = [Op("test_call", ["x"], ["y"], {}, {"body": body})]
    gb.inputs = p.inputs = ["x"]
    p.outputs = gb.outputs = ["y"]
    return p


def test_sub_block_may_read_only_its_inputs(monkeypatch):
    _with_sub_block(monkeypatch, "c").verify()
    with pytest.raises(VerifyError, match=r"test_call #0 block 'body'.*'neg'.*reads var 'x'.*not in this block's scope"):
        _with_sub_block(monkeypatch, "x").verify()


def test_clone_is_deep_and_equivalent(monkeypatch):
    p = _prog()
    q = p.clone()
    assert str(q) == str(p)
    q.block.ops[0].attrs["junk"] = 1
    q.block.ops.pop()
    assert "junk" not in p.block.ops[0].attrs
    assert len(p.block.ops) == len(q.block.ops) + 1
    s = _with_sub_block(monkeypatch, "c")
    t = s.clone()
    sub_t = t.block.ops[0].blocks["body"]
    assert sub_t is not s.block.ops[0].blocks["body"] and sub_t.parent is t.block
    x = np.arange(3, dtype="float32")
    np.testing.assert_allclose(Executor(t).run(x)[0], -x)


def test_constants_must_match_their_var():
    c = np.arange(40, dtype="float32")
    p = build_program(lambda x: x + c, d2s.tensor(np.zeros(40, "float32")))
    name = next(iter(p.constants))
    p.constants[name] = np.zeros(39, "float32")
    with pytest.raises(VerifyError, match=f"constant '{name}'"):
        p.verify()
