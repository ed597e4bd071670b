"""The public contract of API.md §4 (``d2s.jit.to_static``): decorator forms, StaticFunction
attributes, the program cache, InputSpec, gradients, modules and switches, against eager results."""
import numpy as np
import pytest

import d2s
from d2s import optim

from api_helpers import LoopNet, X, branchy, close


RNG = np.random.default_rng(0)


# to_static converts source: the functions it converts live at module level.
def looping(x, n):
    s = x * 0.0
    i = 0
    while s.sum() < 10.0 and i < 5:
        s = s + x.abs() + 0.5
        i += 1
    for k in range(n):
        if s.mean() > 3.0:
            break
        s = s * 1.5
    return s


def scaled(x, scale=2.0, flag=True):
    if flag:
        return x * scale
    return x


def nested_outputs(x):
    return x * 2.0, {"s": x.sum(), "l": [x + 1.0, 3]}


@d2s.jit.not_to_static
def _left_alone(x):
    return x * 3.0


def calls_left_alone(x):
    return _left_alone(x) + 1.0


def _grads(fn, *args):
    xs = [d2s.tensor(np.asarray(a, np.float64), requires_grad=True) for a in args]
    out = fn(*xs)
    out.sum().backward()
    return out.numpy(), [x.grad.numpy() for x in xs]


class TestToStatic:
    def test_decorator_forms(self):
        assert d2s.to_static is d2s.jit.to_static
        for sf in (d2s.jit.to_static(branchy), d2s.jit.to_static()(branchy),
                   d2s.jit.to_static(input_spec=[d2s.jit.InputSpec([None, 3])])(branchy)):
            assert isinstance(sf, d2s.jit.StaticFunction)
            for v in (X, -X):
                close(sf(d2s.tensor(v)), branchy(d2s.tensor(v)).numpy())

    def test_static_function_attributes(self):
        sf = d2s.jit.to_static(branchy)
        assert sf.eager is branchy
        assert isinstance(sf.code, str) and "def branchy" in sf.code
        sf(d2s.tensor(X))
        assert len(sf.programs) == 1 and all(isinstance(p, d2s.static.Program) if hasattr(d2s.static, "Program")
                                             else hasattr(p, "global_block") for p in sf.programs)
        prog = sf.get_program(d2s.jit.InputSpec([None, 3]))
        assert "cond" in [op.type for op in prog.global_block().ops]
        assert len(prog.blocks) >= 3  # the cond op holds its two branches as sub-blocks
        assert hasattr(sf.get_program(d2s.tensor(X)), "global_block")

    def test_one_program_per_signature(self):
        sf = d2s.jit.to_static(branchy)
        sf(d2s.tensor(X))
        sf(d2s.tensor(-X))                          # same signature: cached
        assert len(sf.programs) == 1
        sf(d2s.ones(4, 3))                          # new shape
        sf(d2s.ones(4, 3, dtype="float64"))         # new dtype
        assert len(sf.programs) == 3
        ss = d2s.jit.to_static(scaled)
        close(ss(d2s.tensor(X), scale=3.0), X * 3)
        close(ss(d2s.tensor(X), flag=False), X)
        ss(d2s.tensor(X), scale=3.0)
        assert len(ss.programs) == 2                # Python argument values are part of the key

    def test_input_spec_dynamic_dims_share_one_program(self):
        for dim in (None, -1):
            sf = d2s.jit.to_static(branchy, input_spec=[d2s.jit.InputSpec([dim, 3])])
            for n in (2, 5):
                v = RNG.standard_normal((n, 3)).astype(np.float32)
                close(sf(d2s.tensor(v)), branchy(d2s.tensor(v)).numpy())
            assert len(sf.programs) == 1
        spec = d2s.jit.InputSpec([None, 3], "float64", name="x")
        assert spec.dtype == "float64" and spec.name == "x"
        assert d2s.jit.InputSpec([2]).dtype == "float32"

    @pytest.mark.parametrize("n", [0, 1, 3])
    def test_loops_values_and_gradients_match_eager(self, n):
        sf = d2s.jit.to_static(looping)
        for v in (X, -X * 0.1, X * 4):
            want, gw = _grads(lambda x: looping(x, d2s.tensor(n)), v)
            got, gg = _grads(lambda x: sf(x, d2s.tensor(n)), v)
            close(got, want)
            close(gg[0], gw[0])

    def test_outputs_keep_their_structure(self):
        a, d = d2s.jit.to_static(nested_outputs)(d2s.tensor(X))
        assert isinstance(a, d2s.Tensor) and set(d) == {"s", "l"}
        assert isinstance(d["l"], list) and d["l"][1] == 3
        close(d["s"], X.sum())

    def test_outputs_are_differentiable(self):
        x = d2s.tensor(X, requires_grad=True)
        out = d2s.jit.to_static(branchy)(x)
        assert out.requires_grad and out.grad_fn is not None
        assert not d2s.jit.to_static(branchy)(d2s.tensor(X)).requires_grad

    def test_module(self):
        d2s.manual_seed(0)
        net, ref = LoopNet(), LoopNet()
        ref.load_state_dict(net.state_dict())
        assert d2s.jit.to_static(net) is net
        assert isinstance(net.forward, d2s.jit.StaticFunction)
        x = d2s.randn(5, 3)
        close(net(x), ref(x).numpy(), atol=1e-6)
        assert len(net.forward.programs) >= 1
        # parameters are read at every call: optimizer steps change what the program computes
        for m in (net, ref):
            o = optim.SGD(m.parameters(), lr=0.5)
            o.zero_grad()
            (m(x) ** 2).sum().backward()
            for p in m.parameters():
                assert p.grad is not None
            o.step()
        for p, q in zip(net.parameters(), ref.parameters()):
            close(p, q.numpy(), atol=1e-5)
        close(net(x), ref(x).numpy(), atol=1e-5)
        net.eval()
        ref.eval()
        close(net(x), ref(x).numpy(), atol=1e-5)        # the training flag is part of the key
        close(net(x, steps=0), ref(x, steps=0).numpy(), atol=1e-5)

    def test_bound_method(self):
        net = LoopNet()
        sf = d2s.jit.to_static(net.forward)
        close(sf(d2s.tensor(X)), LoopNet.forward(net, d2s.tensor(X)).numpy(), atol=1e-6)

    def test_not_to_static_and_enable_to_static(self):
        close(d2s.jit.to_static(calls_left_alone)(d2s.tensor(X)), X * 3 + 1)
        d2s.jit.enable_to_static(False)
        try:
            sf = d2s.jit.to_static(branchy)
            close(sf(d2s.tensor(X)), X * 2)
            assert len(sf.programs) == 0
        finally:
            d2s.jit.enable_to_static(True)


def _sign_step(x):
    return x * 2 if x.sum() > 0 else x - 1


def test_compile_is_to_static_with_torch_compiles_signature():
    d2s.manual_seed(0)
    model = d2s.nn.Sequential(d2s.nn.Linear(3, 4), d2s.nn.ReLU(), d2s.nn.Linear(4, 2))
    x = d2s.randn(5, 3)
    want = model(x).numpy()
    assert d2s.compile(model, disable=True) is model and not isinstance(model.forward, d2s.jit.StaticFunction)
    compiled = d2s.compile(model, mode="max-autotune", dynamic=True)
    assert compiled is model and isinstance(model.forward, d2s.jit.StaticFunction)
    np.testing.assert_array_equal(compiled(x).numpy(), want)
    assert list(compiled.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]  # no _orig_mod. prefix
    f = d2s.compile(backend="inductor")(_sign_step)
    for v in ([1.0, 2.0], [-1.0, -2.0]):
        np.testing.assert_array_equal(f(d2s.tensor(v)).numpy(), _sign_step(d2s.tensor(v)).numpy())
    assert f.is_static
