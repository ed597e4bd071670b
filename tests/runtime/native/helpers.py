"""Shared by the native-backend tests: compile once per program (numba compiles ~1 s a function)
into one temporary disk cache per test session, and compare with the Python backend."""
import numpy as np

from d2s_runtime import Executor
from d2s_runtime import native


def compile_native(program, cache_dir):
    return native.compile_lowered(native.lower_program(program), cache_dir=str(cache_dir))


def check(program, fn, inputs_list, rtol=0.0, atol=0.0, exact=()):
    """``fn`` (native) and the Python backend agree on every inputs tuple: same number of outputs,
    each an ndarray of the same dtype and shape; values equal (NaN where NaN) within
    ``rtol``/``atol``, bit for bit for the output positions in ``exact``."""
    ref = Executor(program)
    for inputs in inputs_list:
        want = ref.run(*inputs)
        got = fn(*[np.asarray(a) for a in inputs])
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert type(g) is np.ndarray, (k, type(g))
            assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype, g.shape, w.shape)
            if k in exact or rtol == atol == 0 or w.dtype.kind in "biu":
                np.testing.assert_array_equal(g, w, err_msg=f"output {k}")
                if w.dtype.kind == "f":  # signed zeros too
                    assert np.array_equal(np.signbit(g), np.signbit(w)), f"output {k}: signed zeros"
            else:
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"output {k}")
