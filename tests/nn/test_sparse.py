"""Embedding and EmbeddingBag against PyTorch: padding_idx (zero row, no gradient), max_norm
(rows renormalized in place), scale_grad_by_freq, from_pretrained, bag modes with offsets,
per-sample weights and padding; float64 gradients of the weights."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import nn
from d2s.nn import functional as F
from torch_parity import Case

R = np.random.default_rng(4)
W = R.standard_normal((7, 3))
IDS = np.array([[1, 0, 3, 3], [6, 0, 2, 1]])
FLAT = np.array([1, 2, 4, 5, 4, 3, 2, 0])
OFFSETS = np.array([0, 2, 2, 5])  # bag 1 is empty


def _ids(t, a):
    return t.tensor(a)


TORCH_CASES = [
    Case("embedding", lambda t, w: t.nn.functional.embedding(_ids(t, IDS), w), W),
    Case("embedding_padding_idx", lambda t, w: t.nn.functional.embedding(_ids(t, IDS), w, padding_idx=0), W),
    Case("embedding_scale_grad_by_freq", lambda t, w: t.nn.functional.embedding(
        _ids(t, IDS), w, padding_idx=3, scale_grad_by_freq=True), W),
    Case("Embedding_module", lambda t, w: t.func.functional_call(t.nn.Embedding(7, 3, padding_idx=-1), {"weight": w},
                                                                 (_ids(t, IDS),)), W),
    Case("from_pretrained", lambda t, w: t.nn.Embedding.from_pretrained(w, freeze=False)(_ids(t, FLAT)), W,
         static="eager only: the module is built from the weight tensor"),
    Case("one_hot", lambda t: t.nn.functional.one_hot(_ids(t, FLAT), 8)),
]
for mode in ("sum", "mean", "max"):
    TORCH_CASES += [
        Case(f"bag_2d_{mode}", (lambda m: lambda t, w: t.nn.functional.embedding_bag(
            _ids(t, IDS), w, mode=m, padding_idx=0))(mode), W),
        Case(f"bag_offsets_{mode}", (lambda m: lambda t, w: t.nn.functional.embedding_bag(
            _ids(t, FLAT), w, _ids(t, OFFSETS), mode=m))(mode), W),
    ]
TORCH_CASES += [
    Case("bag_per_sample_weights_last_offset", lambda t, w, psw: t.nn.functional.embedding_bag(
        _ids(t, FLAT), w, _ids(t, np.array([0, 3, 8])), mode="sum", per_sample_weights=psw,
        include_last_offset=True), W, R.uniform(0.5, 1.5, 8)),
    Case("EmbeddingBag_module", lambda t, w: t.func.functional_call(
        t.nn.EmbeddingBag(7, 3, mode="max", padding_idx=2), {"weight": w}, (_ids(t, FLAT), _ids(t, OFFSETS))), W),
]

CONVERTED = {"embedding_padding_idx", "embedding_scale_grad_by_freq", "bag_2d_mean", "bag_offsets_max",
             "bag_per_sample_weights_last_offset", "one_hot"}
for _case in TORCH_CASES:
    if _case.name not in CONVERTED and _case.forms["static"] is True:
        _case.forms["static"] = "eager only: its ops are converted, saved and exported in the CONVERTED cases"


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_padding_row_starts_at_zero_and_gets_no_gradient():
    d2s.manual_seed(0)
    e = nn.Embedding(5, 3, padding_idx=2)
    assert not e.weight.numpy()[2].any() and e.weight.numpy()[1].any()
    e(d2s.tensor([2, 1, 2])).sum().backward()
    assert not e.weight.grad.numpy()[2].any() and e.weight.grad.numpy()[1].all()
    assert repr(e) == "Embedding(5, 3, padding_idx=2)"
    # the mode quoted, as PyTorch prints it
    assert repr(nn.EmbeddingBag(4, 2, mode="max", padding_idx=1)) == "EmbeddingBag(4, 2, mode='max', padding_idx=1)"


def test_max_norm_renormalizes_the_rows_looked_up_in_place():
    torch = pytest.importorskip("torch")
    w = R.standard_normal((6, 4)) * 3
    ids = np.array([[0, 2], [2, 5]])
    ref = torch.nn.Embedding.from_pretrained(torch.tensor(w), max_norm=1.5, norm_type=3.0)
    m = nn.Embedding.from_pretrained(d2s.tensor(w), max_norm=1.5, norm_type=3.0)
    want = ref(torch.tensor(ids)).numpy()
    np.testing.assert_allclose(m(d2s.tensor(ids)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(m.weight.numpy(), ref.weight.numpy(), rtol=1e-12)  # rows 0, 2, 5 changed
    assert not np.allclose(m.weight.numpy()[0], w[0]) and np.array_equal(m.weight.numpy()[1], w[1])


def test_max_norm_inside_a_program_is_a_clear_error():
    m = nn.Embedding(5, 3, max_norm=1.0)
    with pytest.raises(NotImplementedError, match="max_norm rescales rows of the weight in place"):
        d2s.jit.to_static(m)(d2s.tensor([1, 2]))


def test_errors_are_clear():
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(d2s.tensor([0, 9]), d2s.ones(5, 2))
    with pytest.raises(TypeError, match="must be an integer tensor"):
        F.embedding(d2s.tensor([0.0, 1.0]), d2s.ones(5, 2))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(d2s.tensor([[0, 1]]), d2s.ones(5, 2), per_sample_weights=d2s.ones(1, 2))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=5)
    # offsets PyTorch refuses (d2s dropped the ids before a first offset above 0, and gave an
    # empty bag for one past the end)
    bag = nn.EmbeddingBag(5, 2)
    with pytest.raises(ValueError, match=r"offsets\[0\] has to be 0"):
        bag(d2s.tensor([1, 2]), d2s.tensor([1]))
    with pytest.raises(ValueError, match=r"offsets\[-1\] can not be greater than input's length 2"):
        bag(d2s.tensor([1, 2]), d2s.tensor([0, 3]))
    with pytest.raises(ValueError, match="offsets must be non-decreasing"):
        bag(d2s.tensor([1, 2, 3]), d2s.tensor([0, 2, 1]))
    assert bag(d2s.tensor([1, 2]), d2s.tensor([0, 2, 2])).shape == (3, 2)  # empty bags at the end are fine
    # one weight per id (a shorter one broadcast silently)
    with pytest.raises(ValueError, match="per_sample_weights .* must have the same shape as the input"):
        nn.EmbeddingBag(5, 2, mode="sum")(d2s.tensor([1, 2]), d2s.tensor([0]), per_sample_weights=d2s.tensor([1.0]))


def test_from_pretrained_freezes_by_default_and_shares_the_data():
    w = d2s.tensor(W)
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad and np.shares_memory(e.weight.numpy(), w.numpy())
