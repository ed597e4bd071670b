"""Shape and joining functions against PyTorch (tests/torch_parity.py): PyTorch's signatures
(``dim=``, sizes as ints or one tuple, tuples back from split/chunk/unbind), values, dtypes and
float64 gradients, and the converted (static and dynamic dims), saved and ONNX forms."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(0)
X = R.standard_normal((2, 3, 4))
M = R.standard_normal((3, 4))
V = R.standard_normal(5)
I = np.arange(24, dtype="int64").reshape(2, 3, 4)
B = R.standard_normal((2, 1, 4))
_DATA_SIZE = "the number of pieces depends on the size of the split dim, which must be known when the program is built"

TORCH_CASES = [
    # reshape / view
    Case("view_ints", lambda t, x: x.view(-1, 4), X),
    Case("view_tuple", lambda t, x: x.view((4, 6)), X),
    Case("view_batch", lambda t, x: x.view(x.size(0), -1), X),
    Case("view_shape_dims", lambda t, x: x.reshape(x.shape[0], x.shape[1] * x.shape[2]), X),
    Case("reshape_fn", lambda t, x: t.reshape(x, (3, -1)), X),
    Case("reshape_method_list", lambda t, x: x.reshape([6, 4]), X),
    Case("view_as", lambda t, x, y: x.view_as(y), X, I.astype("float64"), grad=[0]),
    Case("reshape_as", lambda t, x, y: x.reshape_as(y), X, I.astype("float64"), grad=[0]),
    Case("unflatten", lambda t, x: x.unflatten(2, (2, 2)), X),
    Case("unflatten_neg", lambda t, x: t.unflatten(x, -1, (-1, 2)), X),
    Case("flatten_default", lambda t, x: x.flatten(), X),
    Case("flatten_start", lambda t, x: x.flatten(1), X),
    Case("flatten_range", lambda t, x: t.flatten(x, start_dim=0, end_dim=1), X),
    Case("flatten_neg", lambda t, x: x.flatten(-2, -1), X),
    # squeeze / unsqueeze
    Case("squeeze_all", lambda t, x: x.squeeze(), B, dynamic="which dims are 1 must be known when building"),
    Case("squeeze_dim", lambda t, x: x.squeeze(1), B, dynamic="which dims are 1 must be known when building"),
    Case("squeeze_dim_kw", lambda t, x: t.squeeze(x, dim=1), B, dynamic="which dims are 1 must be known when building"),
    Case("squeeze_not_one", lambda t, x: x.squeeze(0), B, dynamic="which dims are 1 must be known when building"),
    Case("squeeze_tuple", lambda t, x: x.squeeze((0, 1)), B, dynamic="which dims are 1 must be known when building"),
    Case("unsqueeze", lambda t, x: x.unsqueeze(1), X),
    Case("unsqueeze_neg", lambda t, x: t.unsqueeze(x, dim=-1), X),
    # transpose / permute / movedim
    Case("transpose", lambda t, x: x.transpose(0, 2), X),
    Case("transpose_neg", lambda t, x: t.transpose(x, -1, -2), X),
    Case("swapaxes", lambda t, x: x.swapaxes(0, 1), X),
    Case("swapdims", lambda t, x: t.swapdims(x, 1, 2), X),
    Case("permute_ints", lambda t, x: x.permute(2, 0, 1), X),
    Case("permute_tuple", lambda t, x: x.permute((1, 2, 0)), X),
    Case("permute_fn", lambda t, x: t.permute(x, (0, -1, 1)), X),
    Case("movedim", lambda t, x: x.movedim(0, -1), X),
    Case("movedim_lists", lambda t, x: t.movedim(x, (0, 1), (2, 0)), X),
    Case("moveaxis", lambda t, x: t.moveaxis(x, 2, 0), X),
    Case("t_2d", lambda t, x: x.t(), M),
    Case("t_1d", lambda t, x: t.t(x) * 2.0, V),
    Case("T_2d", lambda t, x: x.T, M),
    Case("mT", lambda t, x: x.mT, X),
    Case("contiguous", lambda t, x: x.transpose(0, 1).contiguous() * 2.0, M),
    # expand / broadcast
    Case("expand", lambda t, x: x.expand(2, 3, 4), B),
    Case("expand_minus_one", lambda t, x: x.expand(5, -1, 3, -1), B),
    Case("expand_tuple", lambda t, x: x.expand((2, 3, 4)), B),
    Case("expand_as", lambda t, x, y: x.expand_as(y), B, X, grad=[0]),
    Case("broadcast_to", lambda t, x: t.broadcast_to(x, (3, 2, 3, 4)), B),
    # joining
    Case("cat_dim", lambda t, x, y: t.cat([x, y], dim=1), X, X * 2),
    Case("cat_default", lambda t, x, y: t.cat((x, y)), X, X * 2),
    Case("cat_neg", lambda t, x, y: t.cat([x, y], -1), X, X * 2),
    Case("concat", lambda t, x, y: t.concat([x, y], dim=2), X, X * 2),
    Case("concatenate_axis", lambda t, x, y: t.concatenate([x, y], axis=0), X, X * 2),
    Case("cat_int_float", lambda t, x, y: t.cat([x, y], 0), I, X),
    Case("stack", lambda t, x, y: t.stack([x, y]), X, X * 2),
    Case("stack_dim", lambda t, x, y: t.stack([x, y], dim=2), X, X * 2),
    Case("stack_neg", lambda t, x, y: t.stack((x, y), -1), X, X * 2),
    Case("hstack", lambda t, x, y: t.hstack([x, y]), M, M * 2),
    Case("hstack_1d", lambda t, x, y: t.hstack([x, y]), V, V * 2),
    Case("vstack", lambda t, x, y: t.vstack([x, y]), M, M * 2),
    Case("vstack_1d", lambda t, x, y: t.vstack([x, y]), V, V * 2),
    Case("dstack", lambda t, x, y: t.dstack([x, y]), M, M * 2),
    Case("column_stack", lambda t, x, y: t.column_stack([x, y]), V, V * 2),
    # splitting
    Case("split_size", lambda t, x: x.split(2, dim=2), X, dynamic=_DATA_SIZE),
    Case("split_size_uneven", lambda t, x: t.split(x, 2, 1), X, dynamic=_DATA_SIZE),
    Case("split_sections", lambda t, x: x.split([1, 3], dim=-1), X),
    Case("split_big", lambda t, x: x.split(10), X, dynamic=_DATA_SIZE),
    Case("chunk", lambda t, x: x.chunk(2, dim=1), X, dynamic=_DATA_SIZE),
    Case("chunk_fn", lambda t, x: t.chunk(x, 3, -1), X, dynamic=_DATA_SIZE),
    Case("chunk_more_than_size", lambda t, x: x.chunk(4, 1), X, dynamic=_DATA_SIZE),
    Case("unbind", lambda t, x: x.unbind(1), X, dynamic=_DATA_SIZE),
    Case("unbind_fn", lambda t, x: t.unbind(x), X, dynamic=_DATA_SIZE),
    # sizes
    Case("sizes", lambda t, x: (x.size(), x.size(1), x.size(-1), x.dim(), x.ndimension(), x.numel(), x.nelement(),
                                t.numel(x)), X, dynamic="sizes of a dynamic dim are tensors inside a program",
         saved="it returns Python ints, no tensors", onnx="it returns Python ints, no tensors"),
    # rearranging
    Case("flip", lambda t, x: x.flip(0), X),
    Case("flip_dims", lambda t, x: t.flip(x, (0, 2)), X),
    Case("flip_neg", lambda t, x: t.flip(x, [-1]), X),
    Case("fliplr", lambda t, x: x.fliplr(), M),
    Case("flipud", lambda t, x: t.flipud(x), M),
    Case("roll", lambda t, x: x.roll(1, 2), X),
    Case("roll_neg", lambda t, x: t.roll(x, -2, 1), X),
    Case("roll_flat", lambda t, x: t.roll(x, 5), X),
    Case("roll_dims", lambda t, x: x.roll((1, -1), (0, 2)), X),
    Case("roll_big_shift", lambda t, x: x.roll(7, dims=1), X),
    Case("repeat", lambda t, x: x.repeat(2, 1, 3), X),
    Case("repeat_tuple", lambda t, x: x.repeat((1, 2)), M),
    Case("repeat_lead", lambda t, x: x.repeat(2, 1, 1), M),
    Case("repeat_batch", lambda t, x, h: h.repeat(1, x.size(0), 1), X, R.standard_normal((1, 1, 4))),
    Case("repeat_int", lambda t, x: x.repeat(2, 3), I[0]),
    Case("tile", lambda t, x: t.tile(x, (2,)), M),
    Case("tile_more", lambda t, x: x.tile((2, 1, 1)), M),
    Case("repeat_interleave", lambda t, x: x.repeat_interleave(2), M),
    Case("repeat_interleave_dim", lambda t, x: t.repeat_interleave(x, 3, dim=1), M),
    Case("repeat_interleave_neg", lambda t, x: x.repeat_interleave(2, -1), X),
    Case("repeat_interleave_tensor", lambda t, x, r: x.repeat_interleave(r, dim=0), M, np.array([1, 0, 2]),
         onnx="the output size depends on the counts"),
    Case("repeat_interleave_counts", lambda t, r: t.repeat_interleave(r), np.array([2, 0, 3]),
         onnx="the output size depends on the counts"),
    # a one-element repeats tensor repeats every element (flattened, or along dim)
    Case("unflatten_minus_one_beside_empty_dim", lambda t, x: (x.unflatten(0, (-1, 2)), t.unflatten(x, 2, (3, -1)),
                                                                x.unflatten(1, (-1, 5))), np.zeros((4, 0, 3), np.float32)),
    # PyTorch's keyword names: torch.repeat_interleave(input=...), Tensor.split(split_size=...)
    Case("keyword_names_repeat_interleave_split", lambda t, x: (t.repeat_interleave(input=x, repeats=2, dim=1),
                                                                x.split(split_size=3, dim=1),
                                                                t.split(x, split_size_or_sections=[1, 2])), M,
         dynamic="split by a size needs the dim's size when the program is built"),
    Case("chunk_of_empty_dim", lambda t, x: (x.chunk(3, 1), t.chunk(x, 2, dim=0)), np.zeros((0, 0, 2), np.float32),
         dynamic="the number of pieces is read from the dim's size"),
    Case("repeat_interleave_one_count_tensor", lambda t, x, r: (x.repeat_interleave(r), t.repeat_interleave(x, r, dim=1),
                                                                x.repeat_interleave(r[0])), M, np.array([2]),
         onnx="the output size depends on the counts"),
    Case("narrow", lambda t, x: x.narrow(2, 1, 2), X),
    Case("narrow_neg_start", lambda t, x: t.narrow(x, 1, -2, 2), X, dynamic="a negative start needs the size"),
    # dtypes carried through
    Case("int_view_flip", lambda t, x: (x.view(6, 4).flip(0), x.permute(2, 0, 1), x.split(2, 1)), I,
         dynamic=_DATA_SIZE),
]



def _contiguous_copies(x):
    y = x * 1
    c = y.transpose(0, 1).contiguous()  # a copy: writing it leaves y alone
    c[0, 0] = 55.0
    d = y[:, 1:].contiguous()
    d[0, 0] = 3.0
    e = y[1:].contiguous()  # already contiguous: y itself, so the write shows in y
    e[0, 0] = 4.0
    f = c.view(-1)  # a view of the contiguous copy: the write shows in c
    f[1] = 7.0
    return y, c, d, e, f


# the method form takes flip's dims one by one; select(dim, index) is x[..., index] along dim
TORCH_CASES += [
    Case("flip_dims_one_by_one", lambda t, x: (x.flip(0, 2), x.flip(-1, 0), x.flip((1,))), X),
    Case("select", lambda t, x: (x.select(1, -1), t.select(x, 0, 1), x.select(-1, 2)), X),
]


# contiguous() copies exactly a layout that is not contiguous, as torch does
TORCH_CASES += [
    Case("contiguous_copies_only_strided_layouts", lambda t, x: _contiguous_copies(x), M),
    Case("is_contiguous", lambda t, x: (x.is_contiguous(), x.t().is_contiguous(), x[1:].is_contiguous(),
                                        x[:, 1:].is_contiguous(), x.t().contiguous().is_contiguous(),
                                        x[:1].expand(3, 4).is_contiguous()), M,
         saved="Python bools only", onnx="Python bools only"),
]

# coordinate grids (torch.meshgrid)
TORCH_CASES += [
    Case("meshgrid_ij", lambda t, a, b: t.meshgrid(a, b, indexing="ij"), R.standard_normal(3), R.standard_normal(4)),
    Case("meshgrid_xy_three", lambda t, a, b, c: t.meshgrid([a, b, c], indexing="xy"), R.standard_normal(3),
         R.standard_normal(2), R.standard_normal(4)),
]

# a copy keeps every bit: -0.0 stays -0.0 (1 / copy shows the sign as -inf)
NEG0 = np.array([[-0.0, 0.0, 1.5], [np.nan, -0.0, -2.0]], np.float32)
TORCH_CASES += [
    Case("clone_keeps_negative_zero", lambda t, x: (1 / x.clone(), 1 / t.clone(x), 1 / x.to(x.dtype, copy=True),
                                                    1 / x.rot90(0), 1 / x.rot90(4, [1, 0])), NEG0),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_flip_and_roll_are_copies():
    x = d2s.tensor(np.arange(6.0))
    for y in (x.flip(0), x.roll(0), x.repeat(1), x.tile((1,))):
        y.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0))


def test_view_of_a_dtype_is_refused():
    with pytest.raises(TypeError, match=r"\.to\(dtype\)"):
        d2s.zeros(2).view(d2s.float16)


def test_axis_is_an_alias_of_dim():
    x = d2s.tensor(X)
    assert d2s.cat([x, x], axis=1).shape == (2, 6, 4)
    assert [p.shape for p in x.split(2, axis=2)] == [(2, 3, 2), (2, 3, 2)]
    assert x.squeeze(axis=0).shape == (2, 3, 4)
    with pytest.raises(TypeError, match="both dim"):
        d2s.cat([x, x], dim=0, axis=1)


@pytest.mark.parametrize("call, error", [
    (lambda x: x.transpose(0, 3), IndexError),
    (lambda x: x.unsqueeze(4), IndexError),
    (lambda x: x.permute(0, 1), ValueError),
    (lambda x: x.expand(-1, 3, 4, 4), ValueError),
    (lambda x: x.chunk(0), ValueError),
    (lambda x: x.narrow(1, 2, 2), IndexError),
    (lambda x: d2s.cat(x), TypeError),
    (lambda x: d2s.stack([]), ValueError),
])
def test_bad_arguments_raise_as_torch(call, error):
    with pytest.raises(error):
        call(d2s.tensor(X))


def test_split_of_a_dynamic_dim_says_why():
    f = d2s.jit.to_static(lambda x: x.split(2, dim=0)[0], input_spec=[d2s.jit.InputSpec([None, 3])])
    with pytest.raises(ValueError, match="only known when the program runs"):
        f(d2s.zeros(4, 3))


class _CausalSelfAttention(d2s.nn.Module):
    """The attention block of a GPT-style model file, written as model files write it."""

    def __init__(self, n_embd=8, n_head=2, block_size=6):
        super().__init__()
        self.n_head, self.n_embd = n_head, n_embd
        self.c_attn = d2s.nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = d2s.nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", d2s.tensor(np.tril(np.ones((block_size, block_size), "float32")))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / np.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = d2s.softmax(att, -1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


def test_gpt_attention_block_converts_with_a_dynamic_batch():
    d2s.manual_seed(0)
    m = _CausalSelfAttention()
    x = d2s.randn(3, 5, 8)
    want = m(x).numpy()
    static = d2s.jit.to_static(m.forward, input_spec=[d2s.jit.InputSpec([None, 5, 8])])
    for batch in (x, d2s.randn(2, 5, 8)):
        np.testing.assert_allclose(static(batch).numpy(), m(batch).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(static(x).numpy(), want, rtol=1e-5, atol=1e-6)


def _sample_tokens(logits, idx):
    probs = d2s.softmax(logits[:, -1, :], -1)
    idx_next = d2s.multinomial(probs, num_samples=1)
    return d2s.cat((idx, idx_next), dim=1)


def test_sampling_step_of_a_language_model_equals_eager():
    logits, idx = d2s.randn(2, 3, 7), d2s.randint(0, 7, (2, 3))
    static = d2s.jit.to_static(_sample_tokens)
    d2s.manual_seed(5)
    want = _sample_tokens(logits, idx).numpy()
    d2s.manual_seed(5)
    np.testing.assert_array_equal(static(logits, idx).numpy(), want)
    assert want.shape == (2, 4) and want.dtype == np.int64
