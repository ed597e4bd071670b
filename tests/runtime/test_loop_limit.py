"""``max_loop_iterations``: a server can bound a loaded program's ``while`` loops."""
import numpy as np
import pytest

import d2s
import d2s_runtime
from d2s.jit import InputSpec
from d2s_runtime import Executor, LoopLimitError


@d2s.jit.to_static
def count_up(x):
    i = d2s.zeros([])
    while i < x:          # runs ceil(x) times
        i = i + 1.0
    return i


@d2s.jit.to_static
def nested(x):
    total = d2s.zeros([])
    i = d2s.zeros([])
    while i < x:
        j = d2s.zeros([])
        while j < 3.0:    # 3 inner iterations per outer one
            j = j + 1.0
            total = total + j
        i = i + 1.0
    return total


@d2s.jit.to_static
def forever(x):
    while x.sum() > 0:    # never false for a positive input
        x = x + 1.0
    return x


def _program(fn):
    return fn.get_program(InputSpec([], "float32"))


@pytest.mark.parametrize("mode", ["codegen", "interp"])
def test_the_bound_counts_iterations_exactly(mode):
    prog = _program(count_up)
    for n in (0, 1, 5):
        x = np.float32(n)
        assert Executor(prog, mode=mode, max_loop_iterations=n).run(x)[0] == n
        assert Executor(prog, mode=mode).run(x)[0] == n
        if n:
            with pytest.raises(LoopLimitError, match=r"op 'while' \(outputs .*\) did not finish within "
                                                     rf"max_loop_iterations={n - 1} "):
                Executor(prog, mode=mode, max_loop_iterations=n - 1).run(x)


def test_parallel_executor_honours_the_bound():
    prog = _program(count_up)
    with pytest.raises(LoopLimitError):
        Executor(prog, parallel=True, max_loop_iterations=2).run(np.float32(3))
    assert Executor(prog, parallel=True, max_loop_iterations=3).run(np.float32(3))[0] == 3


@pytest.mark.parametrize("mode", ["codegen", "interp"])
def test_the_bound_applies_to_each_loop_run(mode):
    prog = _program(nested)
    x = np.float32(4)  # the outer loop runs 4 times, the inner one 3 times per outer run
    assert Executor(prog, mode=mode, max_loop_iterations=4).run(x)[0] == nested(d2s.tensor(x)).item()
    with pytest.raises(LoopLimitError):
        Executor(prog, mode=mode, max_loop_iterations=3).run(x)


def test_a_loaded_model_that_never_ends_is_stopped(tmp_path):
    path = str(tmp_path / "m")
    d2s.jit.save(forever, path, input_spec=[InputSpec([None], name="x")])
    model = d2s_runtime.load(path, max_loop_iterations=1000)
    np.testing.assert_array_equal(model(-np.ones(3, "float32")), -np.ones(3, "float32"))  # zero trips
    with pytest.raises(LoopLimitError, match="max_loop_iterations=1000"):
        model(np.ones(3, "float32"))


def test_bad_bounds_are_refused():
    for bad in (-1, 1.5, "10"):
        with pytest.raises(ValueError, match="max_loop_iterations"):
            Executor(_program(count_up), max_loop_iterations=bad)
