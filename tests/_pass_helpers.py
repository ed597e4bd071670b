"""Shared checks for the pass tests: outputs unchanged on several inputs (to the bit, unless a test
asks for a tolerance), input not mutated."""
import numpy as np

from d2s_runtime import Executor


def random_inputs(program, seed):
    rng = np.random.default_rng(seed)
    out = []
    for name in program.inputs:
        t = program.block.lookup(name).type
        out.append(rng.standard_normal(t.shape).astype(t.dtype) if t.dtype.startswith("float")
                   else rng.integers(-3, 4, t.shape).astype(t.dtype))
    return out


def assert_same_outputs(before, after, seeds=(0, 1, 2), rtol=0, atol=0, params=None):
    ex_b, ex_a = Executor(before, params=params), Executor(after, params=params)
    for seed in seeds:
        xs = random_inputs(before, seed)
        for b, a in zip(ex_b.run(*xs), ex_a.run(*xs)):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def op_types(program):
    return [op.type for op in program.block.ops]


def check_pure(pass_fn, program):
    """Run ``pass_fn``; assert it left ``program`` untouched and returned a verified new one."""
    text = str(program)
    out = pass_fn(program)
    assert str(program) == text and out is not program
    out.verify()
    return out
