"""``d2s.special`` (d2s/special.py) against PyTorch's ``torch.special``: each alias on ordinary and
edge inputs (values, dtypes, float64 gradients, then converted, dynamic and saved; ONNX where
the op has a form), and the module lists exactly the names it has."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(8)
X = R.standard_normal((3, 4))
POS = R.uniform(0.6, 3.0, (3, 4))
UNIT = R.uniform(0.05, 0.95, (3, 4))
NO_GAMMA = "ONNX has no gamma functions"

TORCH_CASES = [
    Case("gamma_family", lambda t, x: (t.special.digamma(x), t.special.psi(x), t.special.polygamma(3, x),
                                       t.special.gammaln(x), t.special.multigammaln(x + 1, 2)), POS,
         onnx=NO_GAMMA, rtol=1e-12, atol=1e-12),
    Case("gamma_poles_float32", lambda t, x: (t.special.psi(x), t.special.polygamma(1, x), t.special.polygamma(2, x),
                                              t.special.gammaln(x)),
         np.array([0.0, -1.0, -2.0, -1e-3, 1e-3, -2.5], np.float32), grad=False, onnx=NO_GAMMA, rtol=2e-6, atol=0),
    Case("erf_family", lambda t, x, u: (t.special.erf(x), t.special.erfc(x), t.special.erfinv(u * 2 - 1)), X, UNIT,
         rtol=1e-6, atol=1e-7, onnx="ONNX has no inverse error function"),
    Case("exp_log", lambda t, x, u: (t.special.exp2(x), t.special.expm1(x), t.special.log1p(u), t.special.expit(x),
                                     t.special.logit(u), t.special.logit(u, eps=0.1), t.special.xlogy(u, x.abs())),
         X, UNIT),
    Case("sinc_round", lambda t, x: (t.special.sinc(x), t.special.round(x * 10), t.special.round(x, decimals=2)),
         np.concatenate([X.ravel(), [0.0]]), rtol=1e-6, atol=1e-7),
    Case("softmax_family", lambda t, x: (t.special.softmax(x, 1), t.special.log_softmax(x, 0),
                                         t.special.logsumexp(x, 1), t.special.logsumexp(x, (0, 1), keepdim=True),
                                         t.special.softmax(x, -1, dtype=t.float64)),
         X.astype(np.float32), rtol=1e-6, atol=1e-6),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_module_lists_what_it_has():
    assert all(callable(getattr(d2s.special, n)) for n in d2s.special.__all__)
    assert d2s.special.psi is d2s.special.digamma is d2s.digamma
    with pytest.raises(AttributeError):
        d2s.special.bessel_j0  # noqa: B018  (not in d2s: an AttributeError, as for any missing name)
