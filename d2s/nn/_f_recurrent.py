"""Recurrent cells and whole recurrent layers (the computation behind ``nn.RNN``,
``nn.LSTM`` and ``nn.GRU``), with PyTorch's gate layouts.

A layer's loop over time is one :func:`d2s.scan`: eagerly a Python loop, inside a program a
single ``scan`` op whatever the sequence length (which may be unknown until the program
runs), whose gradient is another scan, linear in the length. The input projection of every
time step (``x W_ih^T + b_ih``) is one matmul before the scan, as PyTorch's CPU kernels do;
only ``h W_hh^T`` stays in the loop.

Variable-length batches (a ``PackedSequence``) run with a mask: a sequence's state stops
changing after its last step, and its outputs there are zeros, which is what PyTorch's
packed kernels compute.
"""
from .. import ops as _ops
from ..static.control_flow import scan
from ._f_activation import dropout
from ._f_linear import linear
from ._util import _static_shape, as_tensor


# ------------------------------------------------------------------ one step
def rnn_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None, nonlinearity="tanh"):
    """One Elman RNN step: ``act(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return _act(linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh), nonlinearity)


def _act(pre, nonlinearity):
    if nonlinearity == "tanh":
        return _ops.tanh(pre)
    if nonlinearity == "relu":
        return _ops.relu(pre)
    raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")


def _hidden(w_hh, what):
    n = _static_shape(w_hh)[1]
    if n is None:
        raise ValueError(f"{what}: the hidden size (weight_hh's dim 1) must be known when the program is built")
    return n


def gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step with PyTorch's gate layout (reset, update, new) in the stacked weights:

    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z = sigmoid(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
    """
    return _gru_gates(linear(x, w_ih, b_ih), h, w_hh, b_hh, _hidden(w_hh, "gru_cell"))


def _gru_gates(gi, h, w_hh, b_hh, hidden):
    gh = linear(h, w_hh, b_hh)
    i_r, i_z, i_n = _ops.split(gi, [hidden] * 3, axis=-1)
    h_r, h_z, h_n = _ops.split(gh, [hidden] * 3, axis=-1)
    r = _ops.sigmoid(i_r + h_r)
    z = _ops.sigmoid(i_z + h_z)
    n = _ops.tanh(i_n + r * h_n)
    return (1.0 - z) * n + z * h


def lstm_cell(x, hc, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None):
    """One LSTM step with PyTorch's gate layout (input, forget, cell, output): returns
    ``(h', c')``; ``w_hr`` projects ``h'`` (``proj_size``)."""
    h, c = hc
    hidden = _static_shape(w_hh)[0]
    if hidden is None:
        raise ValueError("lstm_cell: the hidden size (weight_hh's dim 0 / 4) must be known when the program is built")
    return _lstm_gates(linear(x, w_ih, b_ih), h, c, w_hh, b_hh, w_hr, hidden // 4)


def _lstm_gates(gi, h, c, w_hh, b_hh, w_hr, hidden):
    gates = gi + linear(h, w_hh, b_hh)
    i, f, g, o = _ops.split(gates, [hidden] * 4, axis=-1)
    c2 = _ops.sigmoid(f) * c + _ops.sigmoid(i) * _ops.tanh(g)
    h2 = _ops.sigmoid(o) * _ops.tanh(c2)
    if w_hr is not None:
        h2 = linear(h2, w_hr)
    return h2, c2


# ------------------------------------------------------------------ a whole layer
def _direction(mode, xw, state, w, reverse, nonlinearity, mask, hidden):
    """Run one direction of one layer over time-major projected inputs ``xw`` (T, B, G*H):
    returns (outputs (T, B, H_out), final state)."""
    w_hh, b_hh, w_hr = w
    # loop invariants stay out of the scan's body: the transposed weights, and (but for a GRU,
    # whose new gate multiplies W_hn h + b_hn by r) the hidden bias, added to every input step
    w_hh_t = _ops.transpose(w_hh)
    w_hr_t = None if w_hr is None else _ops.transpose(w_hr)
    b_loop = b_hh
    if mode != "GRU" and b_hh is not None:
        xw, b_loop = xw + b_hh, None

    def hh(h):
        out = _ops.matmul(h, w_hh_t)
        return out if b_loop is None else out + b_loop

    def step(carry, xs):
        x_t = xs[0]
        if mode == "LSTM":
            h, c = carry
            i, f, g, o = _ops.split(x_t + hh(h), [hidden] * 4, axis=-1)
            c2 = _ops.sigmoid(f) * c + _ops.sigmoid(i) * _ops.tanh(g)
            h2 = _ops.sigmoid(o) * _ops.tanh(c2)
            new = (h2 if w_hr_t is None else _ops.matmul(h2, w_hr_t), c2)
        elif mode == "GRU":
            h = carry[0]
            i_r, i_z, i_n = _ops.split(x_t, [hidden] * 3, axis=-1)
            h_r, h_z, h_n = _ops.split(hh(h), [hidden] * 3, axis=-1)
            r = _ops.sigmoid(i_r + h_r)
            z = _ops.sigmoid(i_z + h_z)
            n = _ops.tanh(i_n + r * h_n)
            new = ((1.0 - z) * n + z * h,)
        else:
            new = (_act(x_t + hh(carry[0]), nonlinearity),)
        if mask is None:
            return new, new[0]
        m = xs[1]  # (B, 1): 1 while the sequence lasts
        kept = tuple(_ops.where(m, n, o) for n, o in zip(new, carry))
        return kept, _ops.where(m, new[0], _ops.zeros_like(new[0]))

    seq = (xw,) if mask is None else (xw, mask)
    final, ys = scan(step, tuple(state), seq, reverse=reverse)
    return ys, final


def recurrent(mode, x, hx, weights, num_layers, bidirectional, dropout_p, training, hidden_size,
              nonlinearity="tanh", mask=None):
    """A stacked (bi)directional RNN/LSTM/GRU over time-major ``x`` (T, B, I).

    Args:
        mode: ``'RNN'``, ``'LSTM'`` or ``'GRU'``.
        hx: initial states (L*D, B, H_out) — for an LSTM a pair (h0, c0).
        weights: per layer and direction, ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` (None where absent),
            in PyTorch's order (layer-major, forward direction first).
        dropout_p: dropout on every layer's output but the last, while ``training``.
        hidden_size: the layers' hidden size (a Python int: the gates are split by it).
        mask: optional (T, B, 1) bool tensor, true where a (packed) sequence has a step.

    Returns:
        ``(output (T, B, D*H_out), h_n)``, ``h_n`` being ``(h_n, c_n)`` for an LSTM.
    """
    dirs = 2 if bidirectional else 1
    h0, c0 = hx if mode == "LSTM" else (hx, None)
    h_out, c_out = [], []
    inp = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[k]
            xw = linear(inp, w_ih, b_ih)  # every time step's input projection in one matmul
            state = (h0[k], c0[k]) if mode == "LSTM" else (h0[k],)
            ys, final = _direction(mode, xw, state, (w_hh, b_hh, w_hr), d == 1, nonlinearity, mask, hidden_size)
            outs.append(ys)
            h_out.append(final[0])
            if mode == "LSTM":
                c_out.append(final[1])
        inp = outs[0] if dirs == 1 else _ops.concat(outs, axis=-1)
        if dropout_p and training and layer < num_layers - 1:
            inp = dropout(inp, dropout_p, True)
    h_n = _ops.stack(h_out, axis=0)
    if mode == "LSTM":
        return inp, (h_n, _ops.stack(c_out, axis=0))
    return inp, h_n


def zeros_state(x, n, size):
    """Zeros (n, B, size) in x's dtype, with B read from time-major ``x`` (T, B, I) — also when
    B is known only when a program runs."""
    col = _ops.zeros_like(as_tensor(x)[0, :, :1])  # (B, 1): zeros even where x holds inf or nan
    return _ops.unsqueeze(col, 0) + _ops.zeros((n, 1, size), dtype=str(x.dtype), device=col.device)
