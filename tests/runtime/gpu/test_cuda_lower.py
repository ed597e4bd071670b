"""The CUDA C emitter (d2s_runtime/gpu/cuda_lower.py) without a GPU:

* every element-wise op's ``"cuda"`` C expression, with the emitter's prelude, built by the
  host C++ compiler (``-D__device__=``) and compared with the op's own kernel (numpy) on edge
  values: signed zeros, infinities, NaN, tiny and huge numbers, each dtype it lowers;
* the generated kernels and the graph backend's own kernels compiled by NVRTC alone
  (cuda-bindings + nvidia-cuda-nvrtc: ``pip install 'd2s[nvrtc]'``; skipped where those
  wheels are not installed).
"""
import ctypes
import itertools
import os
import shutil
import subprocess

import numpy as np
import pytest

import d2s
from d2s.static import build_program
from d2s_runtime.gpu import cuda_lower
from d2s_runtime.gpu.cuda_lower import C_TYPE, PRELUDE, CudaScalarEmit, cast_expr, lower_kernels
from d2s_runtime.ops import OPS
from d2s_runtime.native.plan import NativeUnsupported

FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.0, -7.0, 1e-30, -1e30, 1e10, 2.0 ** -126, 88.5, -88.5,
               710.0, np.inf, -np.inf, np.nan]
INT_EDGES = [0, 1, -1, 2, -3, 7, 100, -100]

UNARY = ["neg", "abs", "sign", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu"]
BINARY = ["add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum", "minimum", "logaddexp",
          "eq", "ne", "lt", "le", "gt", "ge"]
# transcendental functions: host libm and numpy may differ by an ulp or two (CUDA's own bounds
# are checked on a GPU); everything else must be bit-exact
ULPS = {"exp": 2, "log": 2, "sin": 2, "cos": 2, "tanh": 2, "sigmoid": 4, "pow": 2, "logaddexp": 4}


def _gxx():
    return shutil.which("g++") or shutil.which("c++")


def _cases():
    for name in UNARY + BINARY:
        for dt in ("float32", "float64"):
            yield name, dt
    for name in ("neg", "abs", "sign", "add", "sub", "mul", "maximum", "minimum", "eq", "lt", "ge"):
        yield name, "int64"


def _expr(name, dt, n_in):
    opdef = OPS[name]
    hook = opdef.lowering("cuda")
    e = CudaScalarEmit(type("Op", (), {"type": name, "outputs": ["out"]})(), dt)
    return hook(e, *["a", "b"][:n_in])


def _result_dtype(name, dt):
    return "bool" if OPS[name].comparison else dt


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory):
    cxx = _gxx()
    if cxx is None:
        pytest.skip("no host C++ compiler")
    lines = ["#include <math.h>", "#define __device__", PRELUDE]
    for k, (name, dt) in enumerate(_cases()):
        n_in = 1 if name in UNARY else 2
        t, r = C_TYPE[dt], C_TYPE[_result_dtype(name, dt)]
        expr = _expr(name, dt, n_in)
        lines.append(f'extern "C" void f{k}(const {t}* pa, const {t}* pb, {r}* out, long n) {{'
                     f" for (long i = 0; i < n; i++) {{ {t} a = pa[i]; {t} b = pb[i]; (void)b;"
                     f" out[i] = ({r})({expr}); }} }}")
    d = tmp_path_factory.mktemp("cuda_exprs")
    src, lib = d / "exprs.cpp", d / "exprs.so"
    src.write_text("\n".join(lines))
    proc = subprocess.run([cxx, "-O1", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC", "-o", str(lib),
                           str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ctypes.CDLL(str(lib))


def _ulp_diff(a, b):
    a, b = np.asarray(a), np.asarray(b)
    both_nan = np.isnan(a) & np.isnan(b)
    same = (a == b) | both_nan
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.abs(a.astype(np.float64) - b.astype(np.float64)) / np.spacing(np.abs(b).astype(a.dtype)).astype(
            np.float64)
    return np.where(same, 0.0, np.where(np.isfinite(gap), gap, np.inf))


@pytest.mark.parametrize("name,dt", list(_cases()), ids=[f"{n}-{d}" for n, d in _cases()])
def test_each_c_expression_computes_what_the_kernel_computes(host_lib, name, dt):
    k = list(_cases()).index((name, dt))
    edges = FLOAT_EDGES if dt.startswith("float") else INT_EDGES
    n_in = 1 if name in UNARY else 2
    pairs = list(itertools.product(edges, repeat=n_in))
    a = np.array([p[0] for p in pairs], dtype=dt)
    b = np.array([p[-1] for p in pairs], dtype=dt)
    if name in ("floordiv", "mod") and not dt.startswith("float"):
        b[b == 0] = 1
    rdt = _result_dtype(name, dt)
    out = np.empty(len(a), dtype=rdt)
    getattr(host_lib, f"f{k}")(a.ctypes.data_as(ctypes.c_void_p), b.ctypes.data_as(ctypes.c_void_p),
                               out.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(len(a)))
    with np.errstate(all="ignore"):
        want = OPS[name].kernel(np, a, b) if n_in == 2 else OPS[name].kernel(np, a)
    want = np.asarray(want)
    assert want.dtype == out.dtype, (want.dtype, out.dtype)
    if rdt.startswith("float"):
        diff = _ulp_diff(out, want)
        bad = diff > ULPS.get(name, 0)
        # signed zeros must match too where exactness is asked
        if name not in ULPS:
            bad |= (out == 0) & (want == 0) & (np.signbit(out) != np.signbit(want))
    else:
        bad = out != want
    assert not bad.any(), [(x, y, o, w) for x, y, o, w, f in zip(a, b, out, want, bad) if f][:8]


def test_literals_are_exact_and_casts_follow_numpy():
    assert cuda_lower.c_literal(0.1, "float32") == f"((float){float(np.float32(0.1)).hex()})"
    assert cuda_lower.c_literal(-3, "int64") == "((long long)-3LL)"
    assert cuda_lower.c_literal(np.nan, "float64") == "((double)(0.0/0.0))"
    assert cast_expr("x", "float32", "bool") == "(x != 0)"
    e = CudaScalarEmit(type("Op", (), {"type": "clip", "outputs": ["o"]})(), "float32")
    with pytest.raises(NativeUnsupported):
        e.lit("1; evil()")
    for name in ("floordiv", "mod"):  # integer division raises on zero: no C form
        with pytest.raises(NativeUnsupported, match="zero divisor"):
            _expr(name, "int64", 2)


def _programs():
    x = d2s.tensor(np.ones((4, 3), "float32"))
    b = d2s.tensor(np.ones(3, "float32"))
    return [
        build_program(lambda x, b: d2s.relu(x * 2.0 + b) - d2s.sigmoid(x), x, b),
        build_program(lambda x, b: (d2s.tanh(d2s.maximum(x, b) - 1.0).sum(), (x // b + x % b).mean()), x, b),
        build_program(lambda x, b: d2s.where(x > b, x, b * 0.5).max(), x, b),
    ]


def test_a_chain_and_the_reduction_reading_it_are_one_kernel_each():
    src, kernels = lower_kernels(_programs()[1])
    assert [k.reduction for k in kernels] == ["sum", "mean"]  # no temporaries for the chains
    assert src.count("__global__") == 2 and "tanhf(" in src and "d2s_floordiv(" in src


def test_what_the_emitter_does_not_lower_names_the_op():
    x = d2s.tensor(np.ones((4, 3), "float32"))
    prog = build_program(lambda x: x @ x, d2s.tensor(np.ones((3, 3), "float32")))
    with pytest.raises(NativeUnsupported, match="op matmul .* has no cuda lowering"):
        lower_kernels(prog)


def _nvrtc():
    from d2s_runtime.gpu.nvrtc import NvrtcUnavailable, nvrtc_module
    try:
        nvrtc_module()
    except NvrtcUnavailable as e:
        pytest.skip(str(e))


def test_generated_kernels_compile_with_nvrtc(tmp_path):
    _nvrtc()
    from d2s_runtime.gpu.nvrtc import compile_source
    for prog in _programs():
        src, _ = lower_kernels(prog)
        cubin = compile_source(src, arch="sm_90", target="cubin", cache_dir=str(tmp_path))
        assert cubin[:4] == b"\x7fELF"
    before = set(os.listdir(tmp_path))
    compile_source(src, arch="sm_90", target="cubin", cache_dir=str(tmp_path))  # from the cache
    assert set(os.listdir(tmp_path)) == before


def test_the_set_condition_kernel_compiles_to_ptx_and_cubin(tmp_path):
    _nvrtc()
    from d2s_runtime.gpu.kernels import SOURCES
    from d2s_runtime.gpu.nvrtc import CompileError, compile_source
    for target in ("ptx", "cubin"):
        out = compile_source(SOURCES["set_condition"], arch="sm_90", target=target, cache_dir=str(tmp_path))
        assert len(out) > 100
    with pytest.raises(CompileError, match="error"):
        compile_source("this is not CUDA", cache_dir=str(tmp_path))
