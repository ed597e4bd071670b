"""In-place semantics compared with PyTorch itself, where torch is installed (it is not a
dependency, so this is a peer comparison, not part of the test suite).

    python benchmarks/compare_inplace_pytorch.py

Each case is written once against a module ``T`` (torch or d2s); both must raise, or both
return the same values and gradients. Prints one line per case and the count that agree.
``tests/test_inplace.py`` checks the same semantics against hand-derived values.
"""
import sys

import numpy as np

import d2s


def _t(T, v, rg=False):
    return T.tensor(np.array(v, dtype=np.float32), requires_grad=rg)


def exp_output_modified(T):
    x = _t(T, [0.5, 1.0], True)
    y = x.exp()
    y.add_(1.0)
    y.sum().backward()
    return [x.grad]


def mul_input_modified(T):
    x = _t(T, [0.5, 1.0], True)
    a = x * 2.0
    b = a * a
    a.mul_(3.0)
    b.sum().backward()
    return [x.grad]


def add_input_modified(T):
    x = _t(T, [0.5, 1.0], True)
    a = x * 2.0
    b = a + 1.0
    a.add_(5.0)
    b.sum().backward()
    return [x.grad, a]


def tanh_input_modified(T):
    x = _t(T, [0.5, 1.0], True)
    a = x * 2.0
    b = a.tanh()
    a.add_(5.0)
    b.sum().backward()
    return [x.grad]


def sigmoid_detach_zero(T):
    x = _t(T, [0.5, 1.0], True)
    y = x.sigmoid()
    y.detach().zero_()
    y.sum().backward()
    return [x.grad]


def sigmoid_data_fill(T):
    x = _t(T, [0.5, 1.0], True)
    y = x.sigmoid()
    y.data.fill_(0.25)
    y.sum().backward()
    return [x.grad]


def leaf_add(T):
    x = _t(T, [0.5, 1.0], True)
    x.add_(1.0)
    return [x]


def leaf_iadd_no_grad(T):
    x = _t(T, [0.5, 1.0], True)
    with T.no_grad():
        x -= 0.25
        x.mul_(2.0)
    return [x]


def int_iadd_float(T):
    x = T.tensor(np.array([1, 2], dtype=np.int64))
    x += 0.5
    return [x]


def grow_target(T):
    x = _t(T, [1.0, 2.0, 3.0])
    x += _t(T, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    return [x]


def chain(T):
    x = _t(T, [0.5, -1.0, 2.0], True)
    w = _t(T, [0.3, -0.2, 0.1], True)
    y = x * 2.0
    y.add_(w, alpha=3.0)
    y.mul_(x)
    y.clamp_(max=2.0)
    y /= 2.0
    y.sum().backward()
    return [y, x.grad, w.grad]


def copy_fill_zero(T):
    v = _t(T, [1.0, 2.0], True)
    x = _t(T, [5.0, 6.0], True)
    z = x * 1.0
    z.copy_(v * 3.0)
    q = z * 1.0
    q.zero_()
    (z * z).sum().backward()
    r = _t(T, [1.0, 2.0]) * 1.0
    r.fill_(7.0)
    return [z, v.grad, x.grad, q, r]


def view_then_step(T):
    x = _t(T, [[1.0, 2.0, 3.0]], True)
    W = _t(T, [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], True)
    out = (x @ W.T).sum()
    with T.no_grad():
        W -= 0.1
    out.backward()
    return [x.grad]


def setitem_then_read(T):
    x = _t(T, [1.0, 2.0, 3.0], True)
    y = x * 1.0
    y[0] = y[0] * 3.0
    y.sum().backward()
    return [x.grad]


CASES = [exp_output_modified, mul_input_modified, add_input_modified, tanh_input_modified,
         sigmoid_detach_zero, sigmoid_data_fill, leaf_add, leaf_iadd_no_grad, int_iadd_float,
         grow_target, chain, copy_fill_zero, view_then_step, setitem_then_read]


def _run(T, case):
    try:
        out = case(T)
    except Exception as e:  # noqa: BLE001 - raising is the behaviour being compared
        return "raise", f"{type(e).__name__}: {e}"
    return "ok", [None if o is None else np.asarray(o.detach().numpy(), dtype=np.float64) for o in out]


def compare(torch, case):
    """None when d2s behaves as PyTorch on ``case``, else what differs."""
    (t_kind, t_out), (d_kind, d_out) = _run(torch, case), _run(d2s, case)
    if d_kind != t_kind:
        return f"PyTorch: {t_kind} {t_out if t_kind == 'raise' else ''}; d2s: {d_kind} {d_out}"
    if t_kind == "raise":
        return None
    for t, d in zip(t_out, d_out):
        if (t is None) != (d is None):
            return f"PyTorch gives {t}, d2s {d}"
        if t is not None and not np.allclose(d, t, rtol=1e-6, atol=1e-6):
            return f"values differ: PyTorch {t}, d2s {d}"
    return None


def main():
    try:
        import torch
    except ImportError:
        sys.exit("this comparison needs PyTorch: pip install torch (CPU build)")
    agree = 0
    for case in CASES:
        diff = compare(torch, case)
        agree += diff is None
        print(f"{case.__name__:<40} {'same as PyTorch' if diff is None else 'DIFFERS: ' + diff}")
    print(f"{agree} of {len(CASES)} cases behave as in PyTorch {torch.__version__}")
    return 0 if agree == len(CASES) else 1


if __name__ == "__main__":
    sys.exit(main())
