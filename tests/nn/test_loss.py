"""Losses and distances against PyTorch: every reduction, class weights, ignore_index, label
smoothing, probability targets, K-dimensional inputs, pos_weight, log_target, 'batchmean';
float64 gradients; converted, saved and exported forms through the parity harness; PyTorch's
errors for bad targets."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import nn
from d2s.nn import functional as F
from torch_parity import Case

R = np.random.default_rng(1)
A = R.standard_normal((5, 4))
B = R.standard_normal((5, 4))
B[0, :2] = A[0, :2]  # zero differences: the kinks of l1, smooth_l1, huber
B[1, 0] = A[1, 0] + 1.0  # |d| == beta == delta
W = R.uniform(0.5, 2.0, (5, 4))
LOGITS = R.standard_normal((6, 4))
CLS = np.array([0, 3, 1, -100, 2, 3])
CLS_W = np.array([0.5, 2.0, 1.0, 1.5])
LOGITS_K = R.standard_normal((2, 4, 3, 2))
CLS_K = R.integers(0, 4, (2, 3, 2))
CLS_K[0, 1, 1] = -100
PROBS_T = R.dirichlet(np.ones(4), 6)
P = R.uniform(0.05, 0.95, (5, 4))
Y01 = (R.uniform(size=(5, 4)) > 0.5).astype(np.float64)
POS_W = np.array([1.0, 2.0, 0.5, 3.0])
LOGP = np.log(R.dirichlet(np.ones(4), 5))
Q = R.dirichlet(np.ones(4), 5)
Q[0, 1] = 0.0
PM1 = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
V = R.uniform(0.5, 2.0, (5, 4))
COUNTS = R.poisson(2.0, (5, 4)).astype(np.float64)


def lf(name, *extra, **kw):
    """The case ``F.<name>(x, y, *extra, **kw)``."""
    return lambda t, x, y: getattr(t.nn.functional, name)(x, y, *extra, **kw)


def reductions(name, fn, *args, **kw):
    return [Case(f"{name}_{r}", (lambda r: lambda t, *a: fn(t, *a, r))(r), *args, **kw) for r in ("mean", "sum", "none")]


def _cls(t, a):
    return t.tensor(a)


TORCH_CASES = [
    *reductions("l1", lambda t, x, y, r: t.nn.functional.l1_loss(x, y, reduction=r), A, B),
    *reductions("mse", lambda t, x, y, r: t.nn.functional.mse_loss(x, y, reduction=r), A, B),
    Case("mse_weight", lambda t, x, y, w: t.nn.functional.mse_loss(x, y, weight=w), A, B, W),
    Case("l1_weight_sum", lambda t, x, y, w: t.nn.functional.l1_loss(x, y, weight=w, reduction="sum"), A, B, W),
    *reductions("smooth_l1", lambda t, x, y, r: t.nn.functional.smooth_l1_loss(x, y, reduction=r, beta=1.0), A, B),
    Case("smooth_l1_beta", lf("smooth_l1_loss", beta=0.3), A, B),
    Case("smooth_l1_beta0", lf("smooth_l1_loss", beta=0.0), A, B),
    *reductions("huber", lambda t, x, y, r: t.nn.functional.huber_loss(x, y, reduction=r, delta=1.0), A, B),
    Case("huber_delta_weight", lambda t, x, y, w: t.nn.functional.huber_loss(x, y, delta=0.5, weight=w), A, B, W),
    Case("SmoothL1Loss", lambda t, x, y: t.nn.SmoothL1Loss(beta=0.5)(x, y), A, B),
    Case("L1Loss_legacy", lambda t, x, y: t.nn.L1Loss(reduce=False)(x, y), A, B),
    # classification
    *reductions("ce", lambda t, x, r: t.nn.functional.cross_entropy(x, _cls(t, CLS), reduction=r), LOGITS),
    *reductions("ce_weight_smooth", lambda t, x, w, r: t.nn.functional.cross_entropy(
        x, _cls(t, CLS), weight=w, reduction=r, label_smoothing=0.2), LOGITS, CLS_W, grad=[0]),
    # uint8 (Byte) class ids, which PyTorch takes beside int64
    Case("ce_nll_uint8_target", lambda t, x: (t.nn.functional.cross_entropy(x, t.tensor(CLS % 4, dtype=t.uint8)),
                                              t.nn.functional.nll_loss(x, t.tensor(CLS % 4, dtype=t.uint8),
                                                                       reduction="none")), LOGITS),
    Case("ce_ignore_index", lambda t, x: t.nn.functional.cross_entropy(x, _cls(t, CLS % 4), ignore_index=3), LOGITS),
    # every target ignored: the mean is NaN (0 / 0) but the gradient is 0, not NaN, as in PyTorch;
    # zero class weights (nothing ignored) give NaN gradients there, as in PyTorch
    Case("ce_all_ignored", lambda t, x: (t.nn.functional.cross_entropy(x, _cls(t, [3, 3]), ignore_index=3),
                                         t.nn.functional.nll_loss(x, _cls(t, [3, 3]), ignore_index=3),
                                         t.nn.functional.cross_entropy(x, _cls(t, [3, 3]), ignore_index=3,
                                                                       label_smoothing=0.1)), LOGITS[:2]),
    Case("ce_zero_class_weights", lambda t, x: t.nn.functional.cross_entropy(
        x, _cls(t, [1, 2]), weight=t.tensor([1.0, 0.0, 0.0, 1.0], dtype=x.dtype)), LOGITS[:2]),
    Case("ce_kdim", lambda t, x: t.nn.functional.cross_entropy(x, _cls(t, CLS_K)), LOGITS_K),
    Case("ce_kdim_weight_none", lambda t, x, w: t.nn.functional.cross_entropy(x, _cls(t, CLS_K), weight=w,
                                                                                reduction="none"), LOGITS_K, CLS_W, grad=[0]),
    Case("ce_probs", lambda t, x, p: t.nn.functional.cross_entropy(x, p), LOGITS, PROBS_T),
    Case("ce_probs_weight_smooth", lambda t, x, p, w: t.nn.functional.cross_entropy(
        x, p, weight=w, label_smoothing=0.1), LOGITS, PROBS_T, CLS_W, grad=[0, 1]),
    Case("ce_one_sample", lambda t, x: t.nn.functional.cross_entropy(x, t.tensor(2)), LOGITS[0]),
    Case("CrossEntropyLoss", lambda t, x, w: t.nn.CrossEntropyLoss(weight=w, ignore_index=1)(x, _cls(t, CLS % 4)),
         LOGITS, CLS_W, grad=[0]),
    Case("ce_float32", lambda t, x: t.nn.functional.cross_entropy(x, _cls(t, CLS)), LOGITS.astype(np.float32),
         rtol=1e-6, atol=1e-6),
    *reductions("nll", lambda t, x, w, r: t.nn.functional.nll_loss(x, _cls(t, CLS), w, reduction=r),
                LOGITS, CLS_W, grad=[0]),
    Case("NLLLoss_kdim", lambda t, x: t.nn.NLLLoss()(x, _cls(t, CLS_K)), LOGITS_K),
    *reductions("bce", lambda t, p, y, r: t.nn.functional.binary_cross_entropy(p, y, reduction=r), P, Y01, grad=[0]),
    Case("bce_weight", lambda t, p, y, w: t.nn.functional.binary_cross_entropy(p, y, weight=w), P, Y01, W, grad=[0]),
    # probabilities of exactly 0 and 1 (a sigmoid saturated in float32) and tiny ones: PyTorch's
    # loss (log1p(-x), logs clamped at -100) and its finite gradient, (x - y) / max(x (1 - x), 1e-12);
    # d2s gave NaN gradients to every element there, and log(1 - x) lost the tiny x
    *reductions("bce_saturated", lambda t, p, y, r: t.nn.functional.binary_cross_entropy(p, y, reduction=r),
                np.array([1.0, 1.0, 0.0, 0.0, 1e-9, 1 - 1e-7, 1e-30, 0.5]),
                np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.3, 1.0, 0.3]), grad=[0], rtol=1e-12, atol=0),
    Case("bce_saturated_float32", lambda t, p, y: t.nn.functional.binary_cross_entropy(p, y),
         np.array([1.0, 1.0, 0.0, 0.0, 1e-9, 0.999], np.float32), np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.3], np.float32),
         grad=[0]),
    *reductions("bce_logits", lambda t, x, y, r: t.nn.functional.binary_cross_entropy_with_logits(
        x, y, reduction=r), A * 4, Y01, grad=[0, 1]),
    Case("bce_logits_pos_weight", lambda t, x, y, w, pw: t.nn.functional.binary_cross_entropy_with_logits(
        x, y, weight=w, pos_weight=pw), A * 4, Y01, W, POS_W, grad=[0, 1]),
    Case("BCEWithLogitsLoss", lambda t, x, y, pw: t.nn.BCEWithLogitsLoss(pos_weight=pw, reduction="sum")(x, y),
         A, Y01, POS_W, grad=[0, 1]),
    *reductions("kl", lambda t, x, y, r: t.nn.functional.kl_div(x, y, reduction=r), LOGP, Q, grad=[0]),
    Case("kl_batchmean", lambda t, x, y: t.nn.functional.kl_div(x, y, reduction="batchmean"), LOGP, Q, grad=[0]),
    Case("kl_log_target", lambda t, x, y: t.nn.functional.kl_div(x, y, reduction="batchmean", log_target=True),
         LOGP, np.log(Q + 0.1)),
    Case("KLDivLoss", lambda t, x, y: t.nn.KLDivLoss(reduction="sum", log_target=True)(x, y), LOGP, LOGP[::-1].copy()),
    Case("poisson_nll", lf("poisson_nll_loss"), A, COUNTS, grad=[0]),
    Case("poisson_nll_full", lf("poisson_nll_loss", log_input=False, full=True), V, COUNTS, grad=[0]),
    Case("gaussian_nll", lambda t, x, y, v: t.nn.functional.gaussian_nll_loss(x, y, v), A, B, V),
    Case("gaussian_nll_full_vec", lambda t, x, y, v: t.nn.GaussianNLLLoss(full=True, reduction="sum")(x, y, v),
         A, B, V[:, 0].copy()),
    Case("soft_margin", lambda t, x: t.nn.functional.soft_margin_loss(x, t.tensor(np.sign(B))), A),
    Case("multilabel_soft_margin", lf("multilabel_soft_margin_loss"), A, Y01, grad=[0]),
    Case("hinge_embedding", lambda t, x: t.nn.functional.hinge_embedding_loss(x, t.tensor(np.sign(B)), 0.5), A),
    # pairs and triplets
    *reductions("cosine_embedding", lambda t, x, y, r: t.nn.functional.cosine_embedding_loss(
        x, y, t.tensor(PM1), margin=0.1, reduction=r), A, B),
    *reductions("margin_ranking", lambda t, x, y, r: t.nn.functional.margin_ranking_loss(
        x, y, t.tensor(PM1), margin=0.2, reduction=r), A[:, 0].copy(), B[:, 0].copy()),
    *reductions("triplet", lambda t, a, p, n, r: t.nn.functional.triplet_margin_loss(a, p, n, reduction=r),
                A, B, W),
    Case("TripletMarginLoss_p1_swap", lambda t, a, p, n: t.nn.TripletMarginLoss(margin=2.0, p=1, swap=True)(a, p, n),
         A, B, W),
    Case("cosine_similarity", lambda t, x, y: t.nn.functional.cosine_similarity(x, y, dim=1), A, B),
    Case("CosineSimilarity_dim0", lambda t, x, y: t.nn.CosineSimilarity(dim=0)(x, y), A, B),
    Case("pairwise_distance", lambda t, x, y: t.nn.functional.pairwise_distance(x, y, p=3.0, keepdim=True), A, B),
    Case("normalize", lambda t, x: t.nn.functional.normalize(x, dim=0), A),
    Case("normalize_p1", lambda t, x: t.nn.functional.normalize(x, p=1.0), A),
]

# hinge losses over classes: multi-class (p 1 and 2, margin, class weights, a 1-d input) and
# multi-label (targets ended by -1, repeated and empty lists); triplets with any distance
_SCORES = R.standard_normal((4, 5))
_LABELS = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 1, 1, 1], [2, 2, -1, 0, 0]])
_TRIPLET = [R.standard_normal((4, 3)) for _ in range(3)]
TORCH_CASES += [
    Case("multi_margin_loss", lambda t, x, y, w: (
        t.nn.functional.multi_margin_loss(x, y), t.nn.functional.multi_margin_loss(x, y, p=2, margin=0.5),
        t.nn.functional.multi_margin_loss(x, y, weight=w, reduction="none"),
        t.nn.functional.multi_margin_loss(x[0], y[:1], reduction="sum"),
        t.nn.MultiMarginLoss(p=2, weight=w, reduction="sum")(x, y)),
         _SCORES, np.array([0, 3, 4, 1]), R.uniform(0.5, 2.0, 5), grad=[0]),
    Case("multilabel_margin_loss", lambda t, x, y: (
        t.nn.functional.multilabel_margin_loss(x, y), t.nn.functional.multilabel_margin_loss(x, y, reduction="none"),
        t.nn.functional.multilabel_margin_loss(x[1], y[1]), t.nn.MultiLabelMarginLoss(reduction="sum")(x, y)),
         _SCORES, _LABELS, grad=[0]),
    Case("triplet_margin_with_distance_loss", lambda t, a, p, n: (
        t.nn.functional.triplet_margin_with_distance_loss(a, p, n),
        t.nn.functional.triplet_margin_with_distance_loss(a, p, n, swap=True, margin=0.5, reduction="none"),
        t.nn.functional.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda u, v: 1 - t.nn.functional.cosine_similarity(u, v), reduction="sum"),
        t.nn.TripletMarginWithDistanceLoss(distance_function=t.nn.PairwiseDistance(p=1.0), margin=2.0)(a, p, n)),
         *_TRIPLET),
]


# Converting, saving and exporting every case would take most of the suite's time budget: the
# cases below cover each loss's ops in those forms; the others (other reductions, modules over
# the same functions) compare eagerly with PyTorch only.
CONVERTED = {"ce_all_ignored",
             "l1_mean", "mse_weight", "smooth_l1_none", "huber_delta_weight", "ce_mean", "ce_weight_smooth_mean",
             "ce_kdim_weight_none", "ce_probs_weight_smooth", "nll_none", "bce_weight", "bce_logits_pos_weight",
             "kl_batchmean", "kl_log_target", "poisson_nll_full", "gaussian_nll_full_vec", "hinge_embedding",
             "cosine_embedding_mean", "margin_ranking_none", "TripletMarginLoss_p1_swap", "cosine_similarity",
             "normalize", "multilabel_soft_margin"}
for _case in TORCH_CASES:
    if _case.name not in CONVERTED:
        _case.forms["static"] = "eager only: its ops are converted, saved and exported in the CONVERTED cases"
pytestmark = pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_class_targets_out_of_range_raise_as_pytorch():
    x = d2s.tensor(LOGITS)
    for bad in ([0, -1, 1, 2, 0, 1], [0, 4, 1, 2, 0, 1]):
        with pytest.raises(IndexError, match=f"Target {bad[1]} is out of bounds"):
            F.cross_entropy(x, d2s.tensor(bad))
    with pytest.raises(IndexError):
        nn.NLLLoss()(x, d2s.tensor([0, -5, 1, 2, 0, 1]))
    # ignore_index may be any value
    F.cross_entropy(x, d2s.tensor([0, -7, 1, 2, 0, 1]), ignore_index=-7)


def test_class_targets_out_of_range_give_nan_inside_a_program():
    f = d2s.jit.to_static(lambda x, t: F.cross_entropy(x, t, reduction="none"))
    out = f(d2s.tensor(LOGITS), d2s.tensor([0, -1, 1, 2, 7, 1])).numpy()
    assert np.isnan(out[[1, 4]]).all() and np.isfinite(out[[0, 2, 3, 5]]).all()


def test_target_errors_are_clear():
    x = d2s.tensor(LOGITS)
    with pytest.raises(ValueError, match="float target holds class probabilities and must have the input's shape"):
        F.cross_entropy(x, d2s.tensor(np.zeros(6)))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(6\) to match target batch_size \(2\)"):
        F.cross_entropy(x, d2s.tensor([0, 1]))
    with pytest.raises(TypeError, match="expected target dtype to be Long"):
        F.nll_loss(x, d2s.tensor(np.zeros(6)))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(d2s.tensor([0.5, 1.5]), d2s.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(d2s.tensor([0.5, 0.5]), d2s.tensor([0.0, 1.0, 1.0]))


def test_weights_are_buffers_in_the_state_dict():
    w = d2s.tensor(CLS_W)
    assert list(nn.CrossEntropyLoss(weight=w).state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    assert list(nn.BCEWithLogitsLoss(pos_weight=w).state_dict()) == ["pos_weight"]
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"


def test_legacy_reduction_arguments_warn_and_map():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        loss = nn.MSELoss(size_average=False)
    assert loss.reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.L1Loss(reduce=False).reduction == "none"


def test_kl_div_mean_warns_as_pytorch():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(d2s.tensor(LOGP), d2s.tensor(Q))


@pytest.mark.parametrize("call, error, match", [
    (lambda: F.multi_margin_loss(d2s.zeros(2, 3), d2s.tensor([0, 1]), p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: F.multi_margin_loss(d2s.zeros(2, 3), d2s.zeros(2)), TypeError, "class indices"),
    (lambda: F.multilabel_margin_loss(d2s.zeros(2, 3), d2s.tensor([0, 1])), ValueError, "a target of its shape"),
    (lambda: F.triplet_margin_with_distance_loss(d2s.zeros(2, 3), d2s.zeros(2, 3), d2s.zeros(2, 3), margin=0.0),
     ValueError, "margin to be greater than 0"),
    (lambda: nn.MultiMarginLoss(p=0), ValueError, "only p == 1 and p == 2"),
])
def test_margin_losses_refuse_what_pytorch_refuses(call, error, match):
    with pytest.raises(error, match=match):
        call()
