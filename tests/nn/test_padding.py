"""Padding layers (d2s/nn/padding.py) and F.pad's modes against PyTorch: values and float64
gradients for constant, reflect, replicate and circular padding of 3-d and 4-d inputs."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(3)


def rn(*shape):
    return R.standard_normal(shape)


def layer(name, *args):
    return lambda t, x: getattr(t.nn, name)(*args)(x)


TORCH_CASES = [
    Case("F_pad_constant", lambda t, x: t.nn.functional.pad(x, (1, 2, 0, 1), value=0.5), rn(2, 3, 4)),
    # negative pads crop first, then the other pads apply to the cropped tensor (d2s refused them)
    Case("F_pad_negative_crops", lambda t, x: (t.nn.functional.pad(x, (-1, 2, 1, -1), value=0.5),
                                                t.nn.functional.pad(x, (-1, -2)), t.nn.functional.pad(x, (2, -1), mode="reflect"),
                                                t.nn.functional.pad(x, (-1, 2), mode="replicate"),
                                                t.nn.functional.pad(x, (2, -1), mode="circular")), rn(2, 3, 4)),
    Case("F_pad_reflect_4d", lambda t, x: t.nn.functional.pad(x, (2, 1, 1, 2), mode="reflect"), rn(2, 2, 4, 5)),
    Case("F_pad_replicate_4d", lambda t, x: t.nn.functional.pad(x, (3, 0, 2, 1), mode="replicate"), rn(1, 2, 3, 3)),
    Case("F_pad_circular_4d", lambda t, x: t.nn.functional.pad(x, (1, 2, 2, 1), mode="circular"), rn(2, 1, 3, 4)),
    Case("F_pad_reflect_3d", lambda t, x: t.nn.functional.pad(x, (3, 2), mode="reflect"), rn(2, 3, 5)),
    Case("ZeroPad2d", layer("ZeroPad2d", (1, 0, 2, 1)), rn(2, 2, 3, 3)),
    Case("ZeroPad2d_int", layer("ZeroPad2d", 2), rn(1, 2, 2, 3)),
    Case("ZeroPad1d", layer("ZeroPad1d", (2, 1)), rn(2, 3, 4)),
    Case("ConstantPad1d", layer("ConstantPad1d", 2, 3.5), rn(2, 3, 4)),
    Case("ConstantPad2d", layer("ConstantPad2d", (1, 2, 3, 0), -1.0), rn(2, 2, 3, 3)),
    Case("ReflectionPad1d", layer("ReflectionPad1d", (3, 1)), rn(2, 3, 5)),
    Case("ReflectionPad2d", layer("ReflectionPad2d", 2), rn(1, 3, 4, 5)),
    Case("ReflectionPad2d_unbatched", layer("ReflectionPad2d", (1, 1, 2, 0)), rn(2, 3, 4)),
    Case("ReplicationPad1d", layer("ReplicationPad1d", (0, 4)), rn(2, 3, 3)),
    Case("ReplicationPad2d", layer("ReplicationPad2d", (2, 1, 0, 3)), rn(2, 2, 3, 4)),
    Case("CircularPad1d", layer("CircularPad1d", 2), rn(2, 2, 4)),
    Case("CircularPad2d", layer("CircularPad2d", (1, 2, 1, 0)), rn(1, 2, 3, 4)),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_reprs_are_pytorchs():
    made = {"ZeroPad2d": nn.ZeroPad2d(1), "ConstantPad1d": nn.ConstantPad1d((1, 2), 2.0),
            "ReflectionPad2d": nn.ReflectionPad2d((1, 2, 3, 4)), "ReplicationPad1d": nn.ReplicationPad1d(3)}
    assert made["ZeroPad2d"].extra_repr() == "(1, 1, 1, 1)"
    assert made["ConstantPad1d"].extra_repr() == "padding=(1, 2), value=2.0"
    torch = torch_parity.live_torch()
    if torch is not None:
        want = {"ZeroPad2d": torch.nn.ZeroPad2d(1), "ConstantPad1d": torch.nn.ConstantPad1d((1, 2), 2.0),
                "ReflectionPad2d": torch.nn.ReflectionPad2d((1, 2, 3, 4)),
                "ReplicationPad1d": torch.nn.ReplicationPad1d(3)}
        assert {k: m.extra_repr() for k, m in made.items()} == {k: m.extra_repr() for k, m in want.items()}


@pytest.mark.parametrize("make,msg", [
    (lambda: nn.ReflectionPad1d(4)(d2s.zeros(1, 2, 4)), "reflect padding"),
    (lambda: nn.ZeroPad2d((1, 2, 3))(d2s.zeros(1, 2, 4, 4)), "padding needs one int or 4"),
])
def test_bad_padding_is_a_clear_error(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()
