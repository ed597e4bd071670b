"""Every optimizer against PyTorch: parameters after N steps (several option sets, four parameter
shapes including a 0-d one, parameter groups, a parameter without a gradient on one step), the
first parameter's state (names, values, dtypes: ``step`` a float32 scalar) and the groups'
keys, stored as torch's results (``python -m tests.torch_parity optim.test_optimizers``) and
compared live where torch imports. Then what the parity cases do not cover: state dicts that
continue identically (also from a PyTorch state dict), the "strict" device with no host
synchronization, and training a ``to_static`` model with gradients from its program's backward.
"""
import numpy as np
import pytest

import d2s
import strict_device as sd
import torch_parity
from d2s import nn, optim
from d2s_runtime.device import to_host
from torch_parity import Case

RNG = np.random.default_rng(11)
SHAPES = [(3, 4), (5,), (2, 3, 2), ()]


def _arrays(dtype):
    ws = [RNG.standard_normal(s).astype(dtype) for s in SHAPES]
    return [*ws, RNG.standard_normal((4, 2)).astype(dtype)]


def _loss(lib, P, x):
    return ((lib.tanh(P[0] @ x) ** 2).sum() + ((P[1] - 0.5) ** 4).sum() + (P[2] * lib.sin(P[2])).sum()
            + P[3] * P[3] * 0.5)


def _steps(lib, name, kwargs, w1, w2, w3, w4, x, steps=5, group=None):
    """``steps`` updates of ``name(**kwargs)`` on four parameters (the last ones in a second
    group with the options ``group`` when given); the parameters, the first parameter's state
    and the keys of the state and of the first group."""
    P = [lib.nn.Parameter(w.clone()) for w in (w1, w2, w3, w4)]
    spec = P if group is None else [{"params": P[:2]}, {"params": P[2:], **group}]
    kwargs = {k: (lib.tensor(v) if k == "lr" and isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    opt = getattr(lib.optim, name)(spec, **kwargs)

    def closure():
        opt.zero_grad()
        loss = _loss(lib, P, x)
        loss.backward()
        return loss

    for k in range(steps):
        if name == "LBFGS":
            opt.step(closure)
            continue
        closure()
        if k == 2:
            P[1].grad = None  # skipped this step: no update, its state untouched
        opt.step()
    state = opt.state[P[0]]
    if name == "LBFGS":
        return tuple(p.detach() for p in P), [state["func_evals"], state["n_iter"]]
    return (tuple(p.detach() for p in P), [state[k] for k in state], list(state), sorted(opt.param_groups[0]))


def _case(name, kwargs, dtype=np.float64, steps=5, group=None, label=""):
    # float32: the two libraries' forward and backward differ in the last bits, which 5 steps of
    # an adaptive method (dividing by small second moments) can grow to about 1e-5
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    args = _arrays(dtype)
    opts = ",".join(f"{k}={v}" for k, v in kwargs.items())
    suffix = f"-group({','.join(f'{k}={v}' for k, v in group.items())})" if group else ""
    return Case(f"{name}({opts}){suffix}-{np.dtype(dtype).name}{label}",
                lambda lib, *a: _steps(lib, name, kwargs, *a, steps=steps, group=group), *args,
                grad=False, static="an optimizer step runs eagerly on concrete gradients", **tol)


OPTIONS = {
    "SGD": [dict(lr=0.1), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
            dict(lr=0.1, momentum=0.5, dampening=0.3, maximize=True)],
    "Adam": [dict(), dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1), dict(lr=0.05, amsgrad=True),
             dict(lr=0.05, maximize=True, amsgrad=True, weight_decay=0.01),
             dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)],
    "AdamW": [dict(lr=0.05), dict(lr=0.05, amsgrad=True, weight_decay=0.1)],
    "RMSprop": [dict(), dict(lr=0.01, alpha=0.9, momentum=0.9), dict(lr=0.01, centered=True, weight_decay=0.1),
                dict(lr=0.01, centered=True, momentum=0.5, maximize=True)],
    "Adagrad": [dict(), dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1, eps=1e-6)],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)],
    "Adamax": [dict(), dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)],
    "NAdam": [dict(), dict(lr=0.05, momentum_decay=0.01, weight_decay=0.1),
              dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)],
    "RAdam": [dict(lr=0.05), dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1),
              dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)],
    "ASGD": [dict(), dict(lr=0.05, lambd=1e-3, alpha=0.5, t0=2, weight_decay=0.1)],
    "Rprop": [dict(), dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)],
}
GROUPS = {"SGD": dict(lr=0.01, momentum=0.5), "Adam": dict(lr=0.01, betas=(0.5, 0.9)), "AdamW": dict(weight_decay=0.0),
          "RMSprop": dict(momentum=0.9, centered=True), "Adagrad": dict(lr=0.5, initial_accumulator_value=1.0),
          "Adadelta": dict(rho=0.5), "Adamax": dict(lr=0.01), "NAdam": dict(momentum_decay=0.1),
          "RAdam": dict(betas=(0.5, 0.8)), "ASGD": dict(t0=1), "Rprop": dict(lr=0.2)}

def _resumed(lib, name, kwargs, w1, w2, w3, w4, x):
    """3 steps, the state dict loaded into a new optimizer, 3 more steps (a resumed run): the
    parameters, how many parameters have state, and the first one's state."""
    P = [lib.nn.Parameter(w.clone()) for w in (w1, w2, w3, w4)]
    opt = getattr(lib.optim, name)(P, **kwargs)

    def step():
        opt.zero_grad()
        _loss(lib, P, x).backward()
        opt.step()

    for _ in range(3):
        step()
    saved = opt.state_dict()
    opt = getattr(lib.optim, name)(P, **kwargs)
    opt.load_state_dict(saved)
    for _ in range(3):
        step()
    state = opt.state.get(P[0], {})
    return tuple(p.detach() for p in P), lib.tensor(len(opt.state_dict()["state"])), [state[k] for k in state]


def _resumed_case(name, kwargs):
    return Case(f"{name}({','.join(f'{k}={v}' for k, v in kwargs.items())})-resumed",
                lambda lib, *a: _resumed(lib, name, kwargs, *a), *_arrays(np.float64), grad=False,
                static="an optimizer step runs eagerly on concrete gradients", rtol=1e-12, atol=1e-14)


def _float64_default(lib, name, kwargs, *arrays):
    """``_steps`` with float64 as the default dtype (scientific scripts set it): PyTorch keeps
    its scalar state (step, NAdam's mu_product, ASGD's eta and mu) in float64 then."""
    lib.set_default_dtype(lib.float64)
    try:
        return _steps(lib, name, kwargs, *arrays)
    finally:
        lib.set_default_dtype(lib.float32)


def _float64_default_case(name, kwargs):
    return Case(f"{name}({','.join(f'{k}={v}' for k, v in kwargs.items())})-default-float64",
                lambda lib, *a: _float64_default(lib, name, kwargs, *a), *_arrays(np.float64), grad=False,
                static="an optimizer step runs eagerly on concrete gradients", rtol=1e-13, atol=1e-15)


TORCH_CASES = []
for _name, _opts in OPTIONS.items():
    _n = 10 if _name == "RAdam" else 5  # RAdam's rectified steps start after about 6
    TORCH_CASES += [_case(_name, o, steps=_n) for o in _opts]
    TORCH_CASES.append(_case(_name, _opts[0], dtype=np.float32, steps=_n))
    TORCH_CASES.append(_case(_name, _opts[-1], steps=_n, group=GROUPS[_name]))
TORCH_CASES += [
    _case("SGD", dict(lr=np.array(0.05, np.float32), momentum=0.9), label="-lr-tensor"),
    _case("Adam", dict(lr=np.array(0.05, np.float32)), label="-lr-tensor"),
    _case("LBFGS", dict(lr=1)),
    _case("LBFGS", dict(lr=0.5, history_size=2, max_iter=5), label="-short-history"),
    _case("LBFGS", dict(lr=1, line_search_fn="strong_wolfe"), steps=3),
    # ASGD's eta and mu, float64 after loading, take each new value rounded through float32 as
    # PyTorch's as_tensor gives it (d2s kept float64 values: 1e-8 relative off); SGD without
    # momentum has no state entries (d2s had an empty one per parameter)
    _resumed_case("ASGD", dict(lr=0.05, lambd=1e-2, t0=2)),
    _resumed_case("SGD", dict(lr=0.1)),
    _resumed_case("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    _resumed_case("Adam", dict(lr=0.05, amsgrad=True, maximize=True)),
    _resumed_case("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
    # the scalar state in float64 under a float64 default dtype (d2s kept float32: NAdam's and
    # ASGD's parameters 1e-9 relative off, every step counter's dtype float32)
    _float64_default_case("NAdam", dict(lr=0.05, momentum_decay=0.01)),
    _float64_default_case("ASGD", dict(lr=0.05, lambd=1e-2, t0=2)),
    _float64_default_case("Adam", dict(lr=0.05)),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


# ------------------------------------------------------------------ state dicts
def _model_and_data(device="cpu"):
    d2s.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()  # made on the cpu
    rng = np.random.default_rng(3)
    x = d2s.tensor(rng.standard_normal((6, 4)), device=device)
    y = d2s.tensor(rng.standard_normal((6, 2)), device=device)
    return model.to(device), x, y


def _train(model, opt, x, y, steps):
    for _ in range(steps):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


MAKERS = {name: (lambda ps, n=name, o=opts[-1]: getattr(optim, n)(ps, **o)) for name, opts in OPTIONS.items()}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_state_dict_round_trip_continues_identically(name):
    model, x, y = _model_and_data()
    opt = MAKERS[name](model.parameters())
    _train(model, opt, x, y, 3)
    saved_params = model.state_dict()
    sd_ = opt.state_dict()
    assert sorted(sd_) == ["param_groups", "state"]
    assert sd_["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert sorted(sd_["state"]) == [0, 1, 2, 3]
    twin, _, _ = _model_and_data()
    twin.load_state_dict(saved_params)
    opt2 = MAKERS[name](twin.parameters())
    opt2.load_state_dict(sd_)
    _train(model, opt, x, y, 3)
    _train(twin, opt2, x, y, 3)
    # loading casts scalar state (NAdam's mu_product: float32) to the parameters' dtype, as
    # PyTorch does, so it continues in float64 and differs in the last bits (ASGD's eta and mu too,
    # but their new values are rounded through float32 as PyTorch's)
    rtol = 1e-7 if name == "NAdam" else 0
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=0)
    # the saved state is a copy: the steps taken since did not change it
    key = next(k for k, v in sd_["state"][0].items() if isinstance(v, d2s.Tensor) and v.ndim)
    assert not np.array_equal(sd_["state"][0][key].numpy(), opt.state[next(iter(model.parameters()))][key].numpy())


def test_load_state_dict_casts_floating_state_to_the_parameter_and_keeps_step_float32():
    p = nn.Parameter(d2s.tensor(np.ones(3, np.float32)))
    opt = optim.Adam([p], lr=0.1)
    saved = {"state": {0: {"step": d2s.tensor(np.float64(4.0)), "exp_avg": np.zeros(3),
                           "exp_avg_sq": np.ones(3)}},
             "param_groups": [dict(opt.state_dict()["param_groups"][0], lr=0.5)]}
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["params"] == [p]
    st = opt.state[p]
    assert st["exp_avg"].dtype == "float32" and st["exp_avg_sq"].dtype == "float32"
    assert st["step"].dtype == "float64" and float(st["step"]) == 4.0  # step keeps its dtype, as in PyTorch


def test_load_state_dict_rejects_other_layouts_and_shapes():
    opt = optim.SGD([nn.Parameter(np.zeros(2))], lr=0.1, momentum=0.9)
    other = optim.SGD([nn.Parameter(np.zeros(2)), nn.Parameter(np.zeros(3))], lr=0.1)
    with pytest.raises(ValueError, match="parameter groups"):
        opt.load_state_dict(other.state_dict())
    bad = {"state": {0: {"momentum_buffer": np.zeros(5)}}, "param_groups": opt.state_dict()["param_groups"]}
    with pytest.raises(ValueError, match=r"shape \(5,\)"):
        opt.load_state_dict(bad)


def test_a_pytorch_state_dict_loads_and_training_continues_as_in_pytorch():
    torch = torch_parity.live_torch()
    if torch is None:
        pytest.skip("needs torch (a PyTorch state dict)")
    w0, x0, y0 = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4)), RNG.standard_normal((5, 3))

    def steps(lib, w, opt, n):
        x, y = lib.tensor(x0), lib.tensor(y0)
        for _ in range(n):
            opt.zero_grad()
            ((x @ w.T - y) ** 2).sum().backward()
            opt.step()

    for name, kwargs in [("Adam", dict(lr=0.05, amsgrad=True)), ("SGD", dict(lr=0.1, momentum=0.9)),
                         ("NAdam", dict(lr=0.05)), ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
                         ("Adagrad", dict(lr=0.1))]:
        tw = torch.nn.Parameter(torch.tensor(w0.copy()))
        topt = getattr(torch.optim, name)([tw], **kwargs)
        steps(torch, tw, topt, 3)
        mid, saved = tw.detach().numpy().copy(), topt.state_dict()
        # converted now: PyTorch's state dict holds its live state tensors, which the next steps change
        converted = {"state": {k: {n: (v.numpy().copy() if hasattr(v, "numpy") else v) for n, v in s.items()}
                               for k, s in saved["state"].items()},
                     "param_groups": saved["param_groups"]}
        steps(torch, tw, topt, 3)
        w = nn.Parameter(d2s.tensor(mid))
        opt = getattr(optim, name)([w], **kwargs)
        opt.load_state_dict(converted)
        steps(d2s, w, opt, 3)
        # NAdam's mu_product: PyTorch continues with its float32 product, the loaded one is cast to
        # the parameter's float64 (as PyTorch's own load_state_dict casts it)
        rtol = 1e-7 if name == "NAdam" else 1e-10
        np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=rtol, atol=1e-12, err_msg=name)


# ------------------------------------------------------------------ groups and arguments
def test_param_groups_are_editable_and_add_param_group_uses_the_defaults():
    a, b = nn.Parameter(np.zeros(2)), nn.Parameter(np.zeros(2))
    opt = optim.SGD([a], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": b, "lr": 1.0})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0] and opt.param_groups[1]["momentum"] == 0.5
    opt.param_groups[0]["lr"] = 0.01  # what schedulers and users do
    a.grad = b.grad = d2s.tensor(np.ones(2))
    opt.step()
    np.testing.assert_allclose(a.numpy(), -0.01)
    np.testing.assert_allclose(b.numpy(), -1.0)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {nn.Parameter(np.zeros(1))}})


def test_named_parameters_are_kept_as_param_names():
    lin = nn.Linear(2, 3)
    opt = optim.Adam(lin.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_zero_grad_set_to_none_false_zeroes_in_place():
    p = nn.Parameter(np.ones(3))
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and np.all(g.numpy() == 0)
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("bad, match", [
    (lambda p: optim.SGD(p, lr=-1), "Invalid learning rate"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.9)), "beta parameter at index 0"),
    (lambda p: optim.Adam(p, eps=-1), "epsilon"),
    (lambda p: optim.RMSprop(p, alpha=-0.5), "alpha"),
    (lambda p: optim.Adadelta(p, rho=1.5), "rho"),
    (lambda p: optim.Rprop(p, etas=(1.5, 0.5)), "eta"),
    (lambda p: optim.Adam(p, differentiable=True), r"differentiable=True\) is not supported"),
    (lambda p: optim.LBFGS([{"params": p[:1]}, {"params": p[1:]}]), "parameter groups"),
])
def test_bad_arguments_raise_pytorchs_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        bad([nn.Parameter(np.zeros(1)), nn.Parameter(np.zeros(1))])


def test_foreach_and_fused_are_accepted_and_change_nothing():
    ref, got = nn.Parameter(np.ones(3)), nn.Parameter(np.ones(3))
    opts = [optim.Adam([ref], lr=0.1), optim.Adam([got], lr=0.1, foreach=True, fused=False)]
    for p, o in zip((ref, got), opts):
        p.grad = d2s.tensor([1.0, -2.0, 3.0])
        o.step()
    np.testing.assert_array_equal(ref.numpy(), got.numpy())


def test_step_hooks_run_around_step():
    p = nn.Parameter(np.ones(1))
    opt = optim.SGD([p], lr=0.1)
    calls = []
    h = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", float(p))))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", float(p))))
    p.grad = d2s.tensor([1.0])
    opt.step()
    h.remove()
    opt.step()
    assert calls == [("pre", 1.0), ("post", 0.9), ("post", pytest.approx(0.8))]


# ------------------------------------------------------------------ devices and programs
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_a_step_on_the_strict_device_makes_no_sync_and_equals_cpu(name):
    results = []
    for device in ("strict", "cpu"):
        model, x, y = _model_and_data(device)
        prev = d2s.set_default_device(device)
        try:
            opt = MAKERS[name](model.parameters())
            for _ in range(3):
                opt.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
                with sd.counting() as c:
                    opt.step()
                if device == "strict":
                    assert c.syncs == 0 and c.to_device == 0 and c.to_host == 0, c.sync_kinds
            results.append([to_host(p._data) for p in model.parameters()])
        finally:
            d2s.set_default_device(prev)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


class _Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 6), nn.Linear(6, 2)

    def forward(self, x):
        h = self.a(x).tanh()
        if h.mean() > 0:
            h = h * 2
        return self.b(h)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_training_a_to_static_model_equals_eager(name):
    d2s.manual_seed(1)
    eager = _Branchy().double()
    static = _Branchy().double()
    static.load_state_dict(eager.state_dict())
    static = d2s.jit.to_static(static)
    opts = [MAKERS[name](list(m.parameters())) for m in (eager, static)]
    xs = [RNG.standard_normal((4, 3)) + s for s in (1.0, -1.0, 1.0, -1.0)]
    for xv in xs:
        for m, o in zip((eager, static), opts):
            o.zero_grad()
            (m(d2s.tensor(xv)) ** 2).sum().backward()
            o.step()
        for pe, ps in zip(eager.parameters(), static.parameters()):
            np.testing.assert_allclose(ps.numpy(), pe.numpy(), rtol=1e-9, atol=1e-11)


def test_lbfgs_under_to_static_with_a_closure():
    d2s.manual_seed(2)
    eager = _Branchy().double()
    static = _Branchy().double()
    static.load_state_dict(eager.state_dict())
    static = d2s.jit.to_static(static)
    x = d2s.tensor(RNG.standard_normal((5, 3)))
    for m in (eager, static):
        opt = optim.LBFGS(m.parameters(), lr=0.5, max_iter=4)

        def closure():
            opt.zero_grad()
            loss = (m(x) ** 2).mean()
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
    for pe, ps in zip(eager.parameters(), static.parameters()):
        np.testing.assert_allclose(ps.numpy(), pe.numpy(), rtol=1e-8, atol=1e-10)


def test_a_custom_optimizer_written_the_pytorch_way():
    class MySGD(optim.Optimizer):
        def __init__(self, params, lr=0.01, momentum=0.0):
            super().__init__(params, dict(lr=lr, momentum=momentum))

        @d2s.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self.state[p]
                    if "buf" not in st:
                        st["buf"] = p.grad.clone()
                    else:
                        st["buf"].mul_(group["momentum"]).add_(p.grad)
                    p.add_(st["buf"], alpha=-group["lr"])

    ref, got = nn.Parameter(np.ones(3)), nn.Parameter(np.ones(3))
    mine, builtin = MySGD([got], lr=0.1, momentum=0.9), optim.SGD([ref], lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.StepLR(mine, 1, 0.5)
    builtin_sched = optim.lr_scheduler.StepLR(builtin, 1, 0.5)
    for _ in range(3):
        for p, o, s in ((got, mine, sched), (ref, builtin, builtin_sched)):
            o.zero_grad()
            (p * p).sum().backward()
            o.step()
            s.step()
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-12)
    assert list(mine.state_dict()["state"][0]) == ["buf"]
