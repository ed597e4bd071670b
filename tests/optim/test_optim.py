"""d2s.optim: SGD and Adam against numpy versions of PyTorch's update formulas."""
import numpy as np
import pytest

import d2s
from d2s import nn, optim


def _grads(shape, steps, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(steps)]


def _run(opt, params, grads_per_param):
    """Apply steps with the given gradients; returns the parameters' values after each step."""
    history = []
    for step_grads in zip(*grads_per_param):
        for p, g in zip(params, step_grads):
            p.grad = d2s.tensor(g)
        opt.step()
        history.append([p.numpy().copy() for p in params])
    return history


def _sgd_ref(p0, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    p, buf, out = p0.copy(), None, []
    for g in grads:
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p.copy())
    return out


def _adam_ref(p0, grads, lr, b1, b2, eps, weight_decay=0.0):
    p, m, v, out = p0.copy(), np.zeros_like(p0), np.zeros_like(p0), []
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p.copy())
    return out


@pytest.mark.parametrize("kwargs", [dict(lr=0.1), dict(lr=0.05, momentum=0.9), dict(lr=0.1, momentum=0.5, dampening=0.3),
                                    dict(lr=0.1, momentum=0.9, nesterov=True), dict(lr=0.1, weight_decay=0.01)])
def test_sgd_matches_reference(kwargs):
    p0 = [np.random.default_rng(1).standard_normal((3, 2)), np.random.default_rng(2).standard_normal(4)]
    params = [nn.Parameter(a.copy()) for a in p0]
    grads = [_grads(a.shape, 5, seed=i) for i, a in enumerate(p0)]
    history = _run(optim.SGD(params, **kwargs), params, grads)
    for i in range(2):
        ref = _sgd_ref(p0[i], grads[i], **kwargs)
        for step in range(5):
            np.testing.assert_allclose(history[step][i], ref[step], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kwargs", [dict(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8), dict(lr=0.1, b1=0.5, b2=0.9, eps=1e-3),
                                    dict(lr=0.01, b1=0.9, b2=0.99, eps=1e-8, weight_decay=0.1)])
def test_adam_matches_reference_with_bias_correction(kwargs):
    p0 = np.random.default_rng(3).standard_normal((4, 3))
    p = nn.Parameter(p0.copy())
    grads = _grads(p0.shape, 6, seed=4)
    opt = optim.Adam([p], lr=kwargs["lr"], betas=(kwargs["b1"], kwargs["b2"]), eps=kwargs["eps"],
                     weight_decay=kwargs.get("weight_decay", 0.0))
    history = _run(opt, [p], [grads])
    ref = _adam_ref(p0, grads, **kwargs)
    for step in range(6):
        np.testing.assert_allclose(history[step][0], ref[step], rtol=1e-12, atol=1e-14)
    # the first step moves every entry by about lr (bias correction makes m_hat/sqrt(v_hat) = sign(g))
    if kwargs["eps"] < 1e-6 and not kwargs.get("weight_decay"):
        np.testing.assert_allclose(np.abs(ref[0] - p0), kwargs["lr"], rtol=1e-4)


def test_step_keeps_parameter_objects_dtype_and_skips_missing_grads():
    lin = nn.Linear(3, 2)
    w_id, w_dtype = id(lin.weight), lin.weight.dtype
    opt = optim.SGD(lin.parameters(), lr=0.1)
    x = d2s.tensor(np.ones((4, 3), dtype=np.float32))
    d2s.sum(lin(x)).backward()
    b_before = lin.bias.numpy().copy()
    lin.bias.grad = None
    w_before = lin.weight.numpy().copy()
    opt.step()
    assert id(lin.weight) == w_id and lin.weight.dtype == w_dtype
    np.testing.assert_allclose(lin.weight.numpy(), w_before - 0.1 * 4, rtol=1e-6)
    np.testing.assert_array_equal(lin.bias.numpy(), b_before)


def test_zero_grad_clears_gradients():
    lin = nn.Linear(2, 2)
    opt = optim.Adam(lin.parameters())
    d2s.sum(lin(d2s.ones(1, 2))).backward()
    assert all(p.grad is not None for p in lin.parameters())
    opt.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in lin.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in lin.parameters())


def test_parameter_groups_use_their_own_hyperparameters():
    a, b = nn.Parameter(np.zeros(2)), nn.Parameter(np.zeros(2))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    a.grad = b.grad = d2s.tensor(np.ones(2))
    opt.step()
    np.testing.assert_allclose(a.numpy(), -0.1)
    np.testing.assert_allclose(b.numpy(), -1.0)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]


@pytest.mark.parametrize("make", [lambda ps: optim.Adam(ps, lr=0.1), lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)])
def test_state_dict_round_trip_continues_identically(make):
    p0 = np.random.default_rng(0).standard_normal(5)
    grads = _grads((5,), 6, seed=1)
    p1 = nn.Parameter(p0.copy())
    opt1 = make([p1])
    _run(opt1, [p1], [grads[:3]])
    sd = opt1.state_dict()
    assert list(sd["state"]) == [0] and sd["param_groups"][0]["params"] == [0]
    p2 = nn.Parameter(p1.numpy().copy())
    opt2 = make([p2])
    opt2.load_state_dict(sd)
    h1 = _run(opt1, [p1], [grads[3:]])
    h2 = _run(opt2, [p2], [grads[3:]])
    np.testing.assert_array_equal(h1[-1][0], h2[-1][0])
    # the saved state is a copy: stepping opt1 further did not change it
    key = "exp_avg" if "exp_avg" in sd["state"][0] else "momentum_buffer"
    assert not np.array_equal(sd["state"][0][key].numpy(), opt1.state[p1][key].numpy())


def test_load_state_dict_rejects_a_different_parameter_layout():
    opt = optim.SGD([nn.Parameter(np.zeros(2))], lr=0.1)
    other = optim.SGD([nn.Parameter(np.zeros(2)), nn.Parameter(np.zeros(3))], lr=0.1)
    with pytest.raises(ValueError, match="parameter groups"):
        opt.load_state_dict(other.state_dict())


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        optim.Adam([nn.Parameter(np.zeros(1))], lr=-1)
    with pytest.raises(ValueError, match="beta parameter"):
        optim.Adam([nn.Parameter(np.zeros(1))], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="leaf"):
        optim.SGD([nn.Parameter(np.zeros(1)) * 2], lr=0.1)


def _adam_reference(w, grads, lr, b1, b2, eps, wd, decoupled, amsgrad):
    """torch.optim.Adam / AdamW in numpy."""
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    vmax = np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        if wd and decoupled:
            w = w * (1 - lr * wd)
        elif wd:
            g = g + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vv = vmax if amsgrad else v
        w = w - lr / (1 - b1 ** t) * m / (np.sqrt(vv) / np.sqrt(1 - b2 ** t) + eps)
    return w


@pytest.mark.parametrize("cls, decoupled", [(optim.Adam, False), (optim.AdamW, True)])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_and_amsgrad_match_pytorch_formulas(cls, decoupled, amsgrad):
    w0 = np.random.default_rng(5).standard_normal((3, 2))
    grads = _grads((3, 2), 6, seed=6)
    p = nn.Parameter(d2s.tensor(w0))
    opt = cls([p], lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=amsgrad)
    _run(opt, [p], [grads])
    ref = _adam_reference(w0, grads, 0.05, 0.8, 0.95, 1e-6, 0.1, decoupled, amsgrad)
    np.testing.assert_allclose(p.numpy(), ref, rtol=1e-10, atol=1e-12)
    assert optim.AdamW([nn.Parameter(d2s.ones(1))]).defaults["weight_decay"] == 0.01


def test_step_calls_the_closure_with_grad_enabled_and_returns_its_loss():
    w = nn.Parameter(d2s.tensor([1.0, 2.0]))
    opt = optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with d2s.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6], rtol=1e-6)
    assert opt.step() is None
