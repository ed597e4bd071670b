"""The in-place call rewrite (d2s/transformers/inplace_calls.py) on chains of in-place calls:
PyTorch's running-statistics idiom ``self.running_mean.mul_(1 - m).add_(m * mean)`` converts and
updates the buffer inside the program as eager code updates it; a chain on a local name inside a
tensor ``if`` carries the value out; the arguments of later calls see the earlier updates."""
import numpy as np

import d2s
from d2s import nn
from d2s.transformers.inplace_calls import InplaceCalls  # noqa: F401  (the module under test)


class HandWrittenBatchNorm(nn.Module):
    """BatchNorm as newcomers write it: register_buffer and the chained in-place update."""

    def __init__(self, c, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        self.weight = nn.Parameter(d2s.ones(c))
        self.bias = nn.Parameter(d2s.zeros(c))
        self.register_buffer("running_mean", d2s.zeros(c))
        self.register_buffer("running_var", d2s.ones(c))

    def forward(self, x):
        if self.training:
            mean = x.mean(axis=0)
            var = ((x - mean) ** 2).mean(axis=0)
            with d2s.no_grad():
                m = self.momentum
                self.running_mean.mul_(1 - m).add_(m * mean)
                self.running_var.mul_(1 - m).add_(m * var * x.shape[0] / (x.shape[0] - 1))
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / d2s.sqrt(var + 1e-5) * self.weight + self.bias


def _train(model, fn, xs):
    opt = d2s.optim.SGD(model.parameters(), lr=0.1)
    for x in xs:
        loss = (fn(d2s.tensor(x)) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def test_chained_buffer_update_converts_and_matches_eager():
    xs = [np.random.default_rng(k).standard_normal((6, 3)).astype("float32") * (k + 1) for k in range(3)]
    eager = HandWrittenBatchNorm(3)
    _train(eager, eager, xs)
    model = HandWrittenBatchNorm(3)
    static = d2s.jit.to_static(model)
    _train(model, static, xs)
    assert "call_inplace" in static.forward.code
    for name in ("running_mean", "running_var", "weight", "bias"):
        np.testing.assert_allclose(getattr(model, name).numpy(), getattr(eager, name).numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    assert list(model.state_dict()) == ["weight", "bias", "running_mean", "running_var"]
    model.eval()
    eager.eval()
    np.testing.assert_allclose(static(d2s.tensor(xs[0])).numpy(), eager(d2s.tensor(xs[0])).numpy(), rtol=1e-5)


def _chain_in_branch(x, flag):
    y = x * 1.0
    if flag.sum() > 0:
        y.mul_(2.0).add_(y)  # the argument reads y after mul_: 2y + 2y
    else:
        y.add_(1.0).mul_(3.0)
    return y


def test_chain_on_a_local_inside_a_tensor_if():
    f = d2s.jit.to_static(_chain_in_branch)
    x = np.arange(3.0, dtype="float32")
    for flag, want in ((1.0, 4 * x), (-1.0, 3 * (x + 1))):
        np.testing.assert_allclose(f(d2s.tensor(x), d2s.tensor([flag])).numpy(), want)
        np.testing.assert_allclose(_chain_in_branch(d2s.tensor(x), d2s.tensor([flag])).numpy(), want)


COUNT = d2s.zeros([])


def _bumps_a_global(x):
    COUNT.add_(1)
    return x * COUNT


def test_a_global_or_closure_tensor_updated_in_place_is_not_made_local():
    # `COUNT = call_inplace(COUNT, ...)` made COUNT local: UnboundLocalError at the first read
    static, x = d2s.jit.to_static(_bumps_a_global), d2s.ones(2)
    COUNT.zero_()
    for want in (1.0, 2.0, 3.0):
        np.testing.assert_array_equal(static(x).numpy(), [want, want])
        assert float(COUNT) == want
    total = d2s.zeros([])

    def bumps_a_closure(x):
        total.add_(x.sum()).mul_(1.0)
        return total * 1.0

    static = d2s.jit.to_static(bumps_a_closure)
    for want in (2.0, 4.0):
        assert float(static(x)) == want and float(total) == want
