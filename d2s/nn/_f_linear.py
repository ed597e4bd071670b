"""``linear`` and ``bilinear`` of ``d2s.nn.functional``."""
from .. import ops as _ops
from ..ops.support import static_shape as _static_shape
from ..tensor import Tensor, tensor


def _t(x):
    return x if isinstance(x, Tensor) else tensor(x)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` with weight (out_features, in_features) (or a 1-d weight
    (in_features,), which drops the last dim, as PyTorch)."""
    x, weight = _t(input), _t(weight)
    if weight.ndim not in (1, 2):
        raise ValueError(f"linear: weight must be 2-d (out_features, in_features), got shape {tuple(weight.shape)}")
    xs = _static_shape(x)
    x_last, w_in = xs[-1] if xs else None, _static_shape(weight)[-1]
    if x_last is not None and w_in is not None and x_last != w_in:
        raise ValueError(f"linear: input has {x_last} features (shape {xs}) but the weight "
                         f"{tuple(_static_shape(weight))} expects {w_in}")
    target = [-1 if d is None else d for d in xs[:-1]] + [-1 if weight.ndim != 2 else _static_shape(weight)[0]]
    target = [-1 if d is None else d for d in target]
    if weight.ndim == 2 and len(xs) > 2 and xs[-1] is not None and target.count(-1) <= 1 and \
            (bias is None or _t(bias).ndim <= 1):
        # every leading dim is rows of ONE 2-d product (as PyTorch's linear computes it): numpy
        # would run a thin product per leading index (an LSTM's (T, B, I) input: T products of
        # B rows), and the weight's gradient would be T products and a sum
        out = _ops.matmul(_ops.reshape(x, [-1, xs[-1]]), _ops.transpose(weight))
        if bias is not None:
            out = out + bias
        return _ops.reshape(out, target)
    out = _ops.matmul(x, _ops.transpose(weight) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``."""
    x1, x2, w = _t(input1), _t(input2), _t(weight)
    if w.ndim != 3:
        raise ValueError(f"bilinear: weight must be 3-d (out, in1, in2), got shape {tuple(w.shape)}")
    s1, s2, sw = _static_shape(x1), _static_shape(x2), _static_shape(w)
    if (s1[-1] is not None and sw[1] is not None and s1[-1] != sw[1]) or \
            (s2[-1] is not None and sw[2] is not None and s2[-1] != sw[2]):
        raise ValueError(f"bilinear: input1 {s1} and input2 {s2} do not match the weight {sw} (out, in1, in2)")
    # (..., 1, 1, in1) @ (out, in1, in2) -> (..., out, 1, in2)
    left = _ops.matmul(_ops.unsqueeze(_ops.unsqueeze(x1, -2), -2), w)
    out = _ops.sum(_ops.squeeze(left, -2) * _ops.unsqueeze(x2, -2), axis=-1)
    return out if bias is None else out + bias
