"""Normalization layers and functions (d2s/nn/normalization.py, _functional_norm.py, d2s/ops/norm.py)
against PyTorch: values and float64 gradients; BatchNorm's and InstanceNorm's running statistics
over three training steps (momentum, momentum=None, num_batches_tracked) and eval mode; state_dict
keys, dtypes and default values; a PyTorch state_dict loading; and a converted model with
BatchNorm training exactly as the eager one, its buffers updated inside the program."""
import numpy as np
import pytest

import d2s
import torch_parity
from device_helpers import matches_cpu
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(2)


def rn(*shape):
    return R.standard_normal(shape)


def r32(*shape):
    return rn(*shape).astype("float32")


def F(t):
    return t.nn.functional


def _filled(t, cls, w=None, b=None, **kw):
    """Layer ``cls`` of library ``t`` in float64 with weight ``w`` and bias ``b`` when given."""
    m = getattr(t.nn, cls)(**kw, dtype=t.float64)
    with t.no_grad():
        if w is not None:
            m.weight.copy_(w)
        if b is not None:
            m.bias.copy_(b)
    return m


def _steps(t, m, x, n=3):
    """Outputs of ``n`` training steps on scaled inputs, the buffers after them, and eval's output."""
    outs = [m(x * (1.0 + 0.5 * k) + k) for k in range(n)]
    state = [v for _, v in sorted(m.state_dict().items()) if "num_batches" not in _]
    m.eval()
    return outs, state, m(x), m.num_batches_tracked if getattr(m, "num_batches_tracked", None) is not None else 0


INSIDE = "the case builds and fills its layer inside the function (test_converted_model_with_batchnorm_trains_as_eager)"


def bn_steps(cls, **kw):
    return lambda t, x, w, b: _steps(t, _filled(t, cls, w, b, num_features=x.shape[1], **kw), x)


TORCH_CASES = [
    # functional forms
    Case("batch_norm_train", lambda t, x, w, b: F(t).batch_norm(x, None, None, w, b, training=True), rn(4, 3, 5, 2),
         rn(3), rn(3)),
    Case("batch_norm_eval", lambda t, x, m, v, w, b: F(t).batch_norm(x, m, v, w, b, eps=1e-3), rn(4, 3, 5),
         rn(3), np.abs(rn(3)) + 0.5, rn(3), rn(3), grad=[0, 3, 4]),
    Case("batch_norm_2d_input", lambda t, x: F(t).batch_norm(x, None, None, training=True, eps=0.1), rn(5, 4)),
    Case("batch_norm_updates_running_stats",
         lambda t, x, m, v: (F(t).batch_norm(x, m, v, training=True, momentum=0.3), m, v),
         rn(6, 2, 3), rn(2), np.abs(rn(2)) + 1, grad=[0], static="it updates tensors passed in, in place"),
    Case("layer_norm", lambda t, x, w, b: F(t).layer_norm(x, (4,), w, b), rn(3, 5, 4), rn(4), rn(4)),
    Case("layer_norm_2d_shape", lambda t, x, w, b: F(t).layer_norm(x, (3, 4), w, b, eps=1e-3), rn(2, 3, 4),
         rn(3, 4), rn(3, 4)),
    Case("layer_norm_no_affine", lambda t, x: F(t).layer_norm(x, [5]), rn(2, 3, 5)),
    Case("layer_norm_float32", lambda t, x, w, b: F(t).layer_norm(x, (8,), w, b), rn(4, 8).astype("float32"),
         rn(8).astype("float32"), rn(8).astype("float32"), rtol=1e-5, atol=1e-5),
    Case("group_norm", lambda t, x, w, b: F(t).group_norm(x, 2, w, b), rn(3, 4, 3, 2), rn(4), rn(4)),
    Case("group_norm_one_group_3d", lambda t, x: F(t).group_norm(x, 1, eps=1e-2), rn(2, 6, 5)),
    Case("group_norm_per_channel", lambda t, x, w, b: F(t).group_norm(x, 3, w, b), rn(2, 3, 4, 4), rn(3), rn(3)),
    Case("instance_norm", lambda t, x, w, b: F(t).instance_norm(x, weight=w, bias=b), rn(2, 3, 4, 5), rn(3), rn(3)),
    Case("instance_norm_1d", lambda t, x: F(t).instance_norm(x, eps=1e-3), rn(2, 3, 7)),
    Case("instance_norm_running_stats", lambda t, x, m, v: F(t).instance_norm(x, m, v, use_input_stats=False),
         rn(2, 3, 4, 4), rn(3), np.abs(rn(3)) + 0.5, grad=[0]),
    Case("rms_norm", lambda t, x, w: F(t).rms_norm(x, (4,), w), rn(3, 2, 4), rn(4)),
    Case("rms_norm_default_eps_float32", lambda t, x: F(t).rms_norm(x, [3, 4]), rn(2, 3, 4).astype("float32"),
         rtol=1e-5, atol=1e-6),
    Case("rms_norm_eps", lambda t, x: F(t).rms_norm(x, [5], eps=0.5), rn(2, 5) * 0.1),
    # float32: onnxruntime has no float64 AveragePool
    Case("local_response_norm_3d", lambda t, x: F(t).local_response_norm(x, 3), r32(2, 6, 5), rtol=1e-5, atol=1e-6),
    Case("local_response_norm_4d", lambda t, x: F(t).local_response_norm(x, 4, alpha=0.1, beta=0.5, k=2.0),
         r32(2, 5, 3, 4), rtol=1e-5, atol=1e-6),
    Case("normalize_p2", lambda t, x: F(t).normalize(x), rn(3, 4)),
    Case("normalize_dim_p1", lambda t, x: F(t).normalize(x, p=1, dim=-1), rn(3, 4, 2)),
    Case("normalize_p3_zero_row", lambda t, x: F(t).normalize(x, p=3.0, dim=0),
         np.concatenate([rn(3, 2), np.zeros((3, 1))], axis=1), grad=False),
    Case("normalize_inf", lambda t, x: F(t).normalize(x, p=float("inf"), dim=1), rn(3, 4)),
    Case("normalize_p0", lambda t, x: F(t).normalize(x, p=0, dim=1), np.where(rn(3, 4) > 0.3, rn(3, 4), 0.0)),
    # layers: three training steps, the running statistics after them, eval mode
    Case("BatchNorm2d_steps", bn_steps("BatchNorm2d"), rn(4, 3, 3, 2), rn(3), rn(3), static=INSIDE),
    Case("BatchNorm2d_momentum_none", bn_steps("BatchNorm2d", momentum=None), rn(3, 2, 2, 3), rn(2), rn(2),
         static=INSIDE),
    Case("BatchNorm1d_steps_2d", bn_steps("BatchNorm1d", momentum=0.5, eps=1e-3), rn(5, 4), rn(4), rn(4),
         static=INSIDE),
    Case("BatchNorm1d_steps_3d", bn_steps("BatchNorm1d"), rn(2, 3, 4), rn(3), rn(3), static=INSIDE),
    Case("BatchNorm3d_steps", bn_steps("BatchNorm3d"), rn(2, 2, 3, 2, 2), rn(2), rn(2), static=INSIDE),
    Case("BatchNorm2d_no_affine", lambda t, x: _steps(t, _filled(t, "BatchNorm2d", num_features=2, affine=False), x),
         rn(3, 2, 2, 2), static=INSIDE),
    Case("BatchNorm2d_no_running_stats",
         lambda t, x, w, b: _steps(t, _filled(t, "BatchNorm2d", w, b, num_features=2, track_running_stats=False), x),
         rn(3, 2, 2, 2), rn(2), rn(2), static=INSIDE),
    Case("InstanceNorm2d_running_stats",
         lambda t, x, w, b: _steps(t, _filled(t, "InstanceNorm2d", w, b, num_features=3, affine=True,
                                              track_running_stats=True), x), rn(2, 3, 3, 4), rn(3), rn(3),
         static=INSIDE),
    Case("InstanceNorm1d_unbatched", lambda t, x: t.nn.InstanceNorm1d(3, dtype=t.float64)(x), rn(3, 6)),
    Case("LayerNorm_no_bias", lambda t, x, w: _filled(t, "LayerNorm", w, normalized_shape=4, bias=False)(x),
         rn(2, 3, 4), rn(4), grad=[0], static=INSIDE),
    Case("GroupNorm_layer", lambda t, x, w, b: _filled(t, "GroupNorm", w, b, num_groups=2, num_channels=4)(x),
         rn(2, 4, 3), rn(4), rn(4), grad=[0], static=INSIDE),
    Case("RMSNorm_layer", lambda t, x, w: _filled(t, "RMSNorm", w, normalized_shape=(2, 3), eps=1e-4)(x),
         rn(4, 2, 3), rn(2, 3), grad=[0], static=INSIDE),
    Case("LocalResponseNorm_layer", lambda t, x: t.nn.LocalResponseNorm(2)(x), r32(2, 4, 3, 3), rtol=1e-5, atol=1e-6),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


# ------------------------------------------------------------------ state: keys, dtypes, defaults
STATE = {
    "BatchNorm2d(3)": (lambda lib: lib.nn.BatchNorm2d(3),
                       {"weight": ((3,), "float32"), "bias": ((3,), "float32"), "running_mean": ((3,), "float32"),
                        "running_var": ((3,), "float32"), "num_batches_tracked": ((), "int64")}),
    "BatchNorm1d(4, affine=False)": (lambda lib: lib.nn.BatchNorm1d(4, affine=False),
                                     {"running_mean": ((4,), "float32"), "running_var": ((4,), "float32"),
                                      "num_batches_tracked": ((), "int64")}),
    "BatchNorm2d(3, track_running_stats=False)": (lambda lib: lib.nn.BatchNorm2d(3, track_running_stats=False),
                                                  {"weight": ((3,), "float32"), "bias": ((3,), "float32")}),
    "InstanceNorm2d(3)": (lambda lib: lib.nn.InstanceNorm2d(3), {}),
    "InstanceNorm1d(2, affine=True, track_running_stats=True)": (
        lambda lib: lib.nn.InstanceNorm1d(2, affine=True, track_running_stats=True),
        {"weight": ((2,), "float32"), "bias": ((2,), "float32"), "running_mean": ((2,), "float32"),
         "running_var": ((2,), "float32"), "num_batches_tracked": ((), "int64")}),
    "LayerNorm((2, 3), bias=False)": (lambda lib: lib.nn.LayerNorm((2, 3), bias=False),
                                      {"weight": ((2, 3), "float32")}),
    "GroupNorm(2, 4)": (lambda lib: lib.nn.GroupNorm(2, 4), {"weight": ((4,), "float32"), "bias": ((4,), "float32")}),
    "RMSNorm(5)": (lambda lib: lib.nn.RMSNorm(5), {"weight": ((5,), "float32")}),
}


def _state(sd):
    return {k: (tuple(v.shape), str(v.dtype).replace("torch.", "")) for k, v in sd.items()}


@pytest.mark.parametrize("name", sorted(STATE))
def test_state_dict_keys_shapes_and_dtypes_are_pytorchs(name):
    make, want = STATE[name]
    assert _state(make(d2s).state_dict()) == want
    torch = torch_parity.live_torch()
    if torch is not None:
        assert _state(make(torch).state_dict()) == want


def test_defaults_and_attributes():
    bn = nn.BatchNorm2d(3)
    assert (bn.num_features, bn.eps, bn.momentum, bn.affine, bn.track_running_stats) == (3, 1e-5, 0.1, True, True)
    np.testing.assert_array_equal(bn.weight.numpy(), np.ones(3))
    np.testing.assert_array_equal(bn.bias.numpy(), np.zeros(3))
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3))
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3))
    assert bn.num_batches_tracked.item() == 0 and str(bn.num_batches_tracked.dtype) == "int64"
    assert bn.extra_repr() == "3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True"
    assert "bias" not in nn.BatchNorm2d(3, bias=False).state_dict()
    assert nn.InstanceNorm2d(3).affine is False and nn.InstanceNorm2d(3).running_mean is None
    assert nn.RMSNorm(4).eps is None
    assert nn.LayerNorm(4).extra_repr() == "(4,), eps=1e-05, elementwise_affine=True, bias=True"
    assert nn.GroupNorm(2, 4).extra_repr() == "2, 4, eps=1e-05, affine=True, bias=True"
    torch = torch_parity.live_torch()
    if torch is not None:
        for make in (lambda lib: lib.nn.BatchNorm2d(3), lambda lib: lib.nn.BatchNorm1d(3, bias=False),
                     lambda lib: lib.nn.LayerNorm(4, bias=False), lambda lib: lib.nn.GroupNorm(2, 4),
                     lambda lib: lib.nn.InstanceNorm1d(2), lambda lib: lib.nn.LocalResponseNorm(3),
                     lambda lib: lib.nn.RMSNorm(4)):
            assert make(d2s).extra_repr() == make(torch).extra_repr()


def test_training_batchnorm_under_trace_says_to_use_eval_or_to_static():
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    x = d2s.tensor(rn(2, 3, 6, 6).astype("float32"))
    with pytest.raises(RuntimeError, match="BatchNorm2d in training mode under d2s.jit.trace.*model.eval"):
        d2s.jit.trace(m, (x,))
    m.eval()
    np.testing.assert_allclose(d2s.jit.trace(m, (x,))(x).numpy(), m(x).numpy(), rtol=1e-6)


def test_running_stats_after_reset_and_buffers_stay_the_same_objects():
    bn = nn.BatchNorm1d(2)
    mean_buf = bn.running_mean
    bn(d2s.tensor(rn(4, 2).astype("float32")))
    assert bn.running_mean is mean_buf and bn.num_batches_tracked.item() == 1
    assert not np.allclose(bn.running_mean.numpy(), 0)
    bn.reset_running_stats()
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(2))
    assert bn.num_batches_tracked.item() == 0


@pytest.mark.parametrize("make,msg", [
    (lambda: nn.BatchNorm2d(3)(d2s.zeros(2, 3, 4)), "expected 4D input \\(got 3D input\\)"),
    (lambda: nn.BatchNorm1d(3)(d2s.zeros(1, 3)), "expected more than 1 value per channel when training"),
    (lambda: nn.GroupNorm(3, 4), "num_channels must be divisible by num_groups"),
    (lambda: nn.functional.group_norm(d2s.zeros(2, 4, 3), 3), "divisible by num_groups"),
    (lambda: nn.LayerNorm(5)(d2s.zeros(2, 4)), "layer_norm: input shape \\(2, 4\\) does not end with"),
    (lambda: nn.InstanceNorm2d(3, affine=True)(d2s.zeros(2, 4, 3, 3)), "match num_features"),
])
def test_bad_input_is_a_clear_error(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()


# ------------------------------------------------------------------ a ResNet-style model: PyTorch's checkpoint
def small_resnet(lib):
    """Conv-BN-ReLU stem, max pool, one residual block with a strided 1x1 projection, global
    average pool and a linear head: every layer of a torchvision ResNet, written once for
    ``torch`` or ``d2s``."""
    nn_ = lib.nn

    class Block(nn_.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn_.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn_.BatchNorm2d(cout)
            self.conv2 = nn_.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn_.BatchNorm2d(cout)
            self.downsample = nn_.Sequential(nn_.Conv2d(cin, cout, 1, stride, bias=False), nn_.BatchNorm2d(cout))

        def forward(self, x):
            out = lib.relu(self.bn1(self.conv1(x)))
            return lib.relu(self.bn2(self.conv2(out)) + self.downsample(x))

    class Net(nn_.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn_.Conv2d(3, 8, 7, 2, 3, bias=False)
            self.bn1 = nn_.BatchNorm2d(8)
            self.maxpool = nn_.MaxPool2d(3, 2, 1)
            self.layer1 = Block(8, 16, 2)
            self.avgpool = nn_.AdaptiveAvgPool2d((1, 1))
            self.fc = nn_.Linear(16, 5)

        def forward(self, x):
            x = self.maxpool(lib.relu(self.bn1(self.conv1(x))))
            return self.fc(lib.flatten(self.avgpool(self.layer1(x)), 1))

    return Net()


def test_a_checkpoint_without_num_batches_tracked_loads_as_in_pytorch():
    # PyTorch fills a missing num_batches_tracked with the module's own unless the dict's
    # _metadata says the format is version 2 (d2s refused every such checkpoint)
    m = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.InstanceNorm1d(3, track_running_stats=True))
    m[1].num_batches_tracked.fill_(5)
    sd = {k: v.numpy() * 2 for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked")}
    res = m.load_state_dict(sd)
    assert res.missing_keys == [] and repr(res) == "<All keys matched successfully>"
    assert m[1].num_batches_tracked.item() == 5 and np.array_equal(m[1].running_var.numpy(), np.full(3, 2.0))

    class Versioned(dict):
        _metadata = {"1": {"version": 2}, "2": {"version": 1}}

    with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict: \"1.num_batches_tracked\"\.\n"):
        m.load_state_dict(Versioned(sd))
    with pytest.raises(RuntimeError, match='"weight"'):  # other keys stay required
        nn.BatchNorm1d(3).load_state_dict({"bias": np.zeros(3)})


def test_a_pytorch_resnet_checkpoint_loads_and_gives_pytorchs_outputs():
    torch = torch_parity.live_torch()
    if torch is None:
        pytest.skip("needs torch (test_matches_torch covers each layer with stored references)")
    torch.manual_seed(0)
    tm = small_resnet(torch)
    x = rn(2, 3, 32, 32).astype("float32")
    tm.train()
    for _ in range(2):  # running statistics that are not the defaults
        tm(torch.tensor(x))
    dm = small_resnet(d2s)
    assert list(dm.state_dict()) == list(tm.state_dict())
    dm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    tm.eval()
    dm.eval()
    want = tm(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(dm(d2s.tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    tm.train()
    dm.train()
    np.testing.assert_allclose(dm(d2s.tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dm.layer1.bn2.running_var.numpy(), tm.layer1.bn2.running_var.numpy(), rtol=1e-5)


def _train(model, steps, x, y, step_fn=None):
    opt = d2s.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for k in range(steps):
        out = (step_fn or model)(d2s.tensor(x * (1 + 0.3 * k)))
        loss = nn.functional.cross_entropy(out, d2s.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_converted_model_with_batchnorm_trains_as_eager():
    """Three SGD steps of a converted ResNet-style model equal eager ones: losses, parameters and
    buffers (the running statistics are updated inside the program and written back each call)."""
    d2s.manual_seed(0)
    eager = small_resnet(d2s)
    d2s.manual_seed(0)
    converted = small_resnet(d2s)
    static = d2s.jit.to_static(converted)
    x = rn(4, 3, 16, 16).astype("float32")
    y = np.array([0, 3, 1, 4])
    want = _train(eager, 3, x, y)
    got = _train(converted, 3, x, y, static)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for (k, a), (_, b) in zip(eager.state_dict().items(), converted.state_dict().items()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-6, err_msg=k)
    assert converted.bn1.num_batches_tracked.item() == 3
    program = static.forward.programs[0] if hasattr(static.forward, "programs") else None
    assert program is not None
    eager.eval()
    converted.eval()
    np.testing.assert_allclose(static(d2s.tensor(x)).numpy(), eager(d2s.tensor(x)).numpy(), rtol=1e-4, atol=1e-5)


def test_converted_batchnorm_saves_and_exports(tmp_path):
    """An eval-mode model with every layer family saves (d2s_runtime runs it) and exports to ONNX."""
    import d2s_runtime
    import onnxruntime as ort
    d2s.manual_seed(1)
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
                      nn.GroupNorm(2, 4), nn.ConvTranspose2d(4, 4, 2, stride=2), nn.InstanceNorm2d(4, affine=True),
                      nn.Upsample(scale_factor=2), nn.AvgPool2d(2), nn.LayerNorm([4, 6, 6]), nn.PixelUnshuffle(2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 3))
    x = rn(2, 3, 5, 5).astype("float32")
    m(d2s.tensor(x))  # one training step's running statistics
    m.eval()
    want = m(d2s.tensor(x)).numpy()
    spec = [d2s.jit.InputSpec([None, 3, 5, 5], "float32", name="x")]
    d2s.jit.save(d2s.jit.to_static(m), str(tmp_path / "m"), input_spec=spec)
    np.testing.assert_allclose(np.asarray(d2s_runtime.load(str(tmp_path / "m"))(x)), want, rtol=1e-5, atol=1e-5)
    d2s.onnx.export(m, str(tmp_path / "m.onnx"), spec)
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-5)


def test_converted_batchnorm_with_a_dynamic_batch_counts_each_calls_batch():
    """With the batch size unknown when the program is built, the unbiased running variance
    takes the count of each call's batch."""
    d2s.manual_seed(3)
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, momentum=None), nn.ReLU())
    e = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, momentum=None), nn.ReLU())
    e.load_state_dict(m.state_dict())
    s = d2s.jit.to_static(m, input_spec=[d2s.jit.InputSpec([None, 3, 6, 6])])
    for n in (2, 5, 3):
        x = d2s.tensor(rn(n, 3, 6, 6).astype("float32"))
        np.testing.assert_allclose(s(x).numpy(), e(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m[1].running_var.numpy(), e[1].running_var.numpy(), rtol=1e-5)
    np.testing.assert_allclose(m[1].running_mean.numpy(), e[1].running_mean.numpy(), rtol=1e-5, atol=1e-7)
    assert m[1].num_batches_tracked.item() == 3 and len(s.forward.programs) == 1


@pytest.mark.parametrize("fn", [
    lambda x: nn.functional.batch_norm(x, None, None, training=True),
    lambda x: nn.functional.layer_norm(x, (6,)), lambda x: nn.functional.group_norm(x, 2),
    lambda x: nn.functional.instance_norm(x), lambda x: nn.functional.rms_norm(x, [6]),
    lambda x: nn.functional.local_response_norm(x, 3), lambda x: nn.functional.normalize(x),
], ids=["batch", "layer", "group", "instance", "rms", "local_response", "normalize"])
def test_runs_on_every_device(device, fn):
    matches_cpu(fn, [rn(2, 4, 5, 6).astype("float32")], device)


@pytest.mark.parametrize("kind, shape", [("BatchNorm1d", (4, 3)), ("BatchNorm2d", (2, 3, 4, 5)),
                                         ("GroupNorm", (2, 4, 5)), ("LayerNorm", (4, 3))])
def test_converted_with_every_dim_dynamic_trains_as_eager(kind, shape):
    # the gradients of the affine parameters are summed down to a shape whose dims are all known
    # only when the program runs: a reshape could not express it (a KeyError after a fallback)
    args = {"GroupNorm": (2, 4)}.get(kind, (3,))
    d2s.manual_seed(0)
    eager, static = nn.__dict__[kind](*args), nn.__dict__[kind](*args)
    static.load_state_dict(eager.state_dict())
    static = d2s.jit.to_static(static, input_spec=[d2s.jit.InputSpec([None] * len(shape), "float32")])
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    grads = []
    for m in (eager, static, static):
        xi = d2s.tensor(x, requires_grad=True)
        y = m(xi)
        (y * y).sum().backward()
        grads.append([xi.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()])
        m.zero_grad()
    for got in grads[1:]:
        for w, g in zip(grads[0], got):
            np.testing.assert_array_equal(g, w)
