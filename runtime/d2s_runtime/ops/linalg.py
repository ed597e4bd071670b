"""Matrix multiplication with NumPy's ``matmul`` semantics (1-d operands, batch broadcasting)."""
from ..dtypes import promote, result_type
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import broadcast_shapes, fmt_shape


def _matmul_infer(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must have at least 1 dim, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    k1, k2 = sa[-1], sb[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"matmul: shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} do not align "
                         f"({k1} != {k2}); transpose or reshape an operand")
    batch = broadcast_shapes("matmul", sa[:-2], sb[:-2])
    out = batch + (sa[-2], sb[-1])
    if a.ndim == 1:
        out = out[:-2] + out[-1:]
    if b.ndim == 1:
        out = out[:-1]
    return TensorType(out, result_type(a.dtype, b.dtype))


@defop("matmul", _matmul_infer, promotes=None, ufunc="matmul", out_ok=True, fresh=True)
def _matmul(xp, a, b):
    """Matrix product with numpy's ``matmul`` semantics (operands promoted to one dtype)."""
    if a.dtype is not b.dtype:
        a, b = promote((a, b))
    return xp.matmul(a, b)


@deflowering("matmul", "native")
def _matmul_native(e, a, b):
    """numba's ``np.dot`` (BLAS) on 1-d and 2-d operands; a bias/activation chain reading the
    result runs in place in its buffer (native/lower.py)."""
    return e.matmul(a, b)
