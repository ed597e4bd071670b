"""d2s.static.replay: running a program's block again op by op (cond, while and scan through
the control-flow builders) gives what the eager function gives, on inputs taking every branch
and zero-trip loops; print ops stay silent in replays unless the replay is the forward."""
import numpy as np
import pytest

import d2s
from d2s.static import build_program
from d2s.static.replay import replay_block, replay_op, replaying_forward


def f(x, n):
    y = d2s.cond(x.sum() > 0, lambda a: a * 2.0, lambda a: a - 1.0, x)
    i, acc = d2s.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, acc + y), [d2s.tensor(0), y * 0.0])
    carry, ys = d2s.scan(lambda c, v: (c + v, c * v), d2s.zeros([]), acc)
    return acc, carry, ys


@pytest.mark.parametrize("x, n", [([1.0, 2.0, 3.0], 3), ([-1.0, -2.0, 0.5], 2), ([0.5, -4.0, 1.0], 0)])
def test_replay_block_equals_the_eager_function(x, n):
    x, n = d2s.tensor(np.array(x, np.float32)), d2s.tensor(n)
    program = build_program(f, d2s.jit.InputSpec([3], "float32"), d2s.jit.InputSpec([], "int64"))
    assert {op.type for op in program.block.ops} >= {"cond", "while", "scan"}
    got = replay_block(program.block, [x, n])
    want = f(x, n)
    assert len(got) == 3
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy())


def test_print_ops_print_only_when_replaying_the_forward(capfd):
    def g(x):
        d2s.print("value", x)
        return x + 1.0

    program = build_program(g, d2s.jit.InputSpec([2], "float32"))
    (op,) = [op for op in program.block.ops if op.type == "print"]
    x = d2s.tensor([1.0, 2.0])
    capfd.readouterr()
    assert replay_op(op, [x]) == []
    assert capfd.readouterr().out == ""
    with replaying_forward():
        replay_op(op, [x])
    assert "value" in capfd.readouterr().out


def test_replayed_loops_carry_no_alias_flags():
    """A loop replayed for a gradient tracks no aliases: an IR block has no in-place updates.
    Program 36 of fuzz seed 2 (three levels of loops, early returns, ``b = a`` and ``+=``
    statements, so its conversion tracks aliases) once built 71,024 ops for its gradient,
    the forward's alias links making every replayed loop carry flags; 24,600 without them,
    and 9,394 since traces no longer leave a constant op per use of a Python number (1,293 ops
    in the forward, was over 2,000). The converted call's values and gradients are eager's on
    all its inputs."""
    import fuzz
    from d2s.static import gradients

    source, input_sets = fuzz.generate(2, 36), fuzz.inputs(2, 36)
    static = d2s.jit.to_static(fuzz.load(source))
    fuzz._call(static, input_sets[3], False)
    program = static.concrete_programs[-1].raw_program

    def count(block):
        return sum(1 + sum(count(b) for b in op.blocks.values()) for op in block.ops)

    assert count(program.block) < 2000 and count(gradients(program).block) < 15_000
    assert fuzz.check_program(source, input_sets, limit=120.0, grads=True) == ("ok", "")
