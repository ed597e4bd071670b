"""Linear algebra: matmul (runtime: ``d2s_runtime/ops/linalg.py``), with its gradient rule
and ONNX converter."""
from ..autograd.registry import grad_rule
from ..dispatch import apply
from ..onnx.registry import elementwise as onnx_elementwise
from ..tensor import tensor_method
from .shape import reshape, transpose, unsqueeze
from ._util import _is_diff, _shape, unbroadcast



@tensor_method()
def matmul(a, b):
    """Matrix product ``a @ b`` with NumPy's rules (1-d operands, batched leading dims)."""
    return apply("matmul", a, b)


@grad_rule("matmul")
def _matmul_grad(ctx, g):
    a, b = ctx.inputs
    sa, sb = _shape(a), _shape(b)
    ga = gb = None
    if len(sa) == 1 and len(sb) == 1:
        return (g * b if _is_diff(a) else None, g * a if _is_diff(b) else None)
    if len(sa) == 1:  # (k) @ (..., k, n) -> (..., n)
        if _is_diff(a):
            ga = unbroadcast(matmul(unsqueeze(g, -2), transpose(b, -1, -2)), (1,) + tuple(sa))
            ga = reshape(ga, list(sa))
        if _is_diff(b):
            gb = unbroadcast(unsqueeze(a, -1) * unsqueeze(g, -2), sb)
        return ga, gb
    if len(sb) == 1:  # (..., m, k) @ (k) -> (..., m)
        if _is_diff(a):
            ga = unbroadcast(unsqueeze(g, -1) * b, sa)
        if _is_diff(b):
            gb = reshape(unbroadcast(matmul(transpose(a, -1, -2), unsqueeze(g, -1)), tuple(sb) + (1,)), list(sb))
        return ga, gb
    if _is_diff(a):
        ga = unbroadcast(matmul(g, transpose(b, -1, -2)), sa)
    if _is_diff(b):
        gb = unbroadcast(matmul(transpose(a, -1, -2), g), sb)
    return ga, gb


onnx_elementwise("matmul", "MatMul")
