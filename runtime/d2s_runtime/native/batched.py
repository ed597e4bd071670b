"""Native lowering of a batched ``matmul`` (an operand with more than 2 dims: attention's
``q @ k.T`` and ``weights @ v`` over (batch, heads, L, E)): one MKL gemm per 2-d slice of the
result, each operand slice read in place where gemm can (strided rows or columns: the heads
of a (B, T, H, E) tensor viewed as (B, H, T, E) are such slices), the leading dims broadcast
as numpy's ``matmul`` broadcasts them (a dim of 1, or a missing one, pairs with every index).
Without MKL (``d2s[mkl]``) the program runs on the Python backend."""
from . import mkl
from .values import NP_TYPE


def lower_batched_matmul(e, a, b):
    l = e._l
    odt = e.out.dtype
    if odt not in ("float32", "float64") or a.dtype != odt or b.dtype != odt:
        e.unsupported("batched matmul of integers or of mixed dtypes")
    if a.ndim < 2 or b.ndim < 2:
        e.unsupported("batched matmul with a 1-d operand")
    if mkl.library() is None:
        e.unsupported("batched matmul needs MKL (pip install 'd2s[mkl]')")
    helper = l.lib("smatmul_into" if odt == "float32" else "dmatmul_into")
    a, b = l.array(a), l.array(b)
    nd = max(a.ndim, b.ndim)
    ind = l.indent
    # the result's leading dims: numpy's broadcasting of the operands' leading dims
    dims = []
    for j in range(nd - 2):
        sizes = [f"{v.name}.shape[{j - (nd - v.ndim)}]" for v in (a, b) if j - (nd - v.ndim) >= 0]
        d = l.fresh()
        l.emit(ind, f"{d} = {sizes[0]}" if len(sizes) == 1 else f"{d} = max({sizes[0]}, {sizes[1]})")
        for s in sizes:
            l.emit(ind, f"if {s} != 1 and {s} != {d}: raise ValueError('native program: matmul batch dims "
                        f"do not broadcast')")
        dims.append(d)
    out = l.fresh()
    shape = dims + [f"{a.name}.shape[{a.ndim - 2}]", f"{b.name}.shape[{b.ndim - 1}]"]
    l.emit(ind, f"{out} = np.empty(({', '.join(shape)},), {NP_TYPE[odt]})")
    idx, inner = l.loops(dims, ind)

    def pick(v):
        lead = nd - v.ndim
        parts = []
        for j in range(lead, nd - 2):
            parts.append(f"({idx[j]} if {v.name}.shape[{j - lead}] != 1 else 0)")
        return f"{v.name}[{', '.join(parts)}]" if parts else v.name

    l.emit(inner, f"{helper}({pick(a)}, {pick(b)}, {out}[{', '.join(idx)}])")
    return l.new_array(out, odt, tuple(e.out.shape))
