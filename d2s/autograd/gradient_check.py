"""Numerical gradient checking: analytic gradients against central finite differences."""
import numpy as np

from ..tensor import Tensor, tensor
from .engine import grad
from .grad_mode import no_grad


class GradcheckError(AssertionError):
    """An analytic gradient differs from its finite-difference estimate."""


def gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Check d2s's gradients of ``f`` at ``inputs`` against central finite differences.

    Args:
        f: a function of the inputs returning a tensor (or a tuple/list of tensors).
        inputs: a tensor, or a tuple/list of them (numpy arrays and Python numbers are
            accepted). Floating point inputs are checked, in float64; others pass through.
        eps: the finite-difference step.
        atol, rtol: an entry passes when ``|analytic - numeric| <= atol + rtol * |numeric|``.

    Returns:
        True when every entry passes.

    Raises:
        GradcheckError naming the worst entry: which input and output, the index, and the
        analytic and numeric values.
    """
    single = not isinstance(inputs, (tuple, list))
    inputs = [inputs] if single else list(inputs)
    xs, diff = [], []
    for a in inputs:
        t = a if isinstance(a, Tensor) else tensor(np.asarray(a))
        if t.dtype.is_floating_point:
            t = tensor(np.array(t.numpy(), dtype=np.float64), requires_grad=True)
            diff.append(len(xs))
        xs.append(t)
    if not diff:
        raise ValueError("gradcheck: none of the inputs is a floating point tensor")

    def outputs(args):
        out = f(*args)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    outs = outputs(xs)
    worst = None  # (excess over tolerance, message)
    for k, y in enumerate(outs):
        if not isinstance(y, Tensor) or not y.dtype.is_floating_point:
            continue
        y_np = y.numpy()
        analytic = _analytic(y, [xs[i] for i in diff], y_np.shape)
        numeric = _numeric(outputs, xs, diff, k, eps, y_np.shape)
        for j, i in enumerate(diff):
            a, n = analytic[j], numeric[j]
            err = np.abs(a - n) - (atol + rtol * np.abs(n))
            if err.size and (worst is None or err.max() > worst[0]):
                flat = int(np.argmax(err))
                n_out = len(y_np.shape)
                pos = np.unravel_index(flat, err.shape)
                worst = (float(err.max()),
                         f"input {i} at index {tuple(int(p) for p in pos[n_out:])}, output {k} at index "
                         f"{tuple(int(p) for p in pos[:n_out])}: analytic {float(a.flat[flat]):.8g} vs numeric {float(n.flat[flat]):.8g}")
    if worst is not None and worst[0] > 0:
        raise GradcheckError(f"gradcheck failed (eps={eps}, atol={atol}, rtol={rtol}); worst entry: {worst[1]}")
    return True


def _analytic(y, xs, y_shape):
    """Jacobian blocks d y / d x, each of shape y_shape + x.shape, one backward per output entry."""
    jac = [np.zeros(y_shape + tuple(x.shape)) for x in xs]
    if not y.requires_grad:  # f does not depend on any input
        return jac
    n = int(np.prod(y_shape, dtype=np.int64))
    for e in range(n):
        seed = np.zeros(n)
        seed[e] = 1.0
        gs = grad([y], xs, grad_outputs=[tensor(seed.reshape(y_shape))], retain_graph=True, allow_unused=True)
        pos = np.unravel_index(e, y_shape) if y_shape else ()
        for j, g in enumerate(gs):
            if g is not None:
                jac[j][pos] = np.broadcast_to(g.numpy(), tuple(xs[j].shape))
    return jac


def _numeric(outputs, xs, diff, k, eps, y_shape):
    """Central differences (f(x + eps) - f(x - eps)) / 2 eps of output ``k``, entry by entry."""
    jac = []
    for i in diff:
        base = xs[i].numpy()
        J = np.zeros(y_shape + base.shape)
        for idx in np.ndindex(*base.shape):
            vals = []
            for step in (eps, -eps):
                moved = base.copy()
                moved[idx] += step
                args = list(xs)
                args[i] = tensor(moved)
                with no_grad():
                    vals.append(np.asarray(outputs(args)[k].numpy(), dtype=np.float64))
            J[(Ellipsis,) + idx] = (vals[0] - vals[1]) / (2 * eps)
        jac.append(J)
    return jac
