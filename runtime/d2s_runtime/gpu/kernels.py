"""CUDA C of the graph backend's own kernels (compiled with NVRTC, ``nvrtc.py``).

``SET_CONDITION``: the kernel that writes a conditional node's condition on the device from a
0-d bool (the predicate a ``cond`` block or a ``while``'s cond block computed), so no predicate
ever reaches the host. ``cudaGraphSetConditional`` is a device runtime builtin, declared here as
NVIDIA's examples and NeMo's conditional-node code declare it; whether its module loads as a
cubin or must go through PTX is measured by ``benchmarks/gpu_check.sh``.
"""

SET_CONDITION = r"""
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                      unsigned int value);

extern "C" __global__ void d2s_set_condition(cudaGraphConditionalHandle handle, const bool* pred) {
    cudaGraphSetConditional(handle, *pred ? 1u : 0u);
}

extern "C" __global__ void d2s_set_condition_not(cudaGraphConditionalHandle handle, const bool* pred) {
    cudaGraphSetConditional(handle, *pred ? 0u : 1u);
}
"""

SOURCES = {"set_condition": SET_CONDITION}
