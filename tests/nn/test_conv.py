"""Convolution layers and functions (d2s/nn/conv.py, d2s/ops/conv.py) against PyTorch: values and
float64 gradients of the input and the weight over strides, paddings (per side, 'same', 'valid',
padding modes), dilations and groups; the layers' parameters, state_dict keys, initialization and
loading of a PyTorch state_dict."""
import math

import numpy as np
import pytest

import d2s
import torch_parity
from device_helpers import matches_cpu
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(0)


def rn(*shape):
    return R.standard_normal(shape)


def _layer(t, cls, x, w, b, **kw):
    """``cls`` of library ``t`` in float64 with the given weight and bias, applied to x."""
    m = getattr(t.nn, cls)(**kw, dtype=t.float64)
    with t.no_grad():
        m.weight.copy_(w)
        if b is not None:
            m.bias.copy_(b)
    return m(x)


def conv2d(**kw):
    return lambda t, x, w, b: t.nn.functional.conv2d(x, w, b, **kw)


def f32(*arrays):
    return [a.astype("float32") for a in arrays]


# onnxruntime has float32 kernels only for these ops: the float32 cases check the export
ONNX64 = "onnxruntime has no float64 Conv, ConvTranspose or Col2Im kernel (the float32 cases export)"
SAME_DYNAMIC = "padding='same' needs the kernel size when the program is built"
FILLED_INSIDE = "the case builds and fills its layer inside the function (test_converted_layers_train_as_eager)"


TORCH_CASES = [
    Case("conv2d_plain", conv2d(), rn(2, 3, 7, 6), rn(4, 3, 3, 2), rn(4), onnx=ONNX64),
    Case("conv2d_stride_padding", conv2d(stride=2, padding=1), rn(2, 3, 7, 6), rn(4, 3, 3, 3), rn(4), onnx=ONNX64),
    Case("conv2d_per_dim", conv2d(stride=(2, 1), padding=(1, 2)), rn(1, 2, 6, 5), rn(3, 2, 3, 2), rn(3), onnx=ONNX64),
    Case("conv2d_dilation", conv2d(padding=2, dilation=2), rn(2, 2, 7, 7), rn(3, 2, 3, 3), rn(3), onnx=ONNX64),
    Case("conv2d_dilation_per_dim", conv2d(stride=2, dilation=(2, 1)), rn(1, 2, 9, 8), rn(2, 2, 3, 2), rn(2),
         onnx=ONNX64),
    Case("conv2d_groups", conv2d(groups=2, padding=1), rn(2, 4, 5, 5), rn(6, 2, 3, 3), rn(6), onnx=ONNX64),
    Case("conv2d_depthwise", conv2d(groups=4, stride=2, padding=1), rn(2, 4, 7, 6), rn(8, 1, 3, 3), rn(8),
         onnx=ONNX64),
    Case("conv2d_same_even_kernel", conv2d(padding="same", dilation=(1, 2)), rn(1, 3, 6, 7), rn(2, 3, 2, 4), rn(2),
         onnx=ONNX64, dynamic=SAME_DYNAMIC),
    Case("conv2d_valid", conv2d(padding="valid"), rn(1, 3, 5, 6), rn(2, 3, 3, 3), rn(2), onnx=ONNX64),
    Case("conv2d_pointwise", conv2d(), rn(2, 3, 4, 5), rn(5, 3, 1, 1), rn(5), onnx=ONNX64),
    Case("conv2d_odd_stride3", conv2d(stride=3, padding=1), rn(2, 2, 8, 7), rn(3, 2, 3, 3), rn(3), onnx=ONNX64),
    Case("conv2d_no_bias", lambda t, x, w: t.nn.functional.conv2d(x, w, stride=2), rn(2, 2, 5, 5), rn(3, 2, 2, 2),
         onnx=ONNX64),
    Case("conv2d_unbatched", conv2d(padding=1), rn(3, 5, 5), rn(2, 3, 3, 3), rn(2), onnx=ONNX64),
    Case("conv2d_float32", conv2d(stride=2, padding=1), *f32(rn(2, 3, 8, 8), rn(4, 3, 3, 3), rn(4)),
         rtol=1e-5, atol=1e-5),
    Case("conv2d_float32_groups_dilation_same", conv2d(padding="same", dilation=(2, 1), groups=2),
         *f32(rn(2, 4, 7, 6), rn(6, 2, 3, 4), rn(6)), rtol=1e-5, atol=1e-5, dynamic=SAME_DYNAMIC),
    Case("conv1d", lambda t, x, w, b: t.nn.functional.conv1d(x, w, b, stride=2, padding=1, dilation=2),
         rn(2, 3, 11), rn(4, 3, 3), rn(4), onnx=ONNX64),
    Case("conv1d_groups_same", lambda t, x, w, b: t.nn.functional.conv1d(x, w, b, padding="same", groups=2),
         rn(2, 4, 9), rn(6, 2, 4), rn(6), onnx=ONNX64, dynamic=SAME_DYNAMIC),
    Case("conv1d_unbatched", lambda t, x, w: t.nn.functional.conv1d(x, w), rn(3, 7), rn(2, 3, 3), onnx=ONNX64),
    Case("conv1d_float32", lambda t, x, w, b: t.nn.functional.conv1d(x, w, b, stride=2, groups=3),
         *f32(rn(2, 3, 10), rn(6, 1, 3), rn(6)), rtol=1e-5, atol=1e-5),
    Case("conv_transpose2d", lambda t, x, w, b: t.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                                                 output_padding=1),
         rn(2, 3, 4, 3), rn(3, 2, 3, 3), rn(2), onnx=ONNX64),
    Case("conv_transpose2d_groups_dilation",
         lambda t, x, w, b: t.nn.functional.conv_transpose2d(x, w, b, stride=(2, 3), padding=(0, 1),
                                                             output_padding=(1, 0), groups=2, dilation=(1, 2)),
         rn(1, 4, 3, 4), rn(4, 3, 2, 3), rn(6), onnx=ONNX64),
    Case("conv_transpose2d_float32",
         lambda t, x, w, b: t.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=(1, 0), output_padding=1,
                                                             groups=2),
         *f32(rn(2, 4, 3, 3), rn(4, 2, 3, 2), rn(4)), rtol=1e-5, atol=1e-5),
    Case("conv_transpose2d_unbatched", lambda t, x, w: t.nn.functional.conv_transpose2d(x, w, stride=2),
         rn(3, 3, 2), rn(3, 2, 2, 2), onnx=ONNX64),
    Case("conv_transpose1d", lambda t, x, w, b: t.nn.functional.conv_transpose1d(x, w, b, stride=3, padding=1,
                                                                                 output_padding=2, dilation=2),
         rn(2, 3, 5), rn(3, 4, 3), rn(4), onnx=ONNX64),
    Case("unfold", lambda t, x: t.nn.functional.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
         rn(2, 3, 6, 7), onnx=ONNX64),
    Case("fold", lambda t, x: t.nn.functional.fold(x, (5, 6), (2, 3), padding=1, stride=(2, 1)), rn(2, 12, 18),
         onnx=ONNX64),
    Case("unfold_fold_float32", lambda t, x: t.nn.functional.fold(
        t.nn.functional.unfold(x, 3, padding=1, stride=2) * 2.0, (5, 6), 3, padding=1, stride=2),
         *f32(rn(2, 2, 5, 6)), rtol=1e-5, atol=1e-5),
    # layers (a padding_mode pads with F.pad first)
    *[Case(f"Conv2d_padding_mode_{mode}",
           lambda t, x, w, b, mode=mode: _layer(t, "Conv2d", x, w, b, in_channels=3, out_channels=2, kernel_size=3,
                                                stride=2, padding=(1, 2), padding_mode=mode),
           rn(2, 3, 6, 7), rn(2, 3, 3, 3), rn(2), grad=[0], static=FILLED_INSIDE)
      for mode in ("zeros", "reflect", "replicate", "circular")],
    Case("Conv2d_same_reflect", lambda t, x, w, b: _layer(t, "Conv2d", x, w, b, in_channels=3, out_channels=2,
                                                          kernel_size=(2, 3), padding="same", padding_mode="reflect"),
         rn(1, 3, 5, 6), rn(2, 3, 2, 3), rn(2), grad=[0], static=FILLED_INSIDE),
    Case("Conv1d_circular", lambda t, x, w, b: _layer(t, "Conv1d", x, w, b, in_channels=2, out_channels=3,
                                                      kernel_size=3, padding=2, dilation=2, padding_mode="circular"),
         rn(2, 2, 8), rn(3, 2, 3), rn(3), grad=[0], static=FILLED_INSIDE),
    Case("ConvTranspose2d_output_size",
         lambda t, x, w, b: _layer_call(t, "ConvTranspose2d", x, w, b, dict(output_size=[8, 7]), in_channels=3,
                                        out_channels=2, kernel_size=3, stride=2, padding=1),
         rn(2, 3, 4, 4), rn(3, 2, 3, 3), rn(2), grad=[0], static=FILLED_INSIDE),
    # 16 or more channels, one group, images up to 16x16: the kernels build their columns channels-last
    # (both orders; the grouped case takes the NCHW path)
    Case("conv2d_many_channels_2x2", conv2d(padding=1), rn(2, 16, 2, 2), rn(16, 16, 3, 3), rn(16), onnx=ONNX64),
    Case("conv2d_many_channels_groups_strided", conv2d(stride=2, padding=(1, 2), dilation=(1, 2), groups=2),
         rn(2, 32, 5, 6), rn(32, 16, 3, 3), rn(32), onnx=ONNX64),
    Case("conv2d_many_channels_few_outputs", conv2d(padding=1), rn(2, 16, 6, 5), rn(4, 16, 3, 3), rn(4),
         onnx=ONNX64),
    Case("conv2d_many_channels_same_dilated", conv2d(padding="same", dilation=(1, 2)), rn(1, 16, 6, 7),
         rn(3, 16, 2, 4), rn(3), onnx=ONNX64, dynamic=SAME_DYNAMIC),
    Case("conv2d_many_channels_float32", conv2d(stride=2, padding=1), *f32(rn(2, 16, 4, 4), rn(24, 16, 3, 3), rn(24)),
         rtol=1e-5, atol=1e-5),
    Case("conv_transpose2d_many_channels",
         lambda t, x, w, b: t.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
         rn(2, 4, 3, 3), rn(4, 16, 3, 3), rn(16), onnx=ONNX64),
    Case("conv1d_many_channels", lambda t, x, w, b: t.nn.functional.conv1d(x, w, b, padding=1),
         rn(2, 16, 9), rn(4, 16, 3), rn(4), onnx=ONNX64),
    # output_padding of the stride or more (PyTorch allows it below the dilation): the output has
    # more windows than the input positions; the backward raised a ShapeError
    Case("conv_transpose2d_output_padding_past_stride",
         lambda t, x, w, b: t.nn.functional.conv_transpose2d(x, w, b, stride=(1, 3), padding=(1, 0),
                                                             output_padding=(1, 1), dilation=(2, 2)),
         rn(2, 3, 4, 3), rn(3, 2, 3, 3), rn(2), onnx=ONNX64),
    Case("conv_transpose1d_output_padding_past_stride",
         lambda t, x, w, b: t.nn.functional.conv_transpose1d(x, w, b, stride=1, padding=1, output_padding=2,
                                                             dilation=3, groups=3),
         rn(2, 3, 5), rn(3, 2, 2), rn(6), onnx=ONNX64),
    Case("conv_transpose2d_many_channels_output_padding_past_stride",
         lambda t, x, w, b: t.nn.functional.conv_transpose2d(x, w, b, padding=1, output_padding=1, dilation=2),
         rn(2, 4, 3, 3), rn(4, 16, 3, 3), rn(16), onnx=ONNX64),
]


def _layer_call(t, cls, x, w, b, call_kw, **kw):
    m = getattr(t.nn, cls)(**kw, dtype=t.float64)
    with t.no_grad():
        m.weight.copy_(w)
        m.bias.copy_(b)
    return m(x, **call_kw)


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


# ------------------------------------------------------------------ layers: parameters and state
# state_dict keys and shapes of PyTorch's layers (checked against live torch where it imports)
LAYERS = {
    "Conv1d(3, 4, 5, groups=1)": (lambda lib: lib.nn.Conv1d(3, 4, 5), {"weight": (4, 3, 5), "bias": (4,)}),
    "Conv2d(4, 6, 3, groups=2, bias=False)": (lambda lib: lib.nn.Conv2d(4, 6, 3, groups=2, bias=False),
                                               {"weight": (6, 2, 3, 3)}),
    "Conv2d(3, 8, (3, 5))": (lambda lib: lib.nn.Conv2d(3, 8, (3, 5)), {"weight": (8, 3, 3, 5), "bias": (8,)}),
    "ConvTranspose1d(3, 4, 2)": (lambda lib: lib.nn.ConvTranspose1d(3, 4, 2), {"weight": (3, 4, 2), "bias": (4,)}),
    "ConvTranspose2d(4, 6, 3, groups=2)": (lambda lib: lib.nn.ConvTranspose2d(4, 6, 3, groups=2),
                                            {"weight": (4, 3, 3, 3), "bias": (6,)}),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_state_dict_keys_and_shapes_are_pytorchs(name):
    make, want = LAYERS[name]
    got = {k: tuple(v.shape) for k, v in make(d2s).state_dict().items()}
    assert got == want
    torch = torch_parity.live_torch()
    if torch is not None:
        assert got == {k: tuple(v.shape) for k, v in make(torch).state_dict().items()}


def test_attributes_and_repr_follow_pytorch():
    m = nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode="reflect")
    assert (m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.dilation, m.groups) == \
        (4, 6, (3, 3), (2, 2), (1, 1), (2, 2), 2)
    assert m.bias is None and m.padding_mode == "reflect" and m.transposed is False
    assert m.extra_repr() == ("4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(2, 2), groups=2, "
                              "bias=False, padding_mode=reflect")
    torch = torch_parity.live_torch()
    if torch is not None:
        t = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode="reflect")
        assert m.extra_repr() == t.extra_repr()
        want = torch.nn.ConvTranspose2d(3, 2, 3, 2, 1, 1).extra_repr()
        assert nn.ConvTranspose2d(3, 2, 3, 2, 1, 1).extra_repr() == want
    # a padding string prints unquoted, as PyTorch's (d2s quoted it)
    assert nn.Conv1d(2, 2, 3, padding="same", padding_mode="circular").extra_repr() == (
        "2, 2, kernel_size=(3,), stride=(1,), padding=same, padding_mode=circular")


@pytest.mark.parametrize("make", [lambda: nn.Conv2d(16, 32, 3), lambda: nn.Conv1d(8, 64, 5, groups=2),
                                  lambda: nn.ConvTranspose2d(32, 16, 3)])
def test_default_initialization_is_pytorchs(make):
    """kaiming_uniform(a=sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight and the bias,
    fan_in = weight.shape[1] * kernel elements (as PyTorch computes it, transposed ones too)."""
    d2s.manual_seed(0)
    m = make()
    w, b = m.weight.numpy(), m.bias.numpy()
    fan_in = w.shape[1] * int(np.prod(w.shape[2:]))
    bound = 1.0 / math.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert np.abs(b).max() <= bound


def test_a_pytorch_state_dict_loads_and_gives_pytorchs_outputs():
    torch = torch_parity.live_torch()
    if torch is None:
        pytest.skip("needs torch (the stored cases above load fixed weights the same way)")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1, padding_mode="replicate"), torch.nn.ReLU(),
                             torch.nn.ConvTranspose2d(4, 2, 2, stride=2))
    dm = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, padding_mode="replicate"), nn.ReLU(),
                       nn.ConvTranspose2d(4, 2, 2, stride=2))
    sd = {k: v.numpy() for k, v in tm.state_dict().items()}
    dm.load_state_dict(sd)
    x = rn(2, 3, 5, 4).astype("float32")
    np.testing.assert_allclose(dm(d2s.tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make,msg", [
    (lambda: nn.Conv2d(4, 6, 3, groups=3), "in_channels \\(4\\) must be divisible by groups"),
    (lambda: nn.Conv2d(3, 4, 3, stride=2, padding="same"), "padding='same' is not supported for strided"),
    (lambda: nn.Conv2d(3, 4, 3, padding="full"), "invalid padding string"),
    (lambda: nn.Conv2d(3, 4, 3, padding_mode="mirror"), "padding_mode must be one of"),
    (lambda: nn.Conv2d(3, 4, 3)(d2s.zeros(1, 2, 5, 5)), "conv2d: input \\(1, 2, 5, 5\\) has 2 channels"),
    (lambda: nn.Conv2d(3, 4, 3)(d2s.zeros(1, 3, 2, 2)), "conv2d: input size 2 .*smaller than the kernel size 3"),
    (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2)(d2s.zeros(1, 3, 4, 4), output_size=[12, 9]),
     "valid sizes range from 9 to 10"),
    (lambda: d2s.nn.functional.conv_transpose2d(d2s.zeros(1, 2, 3, 3), d2s.zeros(2, 1, 3, 3), stride=2,
                                                output_padding=2), "output_padding .* must be smaller than the stride"),
])
def test_bad_arguments_are_clear_errors(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()


@pytest.mark.parametrize("fn,shapes", [
    (lambda x, w: d2s.nn.functional.conv2d(x, w, stride=2, padding=1, groups=2), [(2, 4, 7, 6), (4, 2, 3, 3)]),
    (lambda x, w: d2s.nn.functional.conv2d(x, w, padding="same", dilation=2), [(2, 3, 6, 6), (4, 3, 3, 3)]),
    (lambda x, w: d2s.nn.functional.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
     [(2, 4, 5, 4), (4, 3, 3, 3)]),
    (lambda x: d2s.nn.functional.fold(d2s.nn.functional.unfold(x, 3, padding=1), (7, 6), 3, padding=1),
     [(2, 3, 7, 6)]),
], ids=["conv2d", "conv2d_same_dilated", "conv_transpose2d", "unfold_fold"])
def test_runs_on_every_device(device, fn, shapes):
    matches_cpu(fn, [R.standard_normal(s).astype("float32") for s in shapes], device)
