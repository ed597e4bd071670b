"""Shared checks for the to_static tests: converted vs eager, values and gradients."""
import numpy as np

import d2s
from d2s.static.builder import flatten_outputs


def _leaves(out):
    leaves, _ = flatten_outputs(out)
    return leaves


def _fresh(args, requires_grad):
    """Copies of ``args`` (tensors re-created, floating ones requiring grad if asked)."""
    out = []
    for a in args:
        if isinstance(a, d2s.Tensor):
            t = d2s.tensor(a.numpy().copy())
            if requires_grad and t.dtype.is_floating_point:
                t.requires_grad_()
            out.append(t)
        else:
            out.append(a)
    return out


def _loss(out):
    """A scalar mixing every floating output with fixed weights (so each gets its own gradient)."""
    total = None
    for i, t in enumerate(_leaves(out)):
        if isinstance(t, d2s.Tensor) and t.dtype.is_floating_point and t.requires_grad:
            term = (t * (1.0 + 0.37 * (i + 1))).sum()
            total = term if total is None else total + term
    return total


def assert_same_structure(static_out, eager_out, atol=1e-5):
    """Same pytree structure, same Python values, same tensor values."""
    sl, el = flatten_outputs(static_out), flatten_outputs(eager_out)
    assert len(sl[0]) == len(el[0]), f"{len(sl[0])} tensors from static, {len(el[0])} from eager"
    marker_s = sl[1](list(range(len(sl[0]))))
    marker_e = el[1](list(range(len(el[0]))))
    assert marker_s == marker_e, f"output structure differs: {marker_s!r} vs {marker_e!r}"
    for s, e in zip(sl[0], el[0]):
        assert isinstance(s, d2s.Tensor)
        assert tuple(s.shape) == tuple(e.shape), (s.shape, e.shape)
        assert s.dtype == e.dtype, (s.dtype, e.dtype)
        np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-5, atol=atol)


def check(fn, *args, grad=True, atol=1e-5, static=None):
    """Run ``fn`` eagerly and through ``to_static`` on ``args``; values must match, and with
    ``grad`` the gradients w.r.t. every floating tensor argument too. Returns the StaticFunction."""
    sf = static or d2s.jit.to_static(fn)
    e_args = _fresh(args, grad)
    s_args = _fresh(args, grad)
    eager_out = fn(*e_args)
    static_out = sf(*s_args)
    assert_same_structure(static_out, eager_out, atol)
    if grad:
        le, ls = _loss(eager_out), _loss(static_out)
        if le is not None:
            assert ls is not None, "static outputs do not require grad"
            assert ls.grad_fn is not None
            le.backward()
            ls.backward()
            for e, s in zip(e_args, s_args):
                if isinstance(e, d2s.Tensor) and e.requires_grad:
                    if e.grad is None:
                        assert s.grad is None or np.allclose(s.grad.numpy(), 0)
                    else:
                        assert s.grad is not None, "static backward gave no gradient"
                        np.testing.assert_allclose(s.grad.numpy(), e.grad.numpy(), rtol=1e-4, atol=atol)
    return sf


def check_module(make, *args, train=True, atol=1e-5):
    """A module built twice from the same seed: one eager, one converted; forward values and
    parameter gradients must match. Returns (eager module, static module)."""
    d2s.manual_seed(0)
    eager = make()
    d2s.manual_seed(0)
    static = d2s.jit.to_static(make())
    static.load_state_dict(eager.state_dict())
    eager.train(train)
    static.train(train)
    eo = eager(*_fresh(args, False))
    so = static(*_fresh(args, False))
    assert_same_structure(so, eo, atol)
    le, ls = _loss(eo), _loss(so)
    if le is not None:
        le.backward()
        ls.backward()
        for (n, pe), (_, ps) in zip(eager.named_parameters(), static.named_parameters()):
            if pe.grad is None:
                assert ps.grad is None or np.allclose(ps.grad.numpy(), 0), n
            else:
                assert ps.grad is not None, f"no static gradient for {n}"
                np.testing.assert_allclose(ps.grad.numpy(), pe.grad.numpy(), rtol=1e-4, atol=atol, err_msg=n)
    return eager, static
