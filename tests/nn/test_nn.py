"""d2s.nn: Module registration and state, layers against numpy references, parameter
gradients against finite differences (float64), and layers inside a static program."""
import math

import numpy as np
import pytest

import d2s
from references import conv2d_ref, max_pool2d_ref
import d2s.nn.functional as F
from d2s import nn
from d2s.autograd import gradcheck


def _np(t):
    return t.numpy()


def _seeded_model(seed):
    d2s.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.LayerNorm(8), nn.Linear(8, 2))


# ------------------------------------------------------------------ finite differences
def check_param_grads(module, *inputs, eps=1e-6):
    """Every parameter's .grad after backward of sum(module(*inputs) * R) vs central
    differences of the same scalar, in float64."""
    module.double()
    out = module(*inputs)
    weights = np.random.default_rng(0).standard_normal(out.shape)

    def value():
        with d2s.no_grad():
            return float((_np(module(*inputs)) * weights).sum())

    module.zero_grad()
    d2s.sum(module(*inputs) * d2s.tensor(weights)).backward()
    params = list(module.named_parameters())
    assert params, "module has no parameters to check"
    for name, p in params:
        flat = p._data.reshape(-1)
        assert np.shares_memory(flat, p._data)
        numeric = np.zeros(flat.size)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            up = value()
            flat[i] = old - eps
            down = value()
            flat[i] = old
            numeric[i] = (up - down) / (2 * eps)
        np.testing.assert_allclose(_np(p.grad).reshape(-1), numeric, rtol=1e-5, atol=1e-7, err_msg=name)


def _randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ------------------------------------------------------------------ Module
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.scale = nn.Parameter(d2s.ones(4))
        self.register_buffer("offset", d2s.zeros(4))
        self.note = "plain attribute"

    def forward(self, x):
        h = self.act(self.fc1(x))
        for b in self.blocks:
            h = b(h)
        return h * self.scale + self.offset


def test_attributes_register_in_assignment_order():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "blocks.0.weight", "blocks.0.bias",
                     "blocks.1.weight", "blocks.1.bias"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "blocks"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "blocks", "blocks.0", "blocks.1"]
    assert [n for n, _ in net.named_buffers()] == ["offset"]
    assert len(list(net.parameters())) == 7
    assert net.note == "plain attribute" and "note" not in net.state_dict()


def test_parameter_is_a_marked_tensor_that_requires_grad():
    p = nn.Parameter(np.ones((2, 3), dtype=np.float32))
    assert isinstance(p, d2s.Tensor) and p.requires_grad and p.is_leaf
    assert type(p)._d2s_parameter is True
    assert p.shape == (2, 3) and p.dtype == "float32"
    # ops on a parameter give plain tensors
    assert type(p * 2) is d2s.Tensor
    frozen = nn.Parameter(d2s.zeros(2), requires_grad=False)
    assert not frozen.requires_grad


def test_reassigning_and_deleting_attributes_updates_registries():
    net = Net()
    net.fc1 = nn.Linear(3, 4, bias=False)
    assert "fc1.bias" not in dict(net.named_parameters())
    net.act = None
    assert "act" not in dict(net.named_children())
    del net.scale
    assert "scale" not in dict(net.named_parameters())


def test_setattr_before_init_is_a_clear_error():
    class Bad(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="super"):
        Bad()


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(3, 3)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2


@pytest.mark.parametrize("seed", [0, 1])
def test_state_dict_round_trip(seed):
    src, dst = _seeded_model(seed), _seeded_model(seed + 10)
    x = d2s.tensor(_randn(5, 4, seed=seed).astype(np.float32))
    assert not np.allclose(_np(src(x)), _np(dst(x)))
    sd = src.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias", "3.weight", "3.bias"]
    before = {id(p) for p in dst.parameters()}
    dst.load_state_dict(sd)
    np.testing.assert_array_equal(_np(src(x)), _np(dst(x)))
    assert {id(p) for p in dst.parameters()} == before  # loaded in place
    # the state dict holds values, not the live parameters; numpy arrays load too
    dst.load_state_dict({k: _np(v) * 0 for k, v in sd.items()})
    assert np.all(_np(dst(x)) == 0) and not np.all(_np(src(x)) == 0)


def test_state_dict_includes_persistent_buffers_only():
    net = Net()
    net.register_buffer("tmp", d2s.ones(1), persistent=False)
    sd = net.state_dict()
    assert "offset" in sd and "tmp" not in sd


def test_load_state_dict_errors_name_the_keys_and_leave_the_module_unchanged():
    m = _seeded_model(0)
    before = {k: _np(v).copy() for k, v in m.state_dict().items()}
    sd = dict(m.state_dict())
    sd.pop("0.bias")
    sd["extra.weight"] = np.zeros(3)
    with pytest.raises(KeyError, match=r'(?s)Missing key\(s\) in state_dict: "0.bias".*Unexpected key\(s\) in state_dict: "extra.weight"'):
        m.load_state_dict(sd)
    missing, unexpected = m.load_state_dict(sd, strict=False)
    assert missing == ["0.bias"] and unexpected == ["extra.weight"]
    bad = {k: _np(v) + 1 for k, v in m.state_dict().items()}
    bad["3.weight"] = np.zeros((3, 8), dtype=np.float32)
    with pytest.raises(ValueError, match=r"size mismatch for 3.weight: .*shape \(3, 8\) from checkpoint.*\(2, 8\)"):
        m.load_state_dict(bad)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(_np(v), before[k])


def test_train_and_eval_reach_every_submodule():
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.ReLU()))
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_dropout_training_scales_kept_values_and_eval_is_identity():
    d2s.manual_seed(3)
    drop = nn.Dropout(0.25)
    x = d2s.ones(4000)
    y = _np(drop(x))
    assert set(np.unique(y).tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert abs((y == 0).mean() - 0.25) < 0.03
    d2s.manual_seed(3)
    np.testing.assert_array_equal(_np(drop(x)), y)  # repeatable from the seed
    drop.eval()
    xr = d2s.tensor(_randn(7).astype(np.float32))
    np.testing.assert_array_equal(_np(drop(xr)), _np(xr))
    assert _np(nn.Dropout(0.0)(xr)).tolist() == _np(xr).tolist()


def test_module_to_double_keeps_parameter_identity():
    m = nn.Linear(3, 2)
    ids = [id(p) for p in m.parameters()]
    m.double()
    assert [id(p) for p in m.parameters()] == ids
    assert all(p.dtype == "float64" for p in m.parameters())


# ------------------------------------------------------------------ init
def test_init_bounds_follow_pytorch_and_manual_seed_repeats():
    d2s.manual_seed(0)
    a = nn.Linear(50, 30)
    bound = 1 / math.sqrt(50)
    w = _np(a.weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(_np(a.bias)).max() <= bound
    conv = nn.Conv2d(3, 5, 3)
    assert np.abs(_np(conv.weight)).max() <= 1 / math.sqrt(27)
    d2s.manual_seed(0)
    b = nn.Linear(50, 30)
    np.testing.assert_array_equal(_np(a.weight), _np(b.weight))
    c = nn.Linear(50, 30)
    assert not np.array_equal(_np(b.weight), _np(c.weight))
    e = nn.Embedding(1000, 8)
    assert abs(_np(e.weight).std() - 1.0) < 0.05
    ln = nn.LayerNorm(6)
    assert _np(ln.weight).tolist() == [1.0] * 6 and _np(ln.bias).tolist() == [0.0] * 6


# ------------------------------------------------------------------ layers vs numpy
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
def test_linear_matches_numpy(shape):
    lin = nn.Linear(4, 3)
    x = _randn(*shape, seed=len(shape)).astype(np.float32)
    ref = x @ _np(lin.weight).T + _np(lin.bias)
    np.testing.assert_allclose(_np(lin(d2s.tensor(x))), ref, rtol=1e-5, atol=1e-6)
    nobias = nn.Linear(4, 3, bias=False)
    assert nobias.bias is None and len(list(nobias.parameters())) == 1
    np.testing.assert_allclose(_np(nobias(d2s.tensor(x))), x @ _np(nobias.weight).T, rtol=1e-5, atol=1e-6)


def test_linear_rejects_wrong_feature_count():
    with pytest.raises(ValueError, match=r"linear: input has 5 features.*expects 4"):
        nn.Linear(4, 3)(d2s.zeros(2, 5))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_activations_match_numpy(seed):
    x = _randn(3, 5, seed=seed) * 3
    t = d2s.tensor(x)
    np.testing.assert_allclose(_np(nn.ReLU()(t)), np.maximum(x, 0))
    np.testing.assert_allclose(_np(nn.Tanh()(t)), np.tanh(x), rtol=1e-12)
    np.testing.assert_allclose(_np(nn.Sigmoid()(t)), 1 / (1 + np.exp(-x)), rtol=1e-12)
    gelu_tanh = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(_np(nn.GELU(approximate="tanh")(t)), gelu_tanh, rtol=1e-12, atol=1e-15)
    # the default is PyTorch's exact erf form (d2s's composed erf is accurate to 1.5e-7)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel()]).reshape(x.shape)
    np.testing.assert_allclose(_np(nn.GELU()(t)), exact, rtol=0, atol=1e-6)
    np.testing.assert_allclose(_np(F.gelu(t)), exact, rtol=0, atol=1e-6)
    sm = np.exp(x - x.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    np.testing.assert_allclose(_np(F.softmax(t, axis=1)), sm, rtol=1e-12)
    np.testing.assert_allclose(_np(F.log_softmax(t, dim=1)), np.log(sm), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape,norm", [((4, 6), (6,)), ((2, 3, 4), (3, 4)), ((5, 3), 3)])
def test_layer_norm_matches_numpy(shape, norm):
    ln = nn.LayerNorm(norm, dtype="float64")
    nd = 1 if isinstance(norm, int) else len(norm)
    ln.weight._data[...] = _randn(*ln.weight.shape, seed=1)
    ln.bias._data[...] = _randn(*ln.bias.shape, seed=2)
    x = _randn(*shape, seed=3) * 2 + 1
    axes = tuple(range(len(shape) - nd, len(shape)))
    mu = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5) * _np(ln.weight) + _np(ln.bias)
    np.testing.assert_allclose(_np(ln(d2s.tensor(x))), ref, rtol=1e-10, atol=1e-12)


def test_layer_norm_rejects_wrong_trailing_shape():
    with pytest.raises(ValueError, match="layer_norm"):
        nn.LayerNorm(5)(d2s.zeros(2, 4))


@pytest.mark.parametrize("ids", [[1, 0, 3], [[2, 2], [4, 1]], 3])
def test_embedding_matches_numpy(ids):
    emb = nn.Embedding(5, 3)
    out = emb(d2s.tensor(ids))
    np.testing.assert_array_equal(_np(out), _np(emb.weight)[np.asarray(ids)])





@pytest.mark.parametrize("cin,cout,k,stride,pad,bias", [(1, 2, 3, 1, 0, True), (2, 3, 3, 2, 1, True),
                                                        (3, 2, 2, 1, 1, False)])
def test_conv2d_matches_numpy(cin, cout, k, stride, pad, bias):
    conv = nn.Conv2d(cin, cout, k, stride=stride, padding=pad, bias=bias, dtype="float64")
    x = _randn(2, cin, 6, 7, seed=cin)
    ref = conv2d_ref(x, _np(conv.weight), None if conv.bias is None else _np(conv.bias), stride, pad)
    np.testing.assert_allclose(_np(conv(d2s.tensor(x))), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("k,s", [(2, None), (3, 1), (2, 3)])
def test_max_pool2d_and_flatten_match_numpy(k, s):
    x = _randn(2, 3, 7, 8, seed=k)
    out = nn.MaxPool2d(k, s)(d2s.tensor(x))
    ref = max_pool2d_ref(x, k, k if s is None else s)
    np.testing.assert_array_equal(_np(out), ref)
    np.testing.assert_array_equal(_np(nn.Flatten()(out)), ref.reshape(2, -1))
    np.testing.assert_array_equal(_np(nn.Flatten(0, 1)(out)), ref.reshape(6, *ref.shape[2:]))


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


@pytest.mark.parametrize("batch", [1, 4])
def test_rnn_cell_matches_numpy(batch):
    cell = nn.RNNCell(3, 5, dtype="float64")
    x, h = _randn(batch, 3, seed=batch), _randn(batch, 5, seed=batch + 1)
    wi, wh, bi, bh = (_np(p) for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh))
    ref = np.tanh(x @ wi.T + bi + h @ wh.T + bh)
    np.testing.assert_allclose(_np(cell(d2s.tensor(x), d2s.tensor(h))), ref, rtol=1e-12)
    np.testing.assert_allclose(_np(cell(d2s.tensor(x))), np.tanh(x @ wi.T + bi + bh), rtol=1e-12)
    relu_cell = nn.RNNCell(3, 5, nonlinearity="relu", dtype="float64")
    wi, wh, bi, bh = (_np(p) for p in relu_cell.parameters())
    np.testing.assert_allclose(_np(relu_cell(d2s.tensor(x), d2s.tensor(h))),
                               np.maximum(x @ wi.T + bi + h @ wh.T + bh, 0), rtol=1e-12)


@pytest.mark.parametrize("batch", [1, 3])
def test_gru_cell_matches_numpy(batch):
    cell = nn.GRUCell(4, 3, dtype="float64")
    x, h = _randn(batch, 4, seed=batch), _randn(batch, 3, seed=batch + 7)
    wi, wh, bi, bh = (_np(p) for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh))
    gi, gh = x @ wi.T + bi, h @ wh.T + bh
    r = _sigmoid(gi[:, :3] + gh[:, :3])
    z = _sigmoid(gi[:, 3:6] + gh[:, 3:6])
    n = np.tanh(gi[:, 6:] + r * gh[:, 6:])
    ref = (1 - z) * n + z * h
    np.testing.assert_allclose(_np(cell(d2s.tensor(x), d2s.tensor(h))), ref, rtol=1e-12)
    assert cell.weight_ih.shape == (9, 4) and cell.weight_hh.shape == (9, 3)


@pytest.mark.parametrize("seed", [0, 1])
def test_losses_match_numpy(seed):
    a, b = _randn(6, 3, seed=seed), _randn(6, 3, seed=seed + 5)
    np.testing.assert_allclose(_np(nn.MSELoss()(d2s.tensor(a), d2s.tensor(b))), ((a - b) ** 2).mean(), rtol=1e-12)
    np.testing.assert_allclose(_np(F.mse_loss(d2s.tensor(a), d2s.tensor(b), reduction="sum")),
                               ((a - b) ** 2).sum(), rtol=1e-12)
    logits = _randn(6, 4, seed=seed) * 3
    target = np.random.default_rng(seed).integers(0, 4, size=6)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ref = -logp[np.arange(6), target].mean()
    out = nn.CrossEntropyLoss()(d2s.tensor(logits), d2s.tensor(target))
    assert out.shape == ()
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12)
    per_sample = F.cross_entropy(d2s.tensor(logits), d2s.tensor(target), reduction="none")
    np.testing.assert_allclose(_np(per_sample), -logp[np.arange(6), target], rtol=1e-12)
    probs = np.eye(4)[target]
    np.testing.assert_allclose(_np(F.cross_entropy(d2s.tensor(logits), d2s.tensor(probs))), ref, rtol=1e-12)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = d2s.tensor(np.array([[1000.0, 0.0, -1000.0], [0.0, 5000.0, 0.0]], dtype=np.float32))
    loss = F.cross_entropy(logits, d2s.tensor([1, 1]))
    assert np.isfinite(_np(loss))
    np.testing.assert_allclose(_np(loss), 500.0, rtol=1e-6)


def test_loss_shape_errors_are_clear():
    with pytest.raises(ValueError, match=r"mse_loss: input shape \(4, 1\) and target shape \(4,\)"):
        F.mse_loss(d2s.zeros(4, 1), d2s.zeros(4))
    with pytest.raises(TypeError, match="integer class ids"):
        F.nll_loss(d2s.zeros(4, 3), d2s.zeros(4))


# ------------------------------------------------------------------ parameter gradients
@pytest.mark.parametrize("make,inputs", [
    (lambda: nn.Linear(3, 2), lambda: (_randn(4, 3),)),
    (lambda: nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2), nn.Sigmoid()), lambda: (_randn(2, 3),)),
    (lambda: nn.LayerNorm(5), lambda: (_randn(3, 5),)),
    (lambda: nn.Embedding(4, 3), lambda: (d2s.tensor([[0, 2], [2, 3]]),)),
    (lambda: nn.Conv2d(2, 3, 3, stride=2, padding=1), lambda: (_randn(2, 2, 5, 5),)),
    (lambda: nn.Sequential(nn.Conv2d(1, 2, 2), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 2)),
     lambda: (_randn(2, 1, 5, 5),)),
    (lambda: nn.RNNCell(3, 4), lambda: (_randn(2, 3), _randn(2, 4, seed=1))),
    (lambda: nn.GRUCell(3, 2), lambda: (_randn(2, 3), _randn(2, 2, seed=1))),
])
def test_parameter_gradients_match_finite_differences(make, inputs):
    d2s.manual_seed(0)
    module = make()
    args = tuple(d2s.tensor(a) if isinstance(a, np.ndarray) else a for a in inputs())
    check_param_grads(module, *args)


def test_loss_gradients_match_finite_differences():
    target = d2s.tensor([2, 0, 1])
    assert gradcheck(lambda z: F.cross_entropy(z, target), [_randn(3, 4)])
    assert gradcheck(lambda a, b: F.mse_loss(a, b), [_randn(3, 2), _randn(3, 2, seed=1)])
    assert gradcheck(lambda z: F.gelu(z), [_randn(5)])
    assert gradcheck(lambda z: F.layer_norm(z, (4,)), [_randn(2, 4)])


# ------------------------------------------------------------------ layers in a static program
def _build(model, shape):
    from d2s.static.builder import ProgramBuilder
    with ProgramBuilder() as b:
        x = b.add_input(shape, "float32")
        out = model(x)
        b.program.outputs = [b.var_of(out)]
    b.program.block.outputs = list(b.program.outputs)
    return b


@pytest.mark.parametrize("batch", [1, 5])
def test_the_same_forward_builds_a_program_with_parameters_as_params(batch):
    from d2s_runtime import Executor
    d2s.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(48, 16), nn.GELU(), nn.LayerNorm(16), nn.Dropout(0.3), nn.Linear(16, 4))
    model.eval()
    b = _build(model, (None, 1, 8, 8))
    prog = b.program
    assert len(prog.params) == len(list(model.parameters()))
    assert not prog.constants  # no parameter was folded into a constant
    assert {id(t) for t in b.param_tensors.values()} == {id(p) for p in model.parameters()}
    x = _randn(batch, 1, 8, 8).astype(np.float32)

    def run():
        params = {n: t._data for n, t in b.param_tensors.items()}
        return Executor(prog).run(x, params=params)[0]

    np.testing.assert_allclose(run(), _np(model(d2s.tensor(x))), rtol=1e-5, atol=1e-6)
    # parameters are read at run time: a changed weight changes the program's result
    model[0].bias._data += 1.0
    np.testing.assert_allclose(run(), _np(model(d2s.tensor(x))), rtol=1e-5, atol=1e-6)


def test_recurrent_cells_and_embedding_build_programs():
    from d2s.static.builder import ProgramBuilder
    gru, emb = nn.GRUCell(3, 4), nn.Embedding(10, 3)
    with ProgramBuilder() as b:
        ids = b.add_input((None,), "int64")
        h = gru(emb(ids))
        h = gru(emb(ids), h)
    assert h.is_symbolic and h._var.type.shape == (None, 4)
    assert len(b.program.params) == 5


# ------------------------------------------------------------------ PyTorch-semantics regressions
def _ce_reference(logits, target, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """torch.nn.functional.cross_entropy with class-id targets, in numpy."""
    logp = logits - logits.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    c = logits.shape[1]
    w = np.ones(c) if weight is None else weight
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    wi = w[safe] * valid
    nll = -logp[np.arange(len(target)), safe] * wi
    smooth = -(logp * w).sum(1) * valid
    if reduction == "mean":
        nll, smooth = nll.sum() / wi.sum(), smooth.sum() / wi.sum()
    elif reduction == "sum":
        nll, smooth = nll.sum(), smooth.sum()
    return (1 - smoothing) * nll + smoothing / c * smooth


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_ignore_index_weight_label_smoothing_match_pytorch(reduction, weighted, smoothing):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((6, 4))
    target = np.array([0, 3, -100, 1, 2, 3])  # -100: PyTorch's default ignore_index
    weight = rng.uniform(0.5, 2.0, 4) if weighted else None
    ref = _ce_reference(logits, target, weight, reduction=reduction, smoothing=smoothing)
    x = d2s.tensor(logits, requires_grad=True)
    loss_fn = nn.CrossEntropyLoss(weight=None if weight is None else d2s.tensor(weight), reduction=reduction,
                                  label_smoothing=smoothing)
    out = loss_fn(x, d2s.tensor(target))
    np.testing.assert_allclose(_np(out), ref, rtol=1e-10, atol=1e-12)
    out.sum().backward()
    assert np.all(x.grad.numpy()[2] == 0)  # the ignored row gets no gradient
    assert gradcheck(lambda z: F.cross_entropy(z, d2s.tensor(target), weight=weight, reduction=reduction,
                                               label_smoothing=smoothing), [logits])
    other = _ce_reference(logits, np.array([0, 3, 2, 1, 2, 3]), ignore_index=2, reduction=reduction)
    np.testing.assert_allclose(_np(F.cross_entropy(d2s.tensor(logits), [0, 3, 2, 1, 2, 3], ignore_index=2,
                                                   reduction=reduction)), other, rtol=1e-10)


def test_gelu_tanh_and_exact_gradients_check():
    assert gradcheck(lambda z: F.gelu(z, approximate="tanh"), [_randn(5, seed=1)])
    assert gradcheck(lambda z: F.gelu(z), [_randn(5, seed=2) * 3])


def test_conv2d_groups_same_padding_and_unbatched_input():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 6, 5))
    conv = nn.Conv2d(4, 6, 3, padding="same", groups=2, dtype="float64")
    assert conv.weight.shape == (6, 2, 3, 3)
    w, b = conv.weight.numpy(), conv.bias.numpy()
    ref = np.concatenate([conv2d_ref(x[:, :2], w[:3], padding=1),
                          conv2d_ref(x[:, 2:], w[3:], padding=1)], axis=1) + b[None, :, None, None]
    np.testing.assert_allclose(_np(conv(d2s.tensor(x))), ref, rtol=1e-10)
    np.testing.assert_allclose(_np(conv(d2s.tensor(x[0]))), ref[0], rtol=1e-10)  # (C, H, W)
    assert gradcheck(lambda a, k: F.conv2d(a, k, groups=2), [x[:1, :, :4, :4], w[:, :, :2, :2]])
    with pytest.raises(ValueError, match="must be divisible by groups"):
        nn.Conv2d(4, 6, 3, groups=3)
    pooled = F.max_pool2d(d2s.tensor(x[0]), 2)
    np.testing.assert_array_equal(_np(pooled), _np(F.max_pool2d(d2s.tensor(x[:1]), 2))[0])


def test_layer_norm_without_bias_and_embedding_padding_idx():
    ln = nn.LayerNorm(4, bias=False)
    assert ln.bias is None and [n for n, _ in ln.named_parameters()] == ["weight"]
    emb = nn.Embedding(5, 3, padding_idx=1)
    np.testing.assert_array_equal(emb.weight.numpy()[1], np.zeros(3))
    ids = d2s.tensor([[1, 2], [2, 1]])
    out = emb(ids)
    np.testing.assert_array_equal(_np(out), emb.weight.numpy()[ids.numpy()])
    (out * 3.0).sum().backward()
    g = emb.weight.grad.numpy()
    np.testing.assert_array_equal(g[1], np.zeros(3))  # the padding row learns nothing
    np.testing.assert_array_equal(g[2], np.full(3, 6.0))


class _TwoLevel(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(d2s.ones(2))
        self.body = nn.Sequential(nn.Linear(2, 3), nn.ReLU())


def test_module_apply_recurse_and_assignment_rules():
    m = _TwoLevel()
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "ReLU", "Sequential", "_TwoLevel"]  # children first, as in PyTorch
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert len(list(m.parameters(recurse=False))) == 1 and len(list(m.parameters())) == 3
    with pytest.raises(TypeError, match="cannot assign Tensor as parameter 'scale'"):
        m.scale = d2s.zeros(2)
    assert "scale" in dict(m.named_parameters())
    m.scale = None  # None is allowed, as in PyTorch
    assert [n for n, _ in m.named_parameters()] == ["body.0.weight", "body.0.bias"]


def test_module_list_insert_and_iadd_and_zero_grad_to_zeros():
    ml = nn.ModuleList([nn.Linear(2, 2)])
    ml += [nn.ReLU()]
    ml.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "Linear", "ReLU"]
    assert [n for n, _ in ml.named_parameters()] == ["1.weight", "1.bias"]
    lin = nn.Linear(2, 2)
    lin(d2s.ones(1, 2)).sum().backward()
    lin.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(lin.weight.grad.numpy(), np.zeros((2, 2)))
    lin.zero_grad()
    assert lin.weight.grad is None


def test_load_state_dict_returns_named_missing_and_unexpected_keys():
    lin = nn.Linear(2, 2)
    res = lin.load_state_dict({"weight": np.zeros((2, 2), np.float32), "extra": np.ones(1)}, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["extra"]
    missing, unexpected = res
    assert missing == ["bias"]


def test_layers_run_on_another_device():
    # "strict" (tests/strict_device.py) is numpy behind an array type that refuses implicit host
    # copies, as cupy does: every constant the layers make must be made on the input's device
    from d2s import distributions as D

    def run(dev):
        d2s.manual_seed(0)
        lstm = nn.LSTM(3, 4, 2, bidirectional=True).to(dev)
        enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).to(dev)
        kpm = d2s.tensor([[False, True, False], [False, False, False]]).to(dev)
        packed = nn.utils.rnn.pack_padded_sequence(d2s.randn(5, 3, 3).to(dev), [5, 2, 3], enforce_sorted=False)
        outs = [lstm(d2s.randn(5, 2, 3).to(dev))[0], enc(d2s.randn(3, 2, 8).to(dev), src_key_padding_mask=kpm),
                nn.utils.rnn.pad_packed_sequence(lstm(packed)[0])[0],
                nn.Embedding(10, 4, padding_idx=0, max_norm=1.0).to(dev)(d2s.tensor([[1, 0, 3]]).to(dev)),
                nn.EmbeddingBag(10, 4, mode="max").to(dev)(d2s.tensor([1, 2, 3]).to(dev), d2s.tensor([0, 2]).to(dev)),
                F.cross_entropy(d2s.randn(4, 5).to(dev), d2s.tensor([0, 1, -100, 4]).to(dev), label_smoothing=0.1),
                F.scaled_dot_product_attention(*(d2s.randn(1, 2, 3, 4).to(dev) for _ in range(3)), is_causal=True)]
        total = sum(o.sum() for o in outs)
        total.backward()
        # draws (each device has its own generator): shapes only
        draws = [D.Normal(d2s.zeros(3).to(dev), 1.0).rsample((2,)), D.Categorical(logits=d2s.zeros(2, 3).to(dev)).sample()]
        assert [tuple(d.shape) for d in draws] == [(2, 3), (2,)] and all(d.device == dev for d in draws)
        return [o.cpu().numpy() for o in outs], [p.grad.cpu().numpy() for p in lstm.parameters()]

    want, got = run("cpu"), run("strict")
    for a, b in zip(want[0] + want[1], got[0] + got[1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
