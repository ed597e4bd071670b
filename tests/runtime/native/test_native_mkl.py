"""MKL's gemm for the native backend's products (runtime/d2s_runtime/native/mkl.py and the
``smatmul``/``dmatmul`` helpers of ``_lib.py``) against numpy: every operand layout gemm reads
in place (rows or columns contiguous, strided rows, transposed views), the ones it copies
(negative or two-way strides), empty and single-row/column shapes; and the choice of BLAS
(``D2S_NATIVE_BLAS``) in a fresh process."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

from d2s_runtime.native import mkl  # noqa: E402

if mkl.library() is None:
    pytest.skip(f"MKL is not used here: {mkl.blas_name()} (pip install -e '.[mkl]')", allow_module_level=True)

from d2s_runtime.native import _lib  # noqa: E402

RNG = np.random.default_rng(4)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _operands(dtype):
    """(name, a, b) pairs: layouts and shapes gemm must get right."""
    def r(*shape):
        return RNG.standard_normal(shape).astype(dtype)

    big = r(9, 10)
    return [
        ("C @ C", r(5, 7), r(7, 3)),
        ("transposed @ C", r(7, 5).T, r(7, 3)),
        ("C @ transposed", r(5, 7), r(3, 7).T),
        ("transposed @ transposed", r(7, 5).T, r(3, 7).T),
        ("Fortran-ordered", np.asfortranarray(r(5, 7)), np.asfortranarray(r(7, 3))),
        ("strided rows @ column block", big[::2, :7], big[2:9, 3:6]),
        ("row block of a transposed view", big.T[1:4, :], big[:, 2:5]),
        ("two-way strides (copied)", big[::2, ::2], r(5, 4)),
        ("negative strides (copied)", big[::-1, :4], r(4, 2)[::-1]),
        ("one row", r(1, 6), r(6, 4)),
        ("one row of a transposed view", big.T[3:4, :], r(9, 2)),
        ("one column", r(5, 6), r(6, 1)),
        ("outer product", r(5, 1), r(1, 4)),
        ("a column of a matrix times a row", big[:, 2:3], big[4:5, :]),
        ("no rows", r(0, 6), r(6, 4)),
        ("no columns", r(3, 6), r(6, 0)),
        ("empty inner dim", r(3, 0), r(0, 4)),
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products_match_numpy_for_every_layout(dtype):
    fn = _lib.smatmul if dtype == "float32" else _lib.dmatmul
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for name, a, b in _operands(dtype):
        a0, b0 = a.copy(), b.copy()
        got = fn(a, b)
        want = a.astype("float64") @ b.astype("float64")
        assert got.dtype == dtype and got.shape == want.shape and got.flags.c_contiguous, name
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=name)
        np.testing.assert_array_equal(a, a0, err_msg=name)   # operands untouched
        np.testing.assert_array_equal(b, b0, err_msg=name)


def test_operands_whose_inner_dims_differ_are_refused():
    for a, b in ((np.ones((4, 1), "float32"), np.ones((4, 1), "float32")),
                 (np.ones((2, 3), "float32"), np.ones((0, 5), "float32"))):
        with pytest.raises(ValueError, match="matmul operands do not align"):
            _lib.smatmul(a, b)


def test_non_finite_values_propagate_as_numpys_do():
    a = np.array([[np.inf, 1.0], [np.nan, 2.0], [1.0, -1.0]], "float32")
    b = np.array([[1.0, 0.5], [2.0, -3.0]], "float32")
    np.testing.assert_array_equal(_lib.smatmul(a, b), a @ b)


def _run(code, timeout=300, **env):
    """(returncode, stdout, stderr) of ``python -c code``; on timeout its whole process group
    (forked children too) is killed and the test fails."""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **env}, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"python -c ... did not finish in {timeout} s")
    return proc.returncode, out.strip(), err.strip()


_LOWER = ("from d2s.static import InputSpec, build_program\n"
          "from d2s_runtime import native\n"
          "from d2s_runtime.native import mkl\n"
          "p = build_program(lambda a, b: a @ b, InputSpec([3, 4]), InputSpec([4, 2]))\n"
          "src = native.lower_program(p).source\n"
          "print(mkl.blas_name(), 'L.smatmul(' in src, 'np.dot(' in src)\n")


def test_every_product_but_a_dot_of_vectors_calls_mkl(tmp_path):
    """One BLAS per program: np.dot beside MKL keeps two thread pools spinning (an MLP step
    whose one rank-10 product called np.dot ran 4x slower back to back). Vectors go to MKL as
    one-row or one-column matrices; values agree with numpy, strided vectors included."""
    from d2s.static import InputSpec, build_program
    from d2s_runtime import native

    def f(a, b, v, w):
        return a @ b, v @ b, a @ w, v[::2] @ b[::2], a @ w[::-1], v @ v

    prog = build_program(f, InputSpec([8, 10]), InputSpec([10, 6]), InputSpec([10]), InputSpec([10]))
    src = native.lower_program(prog).source
    assert src.count("L.smatmul(") == 5 and src.count("np.dot(") == 1, src
    fn = native.compile_lowered(native.lower_program(prog), cache_dir=str(tmp_path))
    args = [RNG.standard_normal(s).astype("float32") for s in ((8, 10), (10, 6), (10,), (10,))]
    a, b, v, w = args
    for got, want in zip(fn(*args), (a @ b, v @ b, a @ w, v[::2] @ b[::2], a @ w[::-1], v @ v)):
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_choice_of_blas_in_a_fresh_process():
    assert _run(_LOWER, D2S_NATIVE_BLAS="") == (0, "mkl True False", "")
    assert _run(_LOWER, D2S_NATIVE_BLAS="openblas") == (0, "openblas (D2S_NATIVE_BLAS=openblas) False True", "")
    rc, _, err = _run(_LOWER, D2S_NATIVE_BLAS="accelerate")
    assert rc != 0 and "D2S_NATIVE_BLAS='accelerate': expected 'mkl' or 'openblas'" in err


_WARM = ("import json, numpy as np, d2s\n"
         "from d2s.static import build_program\n"
         "from d2s_runtime import Executor\n"
         "a = np.arange(60, dtype='float32').reshape(3, 20) / 37\n"
         "b = np.arange(40, dtype='float64').reshape(20, 2) / 3\n"
         "prog = build_program(lambda a, b: (d2s.relu(a @ a.T - 1.0), b.T @ b), d2s.tensor(a), d2s.tensor(b))\n"
         "ex = Executor(prog, backend='native')\n"
         "ex.run(a, b)\n"
         "ex.wait_native(300)\n"
         "out = ex.run(a, b)\n"
         "from d2s_runtime import native\n"
         "from d2s_runtime.native import mkl\n"
         "src = native.lower_program(prog).source\n"
         "print(json.dumps({'origin': ex.native_origin, 'report': ex.backend_report(), 'blas': mkl.blas_name(),\n"
         "                  'calls': [src.count('L.smatmul('), src.count('L.dmatmul(')],\n"
         "                  'ok': bool(np.allclose(out[0], np.maximum(a @ a.T - 1, 0), rtol=1e-6)\n"
         "                             and np.allclose(out[1], b.T @ b, rtol=1e-12))}))\n")


def test_machine_code_calling_mkl_runs_from_the_disk_cache_in_a_second_process(tmp_path):
    """The compiled code names MKL's functions by symbol; a second process registers them
    (importing ``_lib``) before numba loads the cached code, which then runs."""
    import json
    env = {"D2S_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")])}
    runs = []
    for _ in range(2):
        rc, out, err = _run(_WARM, **env)
        assert rc == 0, err
        runs.append(json.loads(out.splitlines()[-1]))
    assert [r["origin"] for r in runs] == ["compiled", "disk cache"]
    assert all(r["report"] == "native" and r["blas"] == "mkl" and r["calls"] == [1, 1] and r["ok"] for r in runs), runs


_FORK = ("import multiprocessing as mp, os, numpy as np\n"
         "from d2s_runtime.native import _lib\n"
         "a = np.arange(4096, dtype='float32').reshape(64, 64) / 4096\n"
         "want = float((a.astype('float64') @ a)[3, 5])\n"
         "def work(i):\n"
         "    return abs(float(_lib.smatmul(a, a)[3, 5]) - want) < 1e-4\n"
         "assert work(0)\n"   # the parent's thread pool exists before the fork
         "with mp.get_context('fork').Pool(2) as pool:\n"
         "    print(all(pool.map(work, range(4))), work(0))\n")


def test_a_forked_child_computes_products_after_its_parent_did():
    """GNU OpenMP's pool does not survive fork: without the after-fork hook of mkl.py, the
    children's first product never returns (this test then fails on its timeout)."""
    rc, out, err = _run(_FORK, timeout=60)
    assert (rc, out) == (0, "True True"), err
