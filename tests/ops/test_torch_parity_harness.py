"""The torch parity harness itself (tests/torch_parity.py) on calls d2s already had: it compares
structure, dtypes, values and gradients, and the converted, saved and ONNX forms."""
import numpy as np
import pytest

import torch_parity
from torch_parity import Case

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))

TORCH_CASES = [
    Case("exp_sum", lambda t, x: t.exp(x).sum(), X),
    Case("softmax_last", lambda t, x: t.softmax(x, -1), X),
    Case("tuple_out", lambda t, x: (x * 2.0, x.sum()), X),
    Case("float32_mean", lambda t, x: x.mean(), X.astype("float32"), rtol=1e-6, atol=1e-6),
    Case("int_sum", lambda t, x: x.sum(), np.arange(6, dtype="int64").reshape(2, 3)),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_a_different_answer_fails():
    case = Case("exp_sum", lambda t, x: t.exp(x).sum() + 1e-3, X)
    with pytest.raises(AssertionError):
        torch_parity.check(case, __name__)


def test_a_different_structure_fails():
    case = Case("tuple_out", lambda t, x: [x * 2.0, x.sum()], X)
    with pytest.raises(AssertionError, match="structure"):
        torch_parity.check(case, __name__)


def test_a_missing_reference_says_how_to_write_it():
    with pytest.raises(AssertionError, match="python -m tests.torch_parity"):
        torch_parity.check(Case("never_written", lambda t, x: x, X), __name__)
