"""The graph backend on a real GPU: cupy's stream capture, with conditional nodes added through
cuda-bindings (cupy has no API for them), as NVIDIA's examples and NeMo's
``with_conditional_node`` do it:

* a capture runs on a private non-blocking stream, with cupy allocating from a memory pool
  the graph owns (never trimmed, never shared: the addresses the graph was captured with stay
  its own);
* a WHILE node: the cond block is recorded, a set-condition kernel (``kernels.py``, compiled
  with NVRTC and loaded as PTX through the driver) writes the predicate into a conditional
  handle, the node is added at the capture's current dependencies, and the body (then the cond
  block and the set-condition kernel again) is captured into the node's body graph on a second
  stream (``cudaStreamBeginCaptureToGraph``);
* an IF/ELSE node (CUDA 12.8 and later): one set-condition kernel, a node with two bodies;
* matrix products go through ``cublas.py``'s handle, bound to whichever stream is capturing;
* a fused group (``fusion.py``) launches the CUDA C emitter's kernels, compiled by cupy's
  ``RawModule`` (its module loaded before the capture needs it: loading is not a stream op).

NOT RUN on a CPU machine: written against cuda-bindings 13's signatures (CUDA 13 adds an
``edgeData`` argument to ``cudaStreamGetCaptureInfo`` and ``cudaGraphAddNode``; the 12.x forms
are tried too) and checked only by ``benchmarks/gpu_check.sh`` on a GPU.
"""
import ctypes

from .backends import GraphBackend, Recorder
from .kernels import SET_CONDITION


def cuda_backend():
    """The CUDA graph backend (raises RuntimeError saying what is missing)."""
    try:
        import cupy
    except ImportError:
        raise RuntimeError("backend='graph' needs cupy (pip install 'd2s[gpu-cuda13]', or 'd2s[gpu]' on CUDA 12)") \
            from None
    try:
        from cuda.bindings import driver, runtime
    except ImportError:
        raise RuntimeError("backend='graph' needs cuda-bindings for conditional graph nodes "
                           "(pip install 'd2s[gpu-cuda13]', or 'd2s[gpu]' on CUDA 12)") from None
    return CudaGraphs(cupy, runtime, driver)


def _ok(result, what):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err}")
    return result[1:] if isinstance(result, tuple) and len(result) > 2 else (
        result[1] if isinstance(result, tuple) and len(result) == 2 else None)


class _SetCondition:
    """The set-condition kernels, loaded once per process as PTX through the driver."""

    def __init__(self, cupy, driver):
        from .nvrtc import compile_source
        arch = f"sm_{cupy.cuda.Device().compute_capability}"  # ("90" on an H100/H200)
        ptx = compile_source(SET_CONDITION, arch=arch, target="ptx")
        self.driver = driver
        self.module = _ok(driver.cuModuleLoadData(ptx), "cuModuleLoadData")
        self.fn = {name: _ok(driver.cuModuleGetFunction(self.module, name.encode()), "cuModuleGetFunction")
                   for name in ("d2s_set_condition", "d2s_set_condition_not")}

    def launch(self, which, handle, pred, stream_ptr):
        args = ((int(handle), pred.data.ptr), (ctypes.c_ulonglong, ctypes.c_void_p))
        _ok(self.driver.cuLaunchKernel(self.fn[which], 1, 1, 1, 1, 1, 1, 0, stream_ptr, args, 0), "cuLaunchKernel")


class CudaRecorder(Recorder):
    def __init__(self, owner, stream):
        self.o, self.xp = owner, owner.cupy
        self.streams = [stream]

    @property
    def stream(self):
        return self.streams[-1]

    def op(self, fn, *args):
        return fn(*args)  # cupy launches on the capturing stream: CUDA records the kernels

    def copy(self, dst, src):
        self.o.cupy.copyto(dst, src)

    def empty(self, shape, dtype):
        return self.o.cupy.empty(tuple(shape), dtype=dtype)

    def gemm(self, a, b):
        return self.o.blas(self.stream).matmul(a, b)

    def fused(self, plan, run, *args):
        """The plan's kernels (CUDA C from ``cuda_lower``, compiled once per source by cupy's
        NVRTC, cached on disk), launched on the capturing stream: CUDA records one node each."""
        cp = self.o.cupy
        module = self.o.module(plan.source)
        vals = {c: cp.ascontiguousarray(a) for c, a in zip(plan.inputs, args)}
        for k in plan.kernels:
            out = cp.empty(k.shape, dtype=k.dtype)
            fn = module.get_function(k.name)
            ptrs = tuple(vals[a.name] for a in k.args) + (out,)
            if k.reduction:
                fn((1,), (256,), ptrs)
            else:
                fn(((k.size + 255) // 256,), (256,), ptrs)
            vals[k.out] = out
        outs = []
        for kind, name in plan.outputs:
            if kind != "a":
                raise RuntimeError(f"a fused group's output is the literal {name}: not lowered")
            outs.append(vals[name])
        return tuple(outs)

    # -------------------------------------------------------------- conditional nodes
    def _capture_info(self):
        rt = self.o.rt
        res = rt.cudaStreamGetCaptureInfo(self.stream.ptr)
        # (err, status, id, graph, deps, [edgeData,] numDeps)
        graph, deps = res[3], res[4]
        return graph, list(deps)[:res[-1]]

    def _conditional(self, kind, size, handle):
        rt = self.o.rt
        graph, deps = self._capture_info()
        params = rt.cudaGraphNodeParams()
        params.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        params.conditional.handle = handle
        params.conditional.type = kind
        params.conditional.size = size
        try:
            node = _ok(rt.cudaGraphAddNode(graph, deps, None, len(deps), params), "cudaGraphAddNode")
        except TypeError:  # CUDA 12.x: no edgeData
            node = _ok(rt.cudaGraphAddNode(graph, deps, len(deps), params), "cudaGraphAddNode")
        try:
            _ok(rt.cudaStreamUpdateCaptureDependencies(self.stream.ptr, [node], None, 1,
                                                       rt.cudaStreamUpdateCaptureDependenciesFlags
                                                       .cudaStreamSetCaptureDependencies), "update dependencies")
        except TypeError:
            _ok(rt.cudaStreamUpdateCaptureDependencies(self.stream.ptr, [node], 1,
                                                       rt.cudaStreamUpdateCaptureDependenciesFlags
                                                       .cudaStreamSetCaptureDependencies), "update dependencies")
        return [params.conditional.phGraph_out[i] for i in range(size)]

    def _body(self, body_graph, fn):
        rt, cp = self.o.rt, self.o.cupy
        stream = cp.cuda.Stream(non_blocking=True)
        self.o.keep.append(stream)
        mode = rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
        try:
            _ok(rt.cudaStreamBeginCaptureToGraph(stream.ptr, body_graph, None, None, 0, mode), "begin body capture")
        except TypeError:
            _ok(rt.cudaStreamBeginCaptureToGraph(stream.ptr, body_graph, None, 0, mode), "begin body capture")
        self.streams.append(stream)
        try:
            with stream:
                return fn()
        finally:
            self.streams.pop()
            _ok(rt.cudaStreamEndCapture(stream.ptr), "end body capture")

    def _handle(self, default=0):
        rt = self.o.rt
        graph, _ = self._capture_info()
        return _ok(rt.cudaGraphConditionalHandleCreate(graph, default, 0), "cudaGraphConditionalHandleCreate")

    def if_else(self, pred, then_fn, else_fn):
        rt = self.o.rt
        handle = self._handle()
        self.o.setc.launch("d2s_set_condition", handle, pred, self.stream.ptr)
        then_graph, else_graph = self._conditional(rt.cudaGraphConditionalNodeType.cudaGraphCondTypeIf, 2, handle)
        self._body(then_graph, then_fn)
        self._body(else_graph, else_fn)

    def while_loop(self, cond_fn, body_fn):
        rt = self.o.rt
        pred = cond_fn()
        handle = self._handle()
        self.o.setc.launch("d2s_set_condition", handle, pred, self.stream.ptr)
        (body_graph,) = self._conditional(rt.cudaGraphConditionalNodeType.cudaGraphCondTypeWhile, 1, handle)

        def body():
            body_fn()
            again = cond_fn()
            self.o.setc.launch("d2s_set_condition", handle, again, self.stream.ptr)

        self._body(body_graph, body)


class _CudaGraph:
    __slots__ = ("graph", "pool")

    def __init__(self, graph, pool):
        self.graph, self.pool = graph, pool


class CudaGraphs(GraphBackend):
    name = "gpu"

    def __init__(self, cupy, runtime, driver):
        self.cupy, self.rt, self.driver, self.xp = cupy, runtime, driver, cupy
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.setc = _SetCondition(cupy, driver)
        self._blas = {}
        self._modules = {}
        self.keep = []  # body-capture streams (alive as long as this backend)

    def blas(self, stream):
        from .cublas import Cublas
        b = self._blas.get(stream.ptr)
        if b is None:
            b = self._blas[stream.ptr] = Cublas(self.cupy, stream.ptr)
        return b

    def module(self, source):
        """``source`` compiled (cupy.RawModule: NVRTC, cached on disk) and loaded, once."""
        m = self._modules.get(source)
        if m is None:
            m = self._modules[source] = self.cupy.RawModule(code=source, options=("--std=c++17",))
        return m

    def capture(self, record):
        cp = self.cupy
        pool = cp.cuda.MemoryPool()
        rec = CudaRecorder(self, self.stream)
        self.blas(self.stream)  # (its workspace is allocated outside the capture)
        with cp.cuda.using_allocator(pool.malloc), self.stream:
            self.stream.begin_capture()
            try:
                result = record(rec)
            except BaseException:
                try:
                    self.stream.end_capture()
                except Exception:  # noqa: BLE001 - the capture is invalid already
                    pass
                raise
            graph = self.stream.end_capture()
        graph.upload(self.stream)
        return _CudaGraph(graph, pool), result

    def launch(self, graph):
        graph.graph.launch(self.cupy.cuda.get_current_stream())

    def copy_in(self, dst, src):
        self.cupy.copyto(dst, src)

    def write_host(self, dst, host):
        dst.set(host, stream=self.cupy.cuda.get_current_stream())

    def read_word(self, word):
        return int(word.get())

    def release(self, graph):
        graph.graph = None
