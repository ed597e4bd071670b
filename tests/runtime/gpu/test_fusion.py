"""Fused groups in graph mode (d2s_runtime/gpu/fusion.py): runs of element-wise ops become the
CUDA C emitter's kernels inside a capture. On the strict device's fake capture each group is
one node; here the group's generated CUDA C itself runs, compiled for the host (element-wise
kernels once per thread index; a reduction's block as 256 OpenMP threads with barriers), and
graph mode is compared with the Python backend on new inputs. The same sources are compiled
with NVRTC where it is installed."""
import ctypes
import hashlib
import os
import shutil
import subprocess

import numpy as np
import pytest

import d2s
import strict_device as sd
from d2s_runtime.device import to_host
from d2s_runtime.gpu.cuda_lower import C_TYPE
from strict_graph import StrictGraphs

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _on_strict():
    prev = d2s.set_default_device("strict")
    yield
    d2s.set_default_device(prev)


def _gxx():
    return shutil.which("g++") or shutil.which("c++")


_SHIM = r"""
#include <math.h>
#include <omp.h>
#include <stdlib.h>
struct d2s_dim3 { long long x; };
static d2s_dim3 blockIdx, blockDim;
static long long d2s_serial_tid;
/* an element-wise kernel runs once per index, serially; a reduction's block of 256 threads
   runs as 256 OpenMP threads, __syncthreads() a barrier, __shared__ memory function-static */
static inline d2s_dim3 d2s_tid() { d2s_dim3 t; t.x = omp_in_parallel() ? omp_get_thread_num() : d2s_serial_tid;
                                   return t; }
#define threadIdx d2s_tid()
#define __global__
#define __device__
#define __shared__ static
#define __syncthreads() _Pragma("omp barrier")
"""


class HostPlans:
    """Runs a FusedPlan's kernels on the host: its generated CUDA C, compiled with g++."""

    def __init__(self, tmp):
        self.tmp, self.sources, self.ran, self.reductions = tmp, [], 0, 0

    def __call__(self, plan):
        drivers = []
        for k in plan.kernels:
            casts = [f"(const {C_TYPE[a.dtype]}*)p[{j}]" for j, a in enumerate(k.args)]
            casts.append(f"({C_TYPE[k.dtype]}*)p[{len(k.args)}]")
            call = f"{k.name}({', '.join(casts)});"
            if k.reduction:
                body = ("blockDim.x = 256; blockIdx.x = 0; omp_set_dynamic(0); int got = 0; "
                        "_Pragma(\"omp parallel num_threads(256)\") { "
                        "_Pragma(\"omp single\") got = omp_get_num_threads(); " + call + " } "
                        "if (got != 256) abort();")
            else:
                body = ("blockDim.x = 256; for (long long i = 0; i < n; ++i) { blockIdx.x = i / 256; "
                        "d2s_serial_tid = i % 256; " + call + " }")
            drivers.append(f'extern "C" void run_{k.name}(void** p, long long n) {{ {body} }}')
        src = _SHIM + plan.source + "\n" + "\n".join(drivers) + "\n"
        self.sources.append(plan.source)
        self.reductions += sum(1 for k in plan.kernels if k.reduction)
        key = hashlib.sha256(src.encode()).hexdigest()[:16]
        so = os.path.join(self.tmp, f"plan_{key}.so")
        if not os.path.exists(so):
            cpp = so[:-3] + ".cpp"
            with open(cpp, "w") as f:
                f.write(src)
            subprocess.run([_gxx(), "-O1", "-std=c++17", "-fopenmp", "-shared", "-fPIC", "-o", so, cpp],
                           check=True, capture_output=True)
        lib = ctypes.CDLL(so)

        def run(*args):
            self.ran += 1
            vals = {c: np.ascontiguousarray(a._a) for c, a in zip(plan.inputs, args)}
            for k in plan.kernels:
                out = np.empty(k.shape, dtype=k.dtype)
                ptrs = [vals[a.name] for a in k.args] + [out]
                arr = (ctypes.c_void_p * len(ptrs))(*[p.ctypes.data for p in ptrs])
                getattr(lib, f"run_{k.name}")(arr, ctypes.c_longlong(k.size))
                vals[k.out] = out
            return tuple(sd.StrictArray(vals[name]) for _, name in plan.outputs)

        return run


@pytest.fixture
def host_plans(tmp_path):
    if _gxx() is None:
        pytest.skip("no host C++ compiler")
    probe = tmp_path / "omp.cpp"
    probe.write_text("#include <omp.h>\nint main() { return omp_get_max_threads() > 0 ? 0 : 1; }\n")
    if subprocess.run([_gxx(), "-fopenmp", "-o", str(tmp_path / "omp"), str(probe)], capture_output=True).returncode:
        pytest.skip("the host C++ compiler has no OpenMP (the reduction kernels' blocks run as its threads)")
    plans = HostPlans(str(tmp_path))
    StrictGraphs.plan_runner = plans
    yield plans
    StrictGraphs.plan_runner = None


def _t(*shape, scale=1.0):
    return d2s.tensor((RNG.standard_normal(shape) * scale).astype("float32"))


def _gelu_ish(x, w):
    h = x @ w
    return (h * 0.5 * (1.0 + d2s.tanh(h * 0.79788456 + h * h * h * 0.035677))).relu() - h.abs() * 0.1


def _control(x, v):
    while x.abs().max() > 0.5:
        x = x * 0.9 - v * 0.01
        v = d2s.maximum(v * 0.5, x)
    return x, v


def _replay(fn, calls):
    g = d2s.jit.to_static(fn, backend="graph")
    p = d2s.jit.to_static(fn)
    for _ in range(3):
        g(*calls[0])
    assert g.backend_report() == "graph"
    for args in calls[1:]:
        with sd.counting() as c:
            got = g(*args)
        kinds = list(c.sync_kinds)
        want = p(*args)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for a, b in zip(got, want):
            np.testing.assert_allclose(to_host(a._data), to_host(b._data), rtol=2e-5, atol=1e-5)
        assert kinds == []


def test_an_element_wise_chain_runs_as_its_generated_c(host_plans):
    before = StrictGraphs.stats["fused"]
    w = _t(4, 6)
    _replay(_gelu_ish, [(_t(3, 4), w) for _ in range(4)])
    assert StrictGraphs.stats["fused"] > before
    assert host_plans.ran >= 3  # the generated C computed the replays' values


def test_a_loop_body_is_fused_inside_its_while_node(host_plans):
    calls = [(_t(2, 3, scale=s), _t(2, 3)) for s in (3.0, 1.0, 8.0, 0.2)]
    _replay(_control, calls)
    assert host_plans.ran > 0 and any("d2s_maximum" in s for s in host_plans.sources)


def _chain_and_reductions(x):
    y = d2s.exp(x * 0.5) - x
    return y.sum(), (y * y).mean(), d2s.maximum(x, y * 0.1).max(), (x - 1.0).min(), y


def test_a_reduction_reading_a_chain_runs_as_its_block_kernel(host_plans):
    """A reduction's single-block kernel: 256 threads, a strided pass and a shared-memory tree."""
    calls = [(_t(23, 37, scale=s),) for s in (1.0, 2.0, 0.5, 3.0)]  # 851 elements: several passes
    _replay(_chain_and_reductions, calls)
    assert host_plans.reductions >= 2 and host_plans.ran > 0


def test_fusion_cuts_the_nodes_of_a_capture():
    from strict_graph import StrictRecorder
    from d2s.static import build_program
    from d2s_runtime.gpu.capture import Capture

    prog = build_program(_gelu_ish, _t(3, 4), _t(4, 6))
    x, w = sd.xp.asarray(np.ones((3, 4), "float32")), sd.xp.asarray(np.ones((4, 6), "float32"))
    nodes = {}
    for fuse in (False, True):
        cap = Capture(prog, fuse=fuse)
        rec = StrictRecorder()
        feeds = [x, w] + [sd.xp.asarray(v) for v in prog.constants.values()]
        literals = cap.literals(sd.xp)
        prev = sd.CAPTURE[0]
        sd.CAPTURE[0] = "test"
        try:
            outs = cap.run(rec, feeds, literals)
        finally:
            sd.CAPTURE[0] = prev
        nodes[fuse] = (len(rec.lists[0]), cap.fused, to_host(outs[0]))
    assert nodes[True][1] >= 1 and nodes[False][1] == 0
    assert nodes[True][0] < nodes[False][0] - 3, nodes
    np.testing.assert_allclose(nodes[True][2], nodes[False][2], rtol=1e-6)


def test_fused_sources_compile_with_nvrtc(host_plans, tmp_path):
    from d2s_runtime.gpu import nvrtc
    try:
        nvrtc.nvrtc_module()
    except nvrtc.NvrtcUnavailable as e:
        pytest.skip(str(e))
    _replay(_control, [(_t(2, 3, scale=s), _t(2, 3)) for s in (3.0, 2.0)])
    assert host_plans.sources
    for src in host_plans.sources:
        assert nvrtc.compile_source(src, arch="sm_90", target="ptx", cache_dir=str(tmp_path))
