"""Attention against PyTorch: ``scaled_dot_product_attention`` (bool and float masks, causal,
scale, grouped-query), ``MultiheadAttention`` (batch_first, masks, kdim/vdim, weights, bias_kv,
zero_attn, unbatched), the Transformer layers, stacks and ``nn.Transformer``; float64
gradients of the inputs and of every weight (through ``functional_call``); and a GPT-style
model whose PyTorch state dict loads into the same d2s architecture."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(3)

Q = R.standard_normal((2, 2, 3, 4))    # (N, heads, L, E)
K = R.standard_normal((2, 2, 5, 4))    # (N, heads, S, E)
V = R.standard_normal((2, 2, 5, 4))
BOOL_MASK = R.uniform(size=(3, 5)) > 0.3
BOOL_MASK[1] = False                   # a query that may attend nowhere: zeros, as PyTorch
FLOAT_MASK = R.standard_normal((2, 1, 3, 5))
INF_Q = Q.copy()
INF_Q[0, 1, 2, 0] = np.inf             # with keys of negative first components: a row of -inf scores


def sdpa(**kw):
    return lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(q, k, v, **kw)


def _params(kind, *args, **kw):
    m = getattr(nn, kind)(*args, **kw)
    return [k for k, _ in m.named_parameters()], [R.uniform(-0.5, 0.5, tuple(p.shape)) for p in m.parameters()]


def module_case(name, kind, args, kw, inputs, call=None, n_inputs=None, **case_kw):
    """``t.nn.<kind>(*args, **kw)`` in eval mode called by ``call(t, module, *inputs)`` with the
    given weights (gradients compared too)."""
    names, weights = _params(kind, *args, **kw)
    n = len(inputs) if n_inputs is None else n_inputs
    call = call or (lambda t, m, *xs: m(*xs))

    def fn(t, *arrays):
        xs, ws = arrays[:n], arrays[n:]
        m = getattr(t.nn, kind)(*args, **kw).eval()
        return _call_with(t, m, dict(zip(names, ws)), call, xs)

    return Case(name, fn, *inputs, *weights, **case_kw)


def _call_with(t, m, params, call, xs):
    """``call(t, m, *xs)`` with ``m``'s parameters replaced by ``params``."""
    class _Call(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, *a):
            return call(t, self.m, *a)

    return t.func.functional_call(_Call(), {f"m.{k}": v for k, v in params.items()}, tuple(xs))


E = 8
XQ = R.standard_normal((3, 2, E))      # (L, N, E)
XK = R.standard_normal((4, 2, E))
XB = R.standard_normal((2, 3, E))      # (N, L, E)
KPM = np.array([[False, False, True, False], [False, True, True, False]])
KPM3 = np.array([[False, False, True], [False, True, False]])
ATTN2 = R.uniform(size=(3, 4)) > 0.8
ATTN3 = R.standard_normal((2 * 2, 3, 4))
CAUSAL3 = np.triu(np.full((3, 3), -np.inf), 1)
MEM = R.standard_normal((2, 4, E))


def _mask(t, a):
    return t.tensor(a)


TORCH_CASES = [
    Case("sdpa", sdpa(), Q, K, V),
    Case("sdpa_bool_mask", lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=_mask(t, BOOL_MASK)), Q, K, V),
    Case("sdpa_float_mask", lambda t, q, k, v, m: t.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=m), Q, K, V, FLOAT_MASK),
    Case("sdpa_causal", sdpa(is_causal=True), Q, K, V),
    Case("sdpa_causal_square_scale", sdpa(is_causal=True, scale=0.3), Q, Q, Q),
    Case("sdpa_3d", sdpa(), Q[0], K[0], V[0]),
    Case("sdpa_gqa", sdpa(enable_gqa=True), R.standard_normal((1, 4, 3, 4)), K[:1], V[:1],
         dynamic="grouped-query attention repeats the heads, whose count must be known"),
    Case("sdpa_float32", sdpa(is_causal=True), *(a.astype(np.float32) for a in (Q, K, V)), rtol=1e-5, atol=1e-6),
    # scores of -inf from the data (not the mask) in a whole row: zeros too, as PyTorch's kernels
    Case("sdpa_causal_infinite_scores", sdpa(is_causal=True), INF_Q, -np.abs(K), V, grad=False),
    # MultiheadAttention, sequence first unless batch_first
    module_case("mha_self", "MultiheadAttention", (E, 2), {}, [XQ], call=lambda t, m, x: m(x, x, x)),
    module_case("mha_cross_masks", "MultiheadAttention", (E, 2), {}, [XQ, XK],
                call=lambda t, m, q, k: m(q, k, k, key_padding_mask=_mask(t, KPM), attn_mask=_mask(t, ATTN2))),
    module_case("mha_no_weights_3d_mask", "MultiheadAttention", (E, 2), {}, [XQ, XK, ATTN3],
                call=lambda t, m, q, k, am: m(q, k, k, attn_mask=am, need_weights=False)),
    module_case("mha_batch_first_per_head", "MultiheadAttention", (E, 2), {"batch_first": True}, [XB],
                call=lambda t, m, x: m(x, x, x, key_padding_mask=_mask(t, KPM3), average_attn_weights=False)),
    module_case("mha_kdim_vdim", "MultiheadAttention", (E, 2), {"kdim": 3, "vdim": 5},
                [XQ, R.standard_normal((4, 2, 3)), R.standard_normal((4, 2, 5))],
                call=lambda t, m, q, k, v: m(q, k, v)),
    module_case("mha_bias_kv_zero_attn", "MultiheadAttention", (E, 2), {"add_bias_kv": True, "add_zero_attn": True},
                [XQ, XK], call=lambda t, m, q, k: m(q, k, k, key_padding_mask=_mask(t, KPM))),
    module_case("mha_no_bias_unbatched", "MultiheadAttention", (E, 4), {"bias": False}, [XQ[:, 0]],
                call=lambda t, m, x: m(x, x, x, attn_mask=_mask(t, CAUSAL3))),
    module_case("mha_causal_hint", "MultiheadAttention", (E, 2), {}, [XQ],
                call=lambda t, m, x: m(x, x, x, attn_mask=t.tensor(CAUSAL3), is_causal=True, need_weights=False)),
    # Transformer layers
    module_case("encoder_layer", "TransformerEncoderLayer", (E, 2, 16), {"dropout": 0.0}, [XQ],
                call=lambda t, m, x: m(x, src_key_padding_mask=_mask(t, KPM3))),
    module_case("encoder_layer_norm_first_gelu", "TransformerEncoderLayer", (E, 2, 16),
                {"activation": "gelu", "norm_first": True, "batch_first": True}, [XB],
                call=lambda t, m, x: m(x, src_mask=t.tensor(CAUSAL3), is_causal=True), rtol=2e-6, atol=2e-6),
    module_case("encoder_layer_callable_act", "TransformerEncoderLayer", (E, 2, 16),
                {"activation": "relu", "layer_norm_eps": 1e-3, "bias": False}, [XQ]),
    module_case("decoder_layer", "TransformerDecoderLayer", (E, 2, 16), {"batch_first": True}, [XB, MEM],
                call=lambda t, m, x, mem: m(x, mem, tgt_mask=t.tensor(CAUSAL3),
                                            memory_key_padding_mask=_mask(t, KPM))),
    module_case("decoder_layer_norm_first", "TransformerDecoderLayer", (E, 2, 16), {"norm_first": True},
                [XQ, XK], call=lambda t, m, x, mem: m(x, mem, tgt_is_causal=False)),
]


def _encoder(t, x, *ws, names):
    layer = t.nn.TransformerEncoderLayer(E, 2, 16, batch_first=True)
    enc = t.nn.TransformerEncoder(layer, 2, norm=t.nn.LayerNorm(E), enable_nested_tensor=False).eval()
    return t.func.functional_call(enc, dict(zip(names, ws)), (x,), {"mask": t.tensor(CAUSAL3)})


def _transformer(t, src, tgt, *ws, names):
    m = t.nn.Transformer(E, 2, 1, 2, 16, batch_first=True).eval()
    mask = t.nn.Transformer.generate_square_subsequent_mask(3)
    return t.func.functional_call(m, dict(zip(names, ws)), (src, tgt), {"tgt_mask": mask})


_enc_names, _enc_w = (lambda m: ([k for k, _ in m.named_parameters()],
                                 [R.uniform(-0.5, 0.5, tuple(p.shape)) for p in m.parameters()]))(
    nn.TransformerEncoder(nn.TransformerEncoderLayer(E, 2, 16), 2, norm=nn.LayerNorm(E)))
_tr_names, _tr_w = _params("Transformer", E, 2, 1, 2, 16)
TORCH_CASES += [
    Case("encoder_stack", lambda t, x, *ws: _encoder(t, x, *ws, names=_enc_names), XB, *_enc_w),
    Case("transformer", lambda t, s, g, *ws: _transformer(t, s, g, *ws, names=_tr_names), MEM, XB, *_tr_w,
         rtol=2e-6, atol=2e-6),
    Case("square_subsequent_mask", lambda t: t.nn.Transformer.generate_square_subsequent_mask(4)),
]

# to_static, saving and ONNX of every case would take most of the suite's time budget: these
# cover each layer and option in those forms (the others compare eagerly with PyTorch)
CONVERTED = {"sdpa_bool_mask", "sdpa_causal", "sdpa_gqa", "mha_cross_masks", "mha_no_weights_3d_mask",
             "mha_batch_first_per_head", "mha_kdim_vdim", "mha_bias_kv_zero_attn", "encoder_layer_norm_first_gelu",
             "decoder_layer", "transformer"}
for _case in TORCH_CASES:
    if _case.name not in CONVERTED and _case.forms["static"] is True:
        _case.forms["static"] = "eager only: its ops are converted, saved and exported in the CONVERTED cases"
    if _case.name == "encoder_layer_norm_first_gelu":
        # exact GELU is erf, and onnxruntime has no float64 Erf kernel (float32 Erf exports and runs:
        # tests/ops/test_pointwise.py)
        _case.forms["onnx"] = "onnxruntime has no float64 Erf kernel"


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


# ------------------------------------------------------------------ structure
def test_state_dict_keys_are_pytorchs():
    assert list(nn.MultiheadAttention(8, 2).state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                              "out_proj.bias"]
    assert list(nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True).state_dict()) == [
        "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
        "out_proj.bias"]
    keys = list(nn.Transformer(8, 2, 1, 1, 16).state_dict())
    assert keys[:4] == ["encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias",
                        "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.self_attn.out_proj.bias"]
    assert "decoder.layers.0.multihead_attn.in_proj_weight" in keys and keys[-2:] == ["decoder.norm.weight",
                                                                                         "decoder.norm.bias"]


def test_repr_is_pytorchs():
    assert repr(nn.TransformerEncoderLayer(8, 2, 16)) == """TransformerEncoderLayer(
  (self_attn): MultiheadAttention(
    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
  )
  (linear1): Linear(in_features=8, out_features=16, bias=True)
  (dropout): Dropout(p=0.1, inplace=False)
  (linear2): Linear(in_features=16, out_features=8, bias=True)
  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (dropout1): Dropout(p=0.1, inplace=False)
  (dropout2): Dropout(p=0.1, inplace=False)
)"""


def test_stacked_layers_are_independent_copies():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3)
    w = [layer.linear1.weight for layer in enc.layers]
    assert w[0] is not w[1] and np.array_equal(w[0].numpy(), w[1].numpy())
    assert len(list(enc.parameters())) == 3 * len(list(nn.TransformerEncoderLayer(8, 2, 16).parameters()))


def test_initialization_is_pytorchs():
    d2s.manual_seed(0)
    m = nn.MultiheadAttention(64, 4)
    bound = np.sqrt(6 / (64 + 3 * 64))  # xavier-uniform of the packed (3E, E) weight
    w = m.in_proj_weight.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert not m.in_proj_bias.numpy().any() and not m.out_proj.bias.numpy().any()
    t = nn.Transformer(16, 2, 1, 1, 32)
    lin = t.encoder.layers[0].linear1.weight.numpy()  # re-drawn from xavier-uniform by Transformer
    assert np.abs(lin).max() <= np.sqrt(6 / (16 + 32))


def test_attention_dropout_is_active_in_training_only():
    d2s.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = d2s.randn(3, 2, 8)
    a, b = m(x, x, x)[0].numpy(), m(x, x, x)[0].numpy()
    assert not np.allclose(a, b)
    m.eval()
    np.testing.assert_array_equal(m(x, x, x)[0].numpy(), m(x, x, x)[0].numpy())


def test_mask_errors_are_clear():
    q = d2s.randn(1, 1, 2, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=d2s.ones(2, 2), is_causal=True)
    m = nn.MultiheadAttention(4, 2)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(q[0], q[0], q[0], is_causal=True)


# ------------------------------------------------------------------ a GPT-style model from PyTorch
def gpt(lib, vocab=11, d=16, heads=2, layers=2, seq=8):
    """A small decoder-only language model, written once for either library."""
    nn_ = lib.nn

    class Block(nn_.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn_.LayerNorm(d)
            self.attn = nn_.MultiheadAttention(d, heads, batch_first=True)
            self.ln2 = nn_.LayerNorm(d)
            self.mlp = nn_.Sequential(nn_.Linear(d, 4 * d), nn_.GELU(), nn_.Linear(4 * d, d))

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class GPT(nn_.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn_.Embedding(vocab, d)
            self.pos = nn_.Embedding(seq, d)
            self.blocks = nn_.ModuleList([Block() for _ in range(layers)])
            self.enc = nn_.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
            self.ln_f = nn_.LayerNorm(d)
            self.head = nn_.Linear(d, vocab, bias=False)
            self.register_buffer("mask", lib.tensor(np.triu(np.ones((seq, seq), dtype=bool), 1)), persistent=False)

        def forward(self, ids):
            n = ids.shape[1]
            x = self.tok(ids) + self.pos(lib.arange(n))
            mask = self.mask[:n, :n]
            for block in self.blocks:
                x = block(x, mask)
            x = self.enc(x, src_mask=mask)
            return self.head(self.ln_f(x))

    return GPT()


def test_a_pytorch_gpt_state_dict_loads_and_gives_pytorchs_outputs():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    ref = gpt(torch).eval()
    ids = np.random.default_rng(0).integers(0, 11, (3, 8))
    with torch.no_grad():
        want = ref(torch.tensor(ids)).numpy()
    model = gpt(d2s).eval()
    assert list(model.state_dict()) == list(ref.state_dict())
    result = model.load_state_dict(ref.state_dict())  # PyTorch tensors, as they come
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_allclose(model(d2s.tensor(ids)).numpy(), want, rtol=1e-4, atol=1e-5)
    # converted, with a dynamic batch and sequence length
    static = d2s.jit.to_static(model)
    np.testing.assert_allclose(static(d2s.tensor(ids[:, :5])).numpy(), want[:, :5], rtol=1e-4, atol=1e-5)


def test_encoder_with_padding_gives_pytorchs_computed_values():
    # PyTorch's no-grad inference path returns zeros at padded positions; d2s returns the values
    # PyTorch computes with gradients on, eagerly and converted (see TransformerEncoder's docstring)
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    ref = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                      norm=torch.nn.LayerNorm(8)).eval()
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, norm=nn.LayerNorm(8)).eval()
    assert m.use_nested_tensor
    m.load_state_dict(ref.state_dict())
    x = R.standard_normal((2, 4, 8)).astype(np.float32)
    kpm = np.array([[False, False, True, True], [False, False, False, False]])
    want = ref(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm)).detach().numpy()
    np.testing.assert_allclose(m(d2s.tensor(x), src_key_padding_mask=d2s.tensor(kpm)).numpy(), want,
                               rtol=1e-5, atol=1e-5)
    with d2s.no_grad():
        got = d2s.jit.to_static(m)(d2s.tensor(x), src_key_padding_mask=d2s.tensor(kpm)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        nested = ref(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm)).numpy()
    np.testing.assert_allclose(nested[~kpm], want[~kpm], rtol=1e-5, atol=1e-5)  # the same where not padded


@pytest.mark.parametrize("batch_first", [False, True])
def test_converted_self_attention_is_eagers_to_the_bit(batch_first):
    # attn(x, x, x) projects once (query is key is value); the program had an input per
    # argument, so it projected three times and x.grad summed three products: last bits differed
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((1, 2, 2) if batch_first else (2, 1, 2))
    state = {k: d2s.tensor(v.numpy()).double() for k, v in nn.MultiheadAttention(2, 1).state_dict().items()}
    got = []
    for convert in (False, True):
        m = nn.MultiheadAttention(2, 1, batch_first=batch_first).double()
        m.load_state_dict(state)
        f = d2s.jit.to_static(m) if convert else m
        x = d2s.tensor(x0, requires_grad=True)
        out, w = f(x, x, x)
        (out * d2s.tensor(np.arange(1.0, 5.0).reshape(x0.shape))).sum().backward()
        got.append([out.detach().numpy(), w.detach().numpy(), x.grad.numpy()]
                   + [p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)
