"""A small cuBLAS binding (ctypes) with its own handle and an explicit workspace, for matrix
products inside a CUDA graph capture.

cupy refuses every cuBLAS call while a stream captures (``cublas.setStream`` raises
``NotImplementedError``), and cuBLAS allocates its default workspace with ``cudaMallocAsync``,
which a conditional node's body may not hold. This handle is bound to the capturing stream
before the capture and given a workspace of its own (``cublasSetWorkspace``), so its GEMMs
record as plain kernel nodes. Float32/float64 products of contiguous row-major operands (2-d, or
batched with equal or broadcast batch dims) run here; anything else goes to ``cupy.matmul``
(which a capture refuses: the program then stays on the Python backend, saying why).

Not run on a CPU machine: ``benchmarks/gpu_check.sh`` checks it inside a WHILE body.
"""
import ctypes

WORKSPACE_BYTES = 32 << 20
_OP_N = 0


def _load():
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        return ctypes.CDLL(load_nvidia_dynamic_lib("cublas").abs_path)
    except Exception:  # noqa: BLE001 - the system's library, where no wheel holds one
        for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so"):
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    raise RuntimeError("backend='graph' needs the cuBLAS library (pip install nvidia-cublas, or a CUDA toolkit)")


class Cublas:
    """One cuBLAS handle bound to one stream, with its own workspace (``cupy`` arrays)."""

    def __init__(self, cupy, stream_ptr):
        self.cupy = cupy
        self.lib = lib = _load()
        self.handle = ctypes.c_void_p()
        self._ok(lib.cublasCreate_v2(ctypes.byref(self.handle)), "cublasCreate")
        self.workspace = cupy.empty(WORKSPACE_BYTES, dtype="uint8")
        self._ok(lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(stream_ptr)), "cublasSetStream")
        self._ok(lib.cublasSetWorkspace_v2(self.handle, ctypes.c_void_p(self.workspace.data.ptr),
                                           ctypes.c_size_t(WORKSPACE_BYTES)), "cublasSetWorkspace")

    @staticmethod
    def _ok(status, what):
        if status != 0:
            raise RuntimeError(f"{what} failed with cuBLAS status {status}")

    def matmul(self, a, b):
        """``a @ b`` (numpy's matmul semantics) for float32/float64; else ``cupy.matmul``."""
        cp = self.cupy
        if a.dtype != b.dtype or a.dtype.name not in ("float32", "float64") or a.ndim == 0 or b.ndim == 0:
            return cp.matmul(a, b)
        va, vb = a.ndim == 1, b.ndim == 1
        A = a.reshape(1, -1) if va else a
        B = b.reshape(-1, 1) if vb else b
        if A.ndim > 3 or B.ndim > 3 or A.shape[-1] != B.shape[-2]:
            return cp.matmul(a, b)
        batch_a = A.shape[0] if A.ndim == 3 else 1
        batch_b = B.shape[0] if B.ndim == 3 else 1
        if batch_a != batch_b and 1 not in (batch_a, batch_b):
            return cp.matmul(a, b)
        batch = max(batch_a, batch_b)
        A, B = cp.ascontiguousarray(A), cp.ascontiguousarray(B)
        m, k, n = A.shape[-2], A.shape[-1], B.shape[-1]
        out = cp.empty((batch, m, n) if batch > 1 or (A.ndim == 3 or B.ndim == 3) else (m, n), dtype=a.dtype)
        if m and n:
            if k == 0:
                out.fill(0)
            else:
                self._gemm(A, B, out, m, k, n, batch, 0 if batch_a == 1 else m * k, 0 if batch_b == 1 else k * n)
        if va and vb:
            return out.reshape(out.shape[:-2])
        if va:
            return out.reshape(out.shape[:-2] + (n,))
        if vb:
            return out.reshape(out.shape[:-1])
        return out

    def _gemm(self, A, B, C, m, k, n, batch, stride_a, stride_b):
        # row-major C = A @ B is column-major C^T = B^T @ A^T: B and A passed as they lie
        f32 = A.dtype.name == "float32"
        scalar = ctypes.c_float if f32 else ctypes.c_double
        alpha, beta = scalar(1.0), scalar(0.0)
        fn = self.lib.cublasSgemmStridedBatched if f32 else self.lib.cublasDgemmStridedBatched
        status = fn(self.handle, _OP_N, _OP_N, ctypes.c_int(n), ctypes.c_int(m), ctypes.c_int(k),
                    ctypes.byref(alpha), ctypes.c_void_p(B.data.ptr), ctypes.c_int(n), ctypes.c_longlong(stride_b),
                    ctypes.c_void_p(A.data.ptr), ctypes.c_int(k), ctypes.c_longlong(stride_a),
                    ctypes.byref(beta), ctypes.c_void_p(C.data.ptr), ctypes.c_int(n), ctypes.c_longlong(m * n),
                    ctypes.c_int(batch))
        self._ok(status, "cublasGemmStridedBatched")
