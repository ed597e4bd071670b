"""``torch.*``'s forms of functional layers (d2s/nn/_torch_forms.py) against PyTorch:
torch.layer_norm, group_norm, batch_norm (weight and bias before the running statistics, in
training and evaluation), instance_norm and cosine_similarity: values, dtypes, float64
gradients, then converted, dynamic, saved and ONNX (tests/torch_parity.py)."""
import numpy as np
import pytest

import torch_parity
from torch_parity import Case

R = np.random.default_rng(55)
X = R.standard_normal((4, 6, 5))
W6, B6 = R.uniform(0.5, 1.5, 6), R.standard_normal(6)
MEAN, VAR = R.standard_normal(6), R.uniform(0.5, 2.0, 6)
STATS = ("running statistics passed as tensors are updated in place, which to_static refuses with an error "
         "(the nn layers' are written back)")


def _batch_norm_train(t, x, w, b, m, v):
    m, v = m.clone(), v.clone()
    out = t.batch_norm(x, w, b, m, v, True, 0.1, 1e-5, False)
    return out, m, v


TORCH_CASES = [
    Case("layer_norm", lambda t, x, w, b: (t.layer_norm(x, [5]), t.layer_norm(x, (6, 5), eps=1e-3),
                                           t.layer_norm(x.transpose(1, 2), [6], w, b, 1e-5, True)), X, W6, B6,
         rtol=1e-5, atol=1e-6),
    Case("group_norm", lambda t, x, w, b: (t.group_norm(x, 3), t.group_norm(x, 2, w, b, 1e-5, True)), X, W6, B6,
         rtol=1e-5, atol=1e-6),
    Case("batch_norm_eval", lambda t, x, w, b, m, v: t.batch_norm(x, w, b, m, v, False, 0.1, 1e-5, True),
         X, W6, B6, MEAN, VAR, grad=[0, 1, 2], rtol=1e-5, atol=1e-6),
    Case("batch_norm_train", _batch_norm_train, X, W6, B6, MEAN, VAR, grad=[0, 1, 2], rtol=1e-5, atol=1e-6,
         static=STATS, dynamic=STATS, saved=STATS, onnx=STATS),
    Case("instance_norm", lambda t, x, w, b: (t.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
                                              t.instance_norm(x, None, None, None, None, True, 0.0, 1e-3, True)),
         X, W6, B6, rtol=1e-5, atol=1e-6),
    Case("activations", lambda t, x, w: (t.selu(x), t.celu(x), t.celu(x, alpha=0.5), t.threshold(x, 0.1, -2.0),
                                         t.hardshrink(x), t.hardshrink(x, lambd=1.0), t.prelu(x, w),
                                         t.alpha_dropout(x, 0.5, False)), X, np.array([0.25])),
    Case("rms_pairwise_bilinear", lambda t, x, y, w, b: (t.rms_norm(x, [5]), t.rms_norm(x, (6, 5), eps=1e-3),
                                                         t.pairwise_distance(x[0], y[0]),
                                                         t.pairwise_distance(x[0], y[0], p=1.0, eps=1e-3, keepdim=True),
                                                         t.bilinear(x[0], y[0], w, b)),
         X, R.standard_normal((4, 6, 5)), R.standard_normal((2, 5, 5)), R.standard_normal(2), rtol=1e-5, atol=1e-6),
    Case("cosine_similarity", lambda t, a, b: (t.cosine_similarity(a, b), t.cosine_similarity(a, b, dim=-1),
                                               t.cosine_similarity(a, b[:1], 2, 1e-6)), X, R.standard_normal((4, 6, 5)),
         rtol=1e-5, atol=1e-6),
    # ATen's loss forms: the reduction an int (0 none, 1 mean, 2 sum; none when not given, as PyTorch's)
    Case("aten_losses", lambda t, a, b, y, p: (
        t.kl_div(a.log_softmax(-1), b.softmax(-1)), t.kl_div(a, b, 2, log_target=True), t.kl_div(a, p, reduction=1),
        t.margin_ranking_loss(a[:, 0], b[:, 0], y), t.triplet_margin_loss(a, b, p),
        t.margin_ranking_loss(a[:, 0], b[:, 0], y, 0.1), t.hinge_embedding_loss(a, y[:, None].expand(3, 4), 0.5, 0),
        t.poisson_nll_loss(a, p, True, False, 1e-8, 1), t.poisson_nll_loss(p, p, False, True, 1e-6, 2),
        t.cosine_embedding_loss(a, b, y, 0.2, 0), t.triplet_margin_loss(a, b, p, 1.0, 2.0, 1e-6, True, 1),
        t.binary_cross_entropy_with_logits(a, p.clamp(0, 1), None, p[0] + 1, 2)),
         R.standard_normal((3, 4)), R.standard_normal((3, 4)), np.array([1.0, -1.0, 1.0]), R.uniform(0.1, 2.0, (3, 4)),
         grad=[0, 1]),
    # the Tensor methods of the same two (one function each: d2s/ops/nn.py)
    Case("hardshrink_prelu_methods", lambda t, x, w, w1: (x.hardshrink(), x.hardshrink(0.8), x.prelu(w), x.prelu(w1),
                                                         t.nn.functional.prelu(x[0, 0], w1)),
         X, W6 * 0.2, np.array([0.25])),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)
