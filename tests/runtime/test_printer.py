"""The text form and DOT output of programs."""
import re

import numpy as np

import d2s
from d2s.static import build_program
from d2s_runtime.ir import Block, Op, Program
from d2s_runtime.ops import TensorType
from d2s_runtime.printer import format_program


def _f(x, y):
    return x * y + x.sum()


def _prog():
    z = d2s.tensor(np.zeros(2, "float32"))
    return build_program(_f, z, z)


def test_one_line_form_reads_like_a_jaxpr():
    text = format_program(_prog(), multiline=False)
    assert text == ("{ lambda a:f32[2] b:f32[2] . let c:f32[2] = mul a b; "
                    "d:f32[] = reduce_sum[axes=None keepdims=False] a; e:f32[2] = add c d in ( e ) }")


def test_str_prints_one_equation_per_line():
    lines = str(_prog()).splitlines()
    assert lines[0] == "{ lambda a:f32[2] b:f32[2] . let"
    assert lines[1].strip() == "c:f32[2] = mul a b"
    assert lines[-1].strip() == "in ( e ) }"


def test_params_and_constants_are_listed_apart():
    w = d2s.tensor(np.ones((2, 2), "float32"), requires_grad=True)
    c = np.arange(20, dtype="float32").reshape(10, 2)
    p = build_program(lambda x: (x @ w) * 3.0 + c, d2s.tensor(np.zeros((10, 2), "float32")))
    head = str(p).splitlines()[0]
    m = re.match(r"\{ lambda (\S+) ; (\S+) ;; (\S+) \. let", head)
    assert m, head
    assert m.group(1).endswith("f32[10,2]") and m.group(2).endswith("f32[2,2]") and m.group(3).endswith("f32[10,2]")
    assert "constant[value=3.0]" in str(p)


def _cond_program():
    p = Program()
    gb = p.block
    t = TensorType((None,), "float32")
    gb.add_var("p", TensorType((), "bool"))
    gb.add_var("x", t)
    gb.add_var("y", t)
    blocks = {}
    for key, opname in (("true_block", "exp"), ("false_block", "neg")):
        b = Block(parent=gb)
        b.add_var(key[0] + "1", t)
        b.add_var(key[0] + "2", t)
        b.inputs = [key[0] + "1"]
        b.ops = [Op(opname, b.inputs, [key[0] + "2"])]
        b.outputs = [key[0] + "2"]
        blocks[key] = b
    gb.ops = [Op("cond", ["p", "x"], ["y"], {}, blocks)]
    gb.inputs = p.inputs = ["p", "x"]
    p.outputs = gb.outputs = ["y"]
    return p


def test_sub_blocks_are_indented():
    lines = str(_cond_program()).splitlines()
    assert lines[1] == "    y:f32[?] = cond p x"
    assert lines[2] == "      true_block = { lambda t1:f32[?] . let"
    assert lines[3] == "          t2:f32[?] = exp t1"
    assert lines[4] == "        in ( t2 ) }"
    assert lines[5].startswith("      false_block = {")
    one = format_program(_cond_program(), multiline=False)
    assert "true_block={ lambda t1:f32[?] . let t2:f32[?] = exp t1 in ( t2 ) }" in one


def test_to_dot_draws_ops_and_clusters():
    dot = _cond_program().to_dot()
    assert dot.startswith("digraph program {") and dot.rstrip().endswith("}")
    assert dot.count("subgraph cluster_") == 2
    assert 'label="cond true_block"' in dot and 'label="exp"' in dot
    dot2 = _prog().to_dot()
    assert 'label="mul"' in dot2 and 'label="input a:f32[2]"' in dot2
    assert dot2.count("{") == dot2.count("}")
