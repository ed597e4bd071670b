"""Recurrent layers against PyTorch: RNN/LSTM/GRU (layers, bidirectional, batch_first, proj_size,
unbatched, initial states), the cells, packed sequences; float64 gradients of the input, the
initial states and every weight (given through ``functional_call``); state dict keys; the
converted layer is one ``scan`` op over a dynamic sequence length, with a gradient linear in
the length; saved and exported forms."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s import nn
from torch_parity import Case

R = np.random.default_rng(2)


def _config(kind, *args, **kw):
    """(d2s module, its parameter names and random weights in PyTorch's order)."""
    m = getattr(nn, kind)(*args, **kw)
    names = [k for k, _ in m.named_parameters()]
    weights = [R.uniform(-0.6, 0.6, tuple(p.shape)) for p in m.parameters()]
    return names, weights


def layer_case(name, kind, args, kw, x, states=(), call_kw=None, **case_kw):
    """A case running ``t.nn.<kind>(*args, **kw)`` on ``x`` (and initial states) with the given
    weights, through ``functional_call`` so that their gradients are compared too."""
    names, weights = _config(kind, *args, **kw)
    n_states = len(states)
    lstm = kind in ("LSTM", "LSTMCell")

    def fn(t, x, *rest):
        st, ws = rest[:n_states], rest[n_states:]
        m = getattr(t.nn, kind)(*args, **kw)
        if call_kw and call_kw.get("eval"):
            m.eval()
        call = (x,) if not st else (x, tuple(st) if lstm else st[0])
        return t.func.functional_call(m, dict(zip(names, ws)), call)

    return Case(name, fn, x, *states, *weights, **case_kw)


X = R.standard_normal((5, 2, 3))           # (T, N, I)
XB = R.standard_normal((2, 5, 3))          # (N, T, I)
XU = R.standard_normal((4, 3))             # (T, I) unbatched
H2 = R.standard_normal((2, 2, 4))          # (layers * dirs, N, H)
H4 = R.standard_normal((4, 2, 4))

TORCH_CASES = [
    layer_case("lstm", "LSTM", (3, 4), {}, X),
    layer_case("lstm_2layer_states", "LSTM", (3, 4, 2), {}, X, (H2, R.standard_normal((2, 2, 4)))),
    layer_case("lstm_bidir_batch_first", "LSTM", (3, 4), {"num_layers": 2, "bidirectional": True,
                                                            "batch_first": True}, XB,
               (H4, R.standard_normal((4, 2, 4)))),
    layer_case("lstm_proj", "LSTM", (3, 4), {"num_layers": 2, "proj_size": 2}, X),
    layer_case("lstm_no_bias", "LSTM", (3, 4), {"bias": False}, X),
    layer_case("lstm_unbatched", "LSTM", (3, 4), {}, XU, (H2[:1, 0], H2[1:, 1])),
    layer_case("lstm_dropout_eval", "LSTM", (3, 4), {"num_layers": 2, "dropout": 0.5}, X, call_kw={"eval": True}),
    layer_case("gru", "GRU", (3, 4), {}, X),
    layer_case("gru_bidir_states", "GRU", (3, 4), {"num_layers": 2, "bidirectional": True}, X, (H4,)),
    layer_case("gru_unbatched", "GRU", (3, 4), {"batch_first": True}, XU),
    layer_case("rnn_tanh", "RNN", (3, 4, 2), {}, X, (H2,)),
    layer_case("rnn_relu_bidir_no_bias", "RNN", (3, 4), {"nonlinearity": "relu", "bias": False,
                                                         "bidirectional": True, "batch_first": True}, XB),
    layer_case("lstm_cell", "LSTMCell", (3, 4), {}, X[0], (H2[0], H2[1])),
    layer_case("lstm_cell_zero_state_unbatched", "LSTMCell", (3, 4), {}, X[0, 0]),
    layer_case("gru_cell", "GRUCell", (3, 4), {}, X[0], (H2[0],)),
    layer_case("rnn_cell_relu", "RNNCell", (3, 4), {"nonlinearity": "relu"}, X[0]),
    layer_case("rnn_cell_no_bias_unbatched", "RNNCell", (3, 4), {"bias": False}, X[0, 0], (H2[0, 0],)),
]

PACK_LENGTHS = [2, 5, 3]
XP = R.standard_normal((5, 3, 3))


def _packed_lstm(t, x, *ws, enforce_sorted=False, bidirectional=True):
    names, _ = _config("LSTM", 3, 4, bidirectional=bidirectional)
    m = t.nn.LSTM(3, 4, bidirectional=bidirectional)
    lengths = PACK_LENGTHS if not enforce_sorted else sorted(PACK_LENGTHS, reverse=True)
    packed = t.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
    out, (h, c) = t.func.functional_call(m, dict(zip(names, ws)), (packed,))
    padded, lens = t.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    return padded, lens, h, c, out.data


_PACKED = "eager only: packing reads the lengths as Python values"
TORCH_CASES += [
    Case("lstm_packed_unsorted", _packed_lstm, XP, *_config("LSTM", 3, 4, bidirectional=True)[1], static=_PACKED),
    Case("lstm_packed_sorted", lambda t, x, *w: _packed_lstm(t, x, *w, enforce_sorted=True, bidirectional=False),
         XP, *_config("LSTM", 3, 4)[1], static=_PACKED),
    Case("pad_sequence", lambda t, a, b, c: t.nn.utils.rnn.pad_sequence([a, b, c], batch_first=True,
                                                                         padding_value=-1.0),
         R.standard_normal((2, 3)), R.standard_normal((4, 3)), R.standard_normal((1, 3)),
         dynamic="padding reads each sequence's length when the program is built"),
    Case("pack_sequence_roundtrip", lambda t, a, b: t.nn.utils.rnn.unpack_sequence(
        t.nn.utils.rnn.pack_sequence([a, b], enforce_sorted=False)),
        R.standard_normal((2, 3)), R.standard_normal((4, 3)), static=_PACKED),
]

# to_static, saving and ONNX of every case would take most of the suite's time budget: these
# cover each layer kind and option in those forms (the others compare eagerly with PyTorch)
CONVERTED = {"lstm", "lstm_bidir_batch_first", "lstm_proj", "gru_bidir_states", "rnn_relu_bidir_no_bias",
             "lstm_unbatched", "lstm_cell", "gru_cell", "pad_sequence"}
for _case in TORCH_CASES:
    if _case.name not in CONVERTED and _case.forms["static"] is True:
        _case.forms["static"] = "eager only: its ops are converted, saved and exported in the CONVERTED cases"


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


# ------------------------------------------------------------------ structure
def test_state_dict_keys_are_pytorchs():
    keys = list(nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2).state_dict())
    assert keys[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert keys[5:10] == [k + "_reverse" for k in keys[:5]]
    assert keys[10] == "weight_ih_l1" and len(keys) == 20
    assert list(nn.GRU(3, 4, bias=False).state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(nn.GRU(3, 4, 2, bidirectional=True).weight_ih_l1.shape) == (12, 8)
    assert list(nn.LSTMCell(3, 4).state_dict()) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]


def test_reprs_are_pytorchs():
    assert repr(nn.RNN(3, 4, 2, "relu", batch_first=True)) == "RNN(3, 4, num_layers=2, batch_first=True)"
    assert repr(nn.LSTM(3, 4, proj_size=2, dropout=0.5, num_layers=2)) == \
        "LSTM(3, 4, proj_size=2, num_layers=2, dropout=0.5)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu", bias=False)) == "RNNCell(3, 4, bias=False, nonlinearity=relu)"


def test_initialization_is_pytorchs_uniform():
    d2s.manual_seed(0)
    m = nn.GRU(10, 100)
    w = np.concatenate([p.numpy().ravel() for p in m.parameters()])
    bound = 1 / np.sqrt(100)
    assert w.min() >= -bound and w.max() <= bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.01 * bound  # U(-b, b)


def test_errors_are_pytorchs():
    m = nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(d2s.zeros(2, 1, 5))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        m(d2s.zeros(2, 1, 1, 3))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 1, 4\), got \[2, 1, 4\]"):
        m(d2s.zeros(2, 1, 3), (d2s.zeros(2, 1, 4), d2s.zeros(2, 1, 4)))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        nn.utils.rnn.pack_padded_sequence(d2s.zeros(3, 2, 1), [1, 3])


def test_dropout_between_layers_only_in_training():
    d2s.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.9)
    x = d2s.randn(6, 2, 3)
    a, b = m(x)[0].numpy(), m(x)[0].numpy()
    assert not np.allclose(a, b)  # a fresh mask per call
    m.eval()
    np.testing.assert_array_equal(m(x)[0].numpy(), m(x)[0].numpy())


# ------------------------------------------------------------------ programs
def _loop_ops(program):
    return [op.type for op in program.global_block().ops if op.type in ("scan", "while")]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_a_converted_layer_is_one_scan_over_a_dynamic_length(kind):
    m = getattr(nn, kind)(3, 4)
    spec = d2s.jit.InputSpec([None, 2, 3], "float32")
    static = d2s.jit.to_static(m, input_spec=[spec])
    program = static.forward.get_program(spec)
    assert _loop_ops(program) == ["scan"]
    for t in (1, 7):  # one program, any length
        x = d2s.randn(t, 2, 3)
        got = static(x)
        want = getattr(nn, kind).forward(m, x)
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-5, atol=1e-6)
    assert len(static.forward.programs) == 1


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("batch", [1, 3])
def test_converted_layers_return_exactly_the_eager_outputs(kind, batch):
    """Batch 1 included: each step's ``h @ W_hh.T`` is then a matrix-vector product, whose bits
    numpy's BLAS computes differently for a contiguous copy of ``W_hh.T`` (which the scan passes
    used to make) than for the transposed view eager code reads."""
    rng = np.random.default_rng(0)
    for trial in range(3):  # fresh layers of one configuration share their optimized programs
        m = getattr(nn, kind)(3, 5, num_layers=2, batch_first=True).double()
        x = d2s.tensor(rng.standard_normal((batch, 4, 3)))
        h0 = d2s.tensor(rng.standard_normal((2, batch, 5)))
        state = (h0, d2s.tensor(rng.standard_normal((2, batch, 5)))) if kind == "LSTM" else h0
        for args in ((x,), (x, state)):
            want = m(*args)
            got = d2s.jit.to_static(m)(*args)
            for w, g in zip(d2s.pytree.tree_leaves(want), d2s.pytree.tree_leaves(got)):
                np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("kind", ["GRU", "LSTM", "RNN"])
def test_converted_layers_give_exactly_the_eager_gradients(kind):
    """A GRU reads its state twice per step (``h W_hh^T`` and ``z * h``): the scan's gradient
    sums a step's uses of it before adding the outputs' share, and eager scans now pass the state
    through one node per step so that eager autograd sums them alike (the gradients differed in
    their last bits in 11 of 12 random configurations)."""
    rng = np.random.default_rng(0)
    for trial, (steps, batch) in enumerate([(4, 2), (5, 3), (3, 1), (6, 2)]):
        d2s.manual_seed(trial + 1)
        eager = getattr(nn, kind)(3, 4, num_layers=1 + trial % 2, bidirectional=trial == 2)
        static = getattr(nn, kind)(3, 4, num_layers=1 + trial % 2, bidirectional=trial == 2)
        static.load_state_dict(eager.state_dict())
        static = d2s.jit.to_static(static)  # (converts the module itself)
        x = rng.standard_normal((steps, batch, 3)).astype("float32")
        grads = []
        for m in (eager, static, static):
            m.zero_grad()
            xi = d2s.tensor(x, requires_grad=True)
            out = m(xi)[0]
            (out * d2s.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype("float32"))).sum().backward()
            grads.append([xi.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()])
        for got in grads[1:]:
            for w, g in zip(grads[0], got):
                np.testing.assert_array_equal(g, w)


def test_a_bidirectional_two_layer_lstm_is_four_scans_and_trains_as_eager():
    d2s.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    x = d2s.randn(2, 6, 3)

    def loss_of(fwd):
        m.zero_grad()
        out, (h, c) = fwd(x)
        loss = (out * out).sum() + h.sum() + c.mean()
        loss.backward()
        return loss.numpy(), {k: p.grad.numpy().copy() for k, p in m.named_parameters()}

    want = loss_of(lambda v: nn.LSTM.forward(m, v))
    static = d2s.jit.to_static(m, input_spec=[d2s.jit.InputSpec([2, None, 3], "float32")])
    got = loss_of(static)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for k in want[1]:
        np.testing.assert_allclose(got[1][k], want[1][k], rtol=1e-4, atol=1e-6, err_msg=k)
    prog = static.forward.get_program(d2s.jit.InputSpec([2, None, 3], "float32"))
    assert _loop_ops(prog) == ["scan"] * 4


def test_the_backward_program_is_linear_in_the_length():
    # the gradient of a scan is a scan: the backward program has a fixed number of ops, and its
    # loops run once per time step (the length is unknown when it is built)
    m = nn.GRU(3, 4)
    spec = d2s.jit.InputSpec([None, 1, 3], "float32")
    static = d2s.jit.to_static(m, input_spec=[spec])
    for t in (2, 9):
        out, _ = static(d2s.randn(t, 1, 3))
        out.sum().backward()
    assert len(static.forward.programs) == 1
    prog = static.forward.get_program(spec)
    n_ops = sum(1 for _ in prog.global_block().ops)
    assert n_ops < 40, n_ops  # not T unrolled copies


def test_a_saved_lstm_runs_under_the_runtime_and_onnxruntime(tmp_path):
    import d2s_runtime
    import onnxruntime as ort
    d2s.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2).eval()
    spec = d2s.jit.InputSpec([None, 2, 3], "float32", name="x")
    x = d2s.randn(7, 2, 3)
    want = m(x)
    d2s.jit.save(m, str(tmp_path / "m"), input_spec=[spec])
    got = d2s_runtime.load(str(tmp_path / "m"))(x.numpy())
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-5, atol=1e-6)
    d2s.onnx.export(m, str(tmp_path / "m.onnx"), [spec])
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    outs = sess.run(None, {"x": x.numpy()})
    np.testing.assert_allclose(outs[0], want[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[2], want[1][1].numpy(), rtol=1e-5, atol=1e-6)
