"""Activation layers and functions against PyTorch: values, float64 gradients (at the kinks
too, where PyTorch's backward picks a side), ``inplace=``, modules' reprs; converted, saved
and exported forms through the parity harness."""
import warnings

import numpy as np
import pytest

import d2s
import torch_parity
from d2s import nn
from d2s.nn import functional as F
from torch_parity import Case

_HALVED = "glu halves a dim, whose size must be known when the program is built"
_TWICE = "returns one tensor twice, which an ONNX graph cannot list as two outputs"
R = np.random.default_rng(0)
# every activation's kinks (0, +-1, +-3, 6, +-0.5, 20) and random points between them
KINKS = np.array([-7.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 20.0, 25.0, -25.0])
X = np.concatenate([KINKS, R.standard_normal(12) * 3]).reshape(4, 6)
X32 = X.astype(np.float32)
X4 = R.standard_normal((2, 3, 4, 2))


def fn(name, **kw):
    return lambda t, x: getattr(t.nn.functional, name)(x, **kw)


def mod(name, *args, **kw):
    return lambda t, x: getattr(t.nn, name)(*args, **kw)(x)


_NO_F64_ERF = "onnxruntime has no float64 Erf kernel (the float32 case exports and runs)"

TORCH_CASES = [
    Case("relu", fn("relu"), X),
    Case("relu6", fn("relu6"), X),
    Case("leaky_relu", fn("leaky_relu", negative_slope=0.2), X),
    Case("elu", fn("elu", alpha=0.7), X),
    Case("selu", fn("selu"), X),
    Case("celu", fn("celu", alpha=1.5), X),
    Case("silu", fn("silu"), X),
    Case("mish", fn("mish"), X),
    Case("softplus", fn("softplus"), X),
    Case("softplus_beta", fn("softplus", beta=2.0, threshold=5.0), X),
    Case("softsign", fn("softsign"), X),
    Case("hardtanh", fn("hardtanh", min_val=-0.5, max_val=1.0), X),
    Case("hardswish", fn("hardswish"), X),
    Case("hardsigmoid", fn("hardsigmoid"), X),
    Case("logsigmoid", fn("logsigmoid"), X),
    Case("tanhshrink", fn("tanhshrink"), X),
    Case("softshrink", fn("softshrink", lambd=0.5), X),
    Case("softshrink_keeps_nan", fn("softshrink", lambd=0.5), np.array([np.nan, 0.3, -0.3, 2.0]), grad=False,
         onnx="onnxruntime's Shrink maps NaN to 0"),
    Case("elu_small_negatives_float32", lambda t, x: (t.nn.functional.elu(x), t.nn.functional.selu(x),
                                                      t.nn.functional.celu(x, alpha=2.0)),
         np.array([-1e-30, -1e-7, -1e-5, -3e-3, 0.5], dtype="float32"), rtol=1e-6, atol=0),
    Case("hardshrink", fn("hardshrink", lambd=1.0), X),
    Case("threshold", lambda t, x: t.nn.functional.threshold(x, 0.5, -2.0), X),
    Case("gelu_tanh", fn("gelu", approximate="tanh"), X),
    # the exact GELU composes erf from d2s ops until d2s has an erf op (1.5e-7 from the exact one)
    Case("gelu_exact", fn("gelu"), X, rtol=2e-6, atol=2e-6, onnx=_NO_F64_ERF),
    Case("gelu_exact_float32", fn("gelu"), X.astype("float32"), rtol=2e-6, atol=2e-6),
    Case("glu", fn("glu", dim=0), X, dynamic=_HALVED),
    Case("glu_last", fn("glu"), X4, dynamic=_HALVED),
    Case("softmax_dim", fn("softmax", dim=1), X4),
    Case("log_softmax_dim", fn("log_softmax", dim=-1), X4),
    Case("softmin_dim", fn("softmin", dim=0), X),
    Case("softmax_dtype", lambda t, x: t.nn.functional.softmax(x, dim=-1, dtype=t.float64), X32, grad=False),
    Case("relu_float32", fn("relu"), X32),
    Case("gelu_float32", fn("gelu", approximate="tanh"), X32, rtol=1e-6, atol=1e-6),
    # modules
    Case("ReLU6", mod("ReLU6"), X),
    Case("LeakyReLU", mod("LeakyReLU", 0.1), X),
    Case("ELU", mod("ELU", alpha=2.0), X),
    Case("Hardtanh", mod("Hardtanh", -2.0, 2.0), X),
    Case("Softplus", mod("Softplus", beta=0.5, threshold=10.0), X),
    Case("Softmax2d", mod("Softmax2d"), X4),
    Case("LogSoftmax", mod("LogSoftmax", dim=1), X4),
    Case("Threshold", mod("Threshold", 0.0, 1.5), X),
    Case("Identity", mod("Identity", 3, some="arg"), X),
    Case("PReLU", lambda t, x, w: t.func.functional_call(t.nn.PReLU(3), {"weight": w}, (x,)),
         X4, np.array([0.25, -0.5, 2.0])),
    Case("PReLU_single", lambda t, x, w: t.nn.functional.prelu(x, w), X, np.array([0.3])),
    # a 0-d input keeps its shape with a (1,) weight, as nn.PReLU()(x) gives (was (1,))
    Case("PReLU_0d_input", lambda t, x, w: t.nn.functional.prelu(x, w), np.array(-1.5), np.array([0.3])),
    # inplace: the result and the input itself both change (on a non-leaf, as PyTorch allows)
    Case("relu_inplace", lambda t, x: _inplace(t, "relu", x), X, onnx=_TWICE),
    Case("elu_inplace", lambda t, x: _inplace(t, "elu", x), X, onnx=_TWICE),
    Case("hardswish_inplace", lambda t, x: _inplace(t, "hardswish", x), X, onnx=_TWICE),
    Case("dropout_eval", lambda t, x: t.nn.functional.dropout(x, 0.5, training=False), X),
    Case("Dropout_eval", lambda t, x: t.nn.Dropout(0.3).eval()(x), X),
    Case("Dropout2d_eval", lambda t, x: t.nn.Dropout2d(0.3).eval()(x), X4),
    Case("AlphaDropout_p0", lambda t, x: t.nn.AlphaDropout(0.0).train()(x), X),
]

# the randomized activations in evaluation (deterministic there; their training draws are d2s's
# generator's, checked by property below)
TORCH_CASES += [
    Case("rrelu_eval", lambda t, x: (t.nn.functional.rrelu(x), t.nn.functional.rrelu(x, 0.1, 0.5),
                                     t.rrelu(x, 0.2, 0.3), t.nn.RReLU(0.05, 0.25).eval()(x)), X),
]


def _inplace(t, name, x):
    y = x * 1.0
    out = getattr(t.nn.functional, name)(y, inplace=True)
    return out, y


# Converting, saving and exporting every case would take most of the suite's time budget: the
# cases below cover the ops of every activation in those forms (where, clip, logaddexp, exp,
# tanh, sigmoid, softmax, split, in-place rebinding); the others compare eagerly only.
CONVERTED = {"relu", "elu", "softplus_beta", "hardtanh", "hardswish", "hardsigmoid", "softshrink", "hardshrink",
             "gelu_tanh", "gelu_exact", "glu", "softmax_dim", "softmin_dim", "PReLU", "relu_inplace", "mish",
             "logsigmoid", "softsign", "Threshold"}
for _case in TORCH_CASES:
    if _case.name not in CONVERTED:
        _case.forms["static"] = "eager only: its ops are converted, saved and exported in the CONVERTED cases"


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_inplace_on_a_leaf_that_requires_grad_is_refused():
    x = d2s.tensor([1.0, -1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        F.relu(x, inplace=True)
    with d2s.no_grad():
        F.relu(x, inplace=True)
    np.testing.assert_array_equal(x.numpy(), [1.0, 0.0])


def test_inplace_spellings():
    for name, args in (("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.5)),
                       ("threshold_", (0.1, 7.0))):
        x = d2s.tensor(X)
        out = getattr(F, name)(x, *args)
        want = getattr(F, name[:-1])(d2s.tensor(X), *args)
        assert out is x and np.array_equal(x.numpy(), want.numpy()), name


def test_inplace_module_writes_its_input():
    x = d2s.tensor([[-1.0, 2.0]])
    y = nn.ReLU(inplace=True)(x)
    assert y is x and x.numpy().tolist() == [[0.0, 2.0]]


def test_softmax_without_dim_warns_and_picks_pytorchs_dim():
    x = d2s.tensor(X4)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(x)
    np.testing.assert_allclose(out.numpy(), F.softmax(x, dim=1).numpy())
    with pytest.warns(UserWarning):
        three = F.log_softmax(d2s.tensor(X4[0]))
    np.testing.assert_allclose(three.numpy(), F.log_softmax(d2s.tensor(X4[0]), dim=0).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.softmax(x, axis=-1)  # d2s's axis= alias names the dim: no warning


def test_dropout_family_in_training_mode():
    d2s.manual_seed(0)
    x = d2s.ones(200, 8, 3, 3)
    y = nn.Dropout2d(0.5)(x).numpy()
    per_channel = y.reshape(200, 8, 9)
    # whole channels are kept (scaled by 2) or zeroed
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.35 < (per_channel[..., 0] == 0).mean() < 0.65
    a = nn.AlphaDropout(0.2)(d2s.randn(20000)).numpy()
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05  # SELU's statistics kept
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_gradients_at_the_kinks_are_pytorchs():
    # spelled out (the parity cases check them against PyTorch too): PyTorch's backward picks
    # these sides at the kinks
    x = d2s.tensor([-3.0, 0.0, 3.0, -1.0, 1.0, 6.0], dtype="float64", requires_grad=True)
    cases = {"relu": [0, 0, 1, 0, 1, 1], "leaky_relu": [0.01, 0.01, 1, 0.01, 1, 1],
             "hardtanh": [0, 1, 0, 0, 0, 0], "relu6": [0, 0, 1, 0, 1, 0],
             "hardswish": [0, 0.5, 1, 1 / 6, 5 / 6, 1], "hardsigmoid": [0, 1 / 6, 0, 1 / 6, 1 / 6, 0],
             "elu": [np.exp(-3), 1, 1, np.exp(-1), 1, 1]}
    for name, want in cases.items():
        g, = d2s.autograd.grad(getattr(F, name)(x).sum(), [x])
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12, err_msg=name)


def test_reprs_are_pytorchs():
    assert repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(0.2, True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.ELU()) == "ELU(alpha=1.0)"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"
    assert repr(nn.ReLU6()) == "ReLU6()"
    assert repr(nn.Softplus()) == "Softplus(beta=1.0, threshold=20.0)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"
    assert repr(nn.PReLU()) == "PReLU(num_parameters=1)"
    assert repr(nn.Dropout(0.2)) == "Dropout(p=0.2, inplace=False)"
    assert repr(nn.Softshrink(0.3)) == "Softshrink(0.3)"
    assert repr(nn.Threshold(0.1, 20)) == "Threshold(threshold=0.1, value=20)"


def test_prelu_parameters_and_errors():
    p = nn.PReLU(4, init=0.1)
    assert list(p.state_dict()) == ["weight"] and np.allclose(p.weight.numpy(), 0.1)
    with pytest.raises(ValueError, match="4 slopes but the input has 3 channels"):
        p(d2s.ones(2, 3))
    # a 1-d input has one channel, as PyTorch counts it (its slopes were applied elementwise)
    with pytest.raises(ValueError, match="3 slopes but the input has 1 channels"):
        nn.PReLU(3)(d2s.ones(3))
    with pytest.raises(ValueError, match="must be even"):
        F.glu(d2s.ones(2, 3))



def test_rrelu_training_draws_a_slope_per_negative_element_in_its_range():
    d2s.manual_seed(0)
    x = d2s.tensor(-np.abs(R.standard_normal((50, 40))) - 0.1)
    slopes = (F.rrelu(x, 0.1, 0.4, training=True) / x).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.4 and np.unique(slopes.round(6)).size > 100
    pos = d2s.tensor(np.abs(R.standard_normal(5)))
    assert np.array_equal(nn.RReLU()(pos).numpy(), pos.numpy())  # (a module trains by default)
    y = x.clone()
    F.rrelu_(y, 0.2, 0.2, training=True)
    np.testing.assert_allclose(y.numpy(), x.numpy() * 0.2, rtol=1e-6)


def test_gumbel_softmax_samples_the_simplex_and_hard_is_straight_through():
    d2s.manual_seed(1)
    logits = d2s.tensor(R.standard_normal((6, 5)), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).numpy(), np.ones(6), rtol=1e-12)
    d2s.manual_seed(1)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert set(np.unique(hard.detach().numpy())) == {0.0, 1.0} and (hard.detach().numpy().sum(-1) == 1).all()
    assert (hard.detach().numpy().argmax(-1) == soft.detach().numpy().argmax(-1)).all()  # the same draw
    w = d2s.tensor(R.standard_normal((6, 5)))
    g_hard, = d2s.autograd.grad((hard * w).sum(), [logits])
    g_soft, = d2s.autograd.grad((soft * w).sum(), [logits])
    np.testing.assert_allclose(g_hard.numpy(), g_soft.numpy(), rtol=1e-10)
    # the most likely class wins most often
    d2s.manual_seed(2)
    wins = F.gumbel_softmax(d2s.tensor(np.tile([0.0, 2.0, 0.0], (2000, 1))), hard=True, dim=1).numpy().mean(0)
    assert wins[1] > 0.6 and abs(wins[0] - wins[2]) < 0.08
