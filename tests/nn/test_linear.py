"""Linear, Bilinear, Identity, Flatten and Unflatten against PyTorch (weights through
``functional_call``, float64 gradients; converted, saved and exported forms)."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(5)
X1 = R.standard_normal((4, 3))
X2 = R.standard_normal((4, 5))

TORCH_CASES = [
    Case("bilinear", lambda t, a, b, w, c: t.nn.functional.bilinear(a, b, w, c), X1, X2,
         R.standard_normal((2, 3, 5)), R.standard_normal(2)),
    Case("Bilinear_no_bias_3d", lambda t, a, b, w: t.func.functional_call(
        t.nn.Bilinear(3, 5, 2, bias=False), {"weight": w}, (a, b)), X1.reshape(2, 2, 3), X2.reshape(2, 2, 5),
        R.standard_normal((2, 3, 5))),
    Case("linear_1d_weight", lambda t, x, w: t.nn.functional.linear(x, w), X1, R.standard_normal(3)),
    Case("Linear", lambda t, x, w, b: t.func.functional_call(t.nn.Linear(3, 2), {"weight": w, "bias": b}, (x,)),
         X1, R.standard_normal((2, 3)), R.standard_normal(2)),
    Case("Unflatten", lambda t, x: t.nn.Unflatten(1, (2, 3))(x), R.standard_normal((4, 6, 2)),
         dynamic="the unflattened sizes name the dims"),
    Case("Unflatten_minus_one", lambda t, x: t.nn.Unflatten(-1, (-1, 2))(x), R.standard_normal((4, 6)),
         dynamic="the unflattened sizes name the dims"),
    Case("Flatten_Identity", lambda t, x: t.nn.Identity()(t.nn.Flatten(0, 1)(x)), R.standard_normal((2, 3, 4)),
         dynamic="F.flatten refuses two merged dims unknown until run time"),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_reprs_and_state_dicts_are_pytorchs():
    assert repr(nn.Bilinear(3, 5, 2)) == "Bilinear(in1_features=3, in2_features=5, out_features=2, bias=True)"
    assert repr(nn.Unflatten(1, (2, 3))) == "Unflatten(dim=1, unflattened_size=(2, 3))"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert list(nn.Bilinear(3, 5, 2).state_dict()) == ["weight", "bias"]
    assert list(nn.Linear(3, 2, bias=False).state_dict()) == ["weight"]
    assert nn.Linear(3, 2, bias=False).bias is None
    assert nn.Linear(3, 2, dtype=d2s.float64).weight.dtype == "float64"


def test_linear_feature_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="input has 4 features"):
        nn.Linear(3, 2)(d2s.ones(2, 4))
    with pytest.raises(ValueError, match="do not match the weight"):
        nn.Bilinear(3, 5, 2)(d2s.ones(2, 3), d2s.ones(2, 4))
