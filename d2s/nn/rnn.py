"""Recurrent layers with PyTorch's arguments, parameter names and layouts: ``RNN``, ``LSTM``,
``GRU`` (stacked, bidirectional, with dropout between layers) and the one-step cells
``RNNCell``, ``LSTMCell``, ``GRUCell``.

A layer's parameters are ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``,
``bias_hh_l{k}`` (and ``weight_hr_l{k}`` with an LSTM's ``proj_size``), ``_reverse`` for the
backward direction, so a PyTorch state dict loads. Its loop over time is one ``d2s.scan``:
inside a program, one ``scan`` op for any sequence length (see ``_f_recurrent``).
"""
import math
import warnings

from .. import ops as _ops
from . import init
from ._f_linear import linear
from ._f_recurrent import _act, _gru_gates, _lstm_gates, recurrent, zeros_state
from ._param import new_parameter
from ._util import as_tensor
from .module import Module
from .utils.rnn import PackedSequence, mask_of, pack_like, unpack_for_layer


class RNNBase(Module):
    """The common part of ``RNN``, ``LSTM`` and ``GRU``."""

    _GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers, self.bias, self.batch_first = int(num_layers), bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, int(proj_size)
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          UserWarning, stacklevel=2)
        if self.hidden_size <= 0:
            raise ValueError("hidden_size must be greater than 0")
        if self.num_layers <= 0:
            raise ValueError("num_layers must be greater than 0")
        if self.proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if self.proj_size >= self.hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if self.proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate = self._GATES[mode] * self.hidden_size
        dirs = 2 if bidirectional else 1
        out_size = self.proj_size or self.hidden_size
        self._flat_weights_names = []
        for layer in range(self.num_layers):
            for d in range(dirs):
                in_size = self.input_size if layer == 0 else out_size * dirs
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                shapes = [("weight_ih", (gate, in_size)), ("weight_hh", (gate, out_size))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if self.proj_size:
                    shapes.append(("weight_hr", (self.proj_size, self.hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx, new_parameter(shape, dtype, device))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        # PyTorch draws every weight and bias from U(-1/sqrt(hidden), 1/sqrt(hidden))
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    def _layer_weights(self):
        dirs = 2 if self.bidirectional else 1
        out = []
        for layer in range(self.num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                get = (lambda n, sfx=sfx: getattr(self, n + sfx, None))
                out.append((get("weight_ih"), get("weight_hh"), get("bias_ih") if self.bias else None,
                            get("bias_hh") if self.bias else None, get("weight_hr") if self.proj_size else None))
        return out

    def _state_sizes(self):
        return (self.proj_size or self.hidden_size), self.hidden_size

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def flatten_parameters(self):
        """A no-op (PyTorch packs weights for cuDNN here); accepted so model code runs unchanged."""

    # -------------------------------------------------------------- forward
    def _check_input(self, x):
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        if x.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {x.ndim}D instead")
        n = x.shape[-1]
        if isinstance(n, int) and n != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {n}")

    def _check_hidden(self, h, expected, what="hidden"):
        got = tuple(h.shape)
        if any(isinstance(g, int) and g != e for g, e in zip(got, expected)) or len(got) != len(expected):
            raise RuntimeError(f"Expected {what} size {tuple(expected)}, got {list(got)}")

    def forward(self, input, hx=None):
        """Run over ``input`` (L, N, H_in) — (N, L, H_in) with ``batch_first``, (L, H_in)
        unbatched, or a ``PackedSequence`` — from ``hx`` (zeros by default). Returns
        ``(output, h_n)`` (an LSTM: ``(output, (h_n, c_n))``), as PyTorch."""
        lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        n_states = self.num_layers * dirs
        h_size, c_size = self._state_sizes()
        packed = isinstance(input, PackedSequence)
        mask = None
        if packed:
            x, lengths, sorted_idx, unsorted_idx = unpack_for_layer(input)
            mask = mask_of(lengths, x)
            batched = True
        else:
            x = as_tensor(input)
            self._check_input(x)
            batched = x.ndim == 3
            if not batched:
                x = _ops.unsqueeze(x, 1)
            elif self.batch_first:
                x = _ops.transpose(x, 0, 1)
        self._check_input(x)
        bsz = x.shape[1]
        if hx is None:
            h0 = zeros_state(x, n_states, h_size)
            hx = (h0, zeros_state(x, n_states, c_size)) if lstm else h0
        else:
            hs = tuple(as_tensor(h) for h in hx) if lstm else (as_tensor(hx),)
            if not batched:
                if any(h.ndim != 2 for h in hs):
                    dims = ", ".join(f"{h.ndim}-D" for h in hs)
                    raise RuntimeError(f"For unbatched 2-D input, hx{' and cx' if lstm else ''} should also be 2-D "
                                       f"but got ({dims}) tensor{'s' if lstm else ''}")
                hs = tuple(_ops.unsqueeze(h, 1) for h in hs)
            elif any(h.ndim != 3 for h in hs):
                dims = ", ".join(f"{h.ndim}-D" for h in hs)
                raise RuntimeError(f"For batched 3-D input, hx{' and cx' if lstm else ''} should also be 3-D but got "
                                   f"({dims}) tensor{'s' if lstm else ''}")
            if packed and sorted_idx is not None:
                hs = tuple(h[:, sorted_idx] for h in hs)
            self._check_hidden(hs[0], (n_states, bsz, h_size))
            if lstm:
                self._check_hidden(hs[1], (n_states, bsz, c_size), "hidden[1]")
            hx = hs if lstm else hs[0]
        nonlin = "relu" if self.mode == "RNN_RELU" else "tanh"
        base = "LSTM" if lstm else ("GRU" if self.mode == "GRU" else "RNN")
        out, h_n = recurrent(base, x, hx, self._layer_weights(), self.num_layers, self.bidirectional, self.dropout,
                             self.training, self.hidden_size, nonlin, mask)
        if packed:
            if unsorted_idx is not None:
                h_n = tuple(h[:, unsorted_idx] for h in h_n) if lstm else h_n[:, unsorted_idx]
            return pack_like(out, input), h_n
        if not batched:
            out = _ops.squeeze(out, 1)
            h_n = tuple(_ops.squeeze(h, 1) for h in h_n) if lstm else _ops.squeeze(h_n, 1)
        elif self.batch_first:
            out = _ops.transpose(out, 0, 1)
        return out, h_n


class RNN(RNNBase):
    """An Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``, as PyTorch (``nonlinearity`` may be
    the fourth positional argument).
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        args = list(args)
        if len(args) > 3:
            self_nonlinearity = args.pop(3)
            if "nonlinearity" in kwargs:
                raise TypeError("RNN: nonlinearity given twice")
        else:
            self_nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self_nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{self_nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if self_nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)
        self.nonlinearity = self_nonlinearity


class LSTM(RNNBase):
    """A long short-term memory layer with PyTorch's gate layout (input, forget, cell, output);
    ``proj_size`` adds the projection ``weight_hr``. Returns ``(output, (h_n, c_n))``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """A gated recurrent unit layer with PyTorch's gate layout (reset, update, new)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ------------------------------------------------------------------ cells
class RNNCellBase(Module):
    """What the recurrent cells share (``RNNCell``, ``LSTMCell``, ``GRUCell``): PyTorch's
    ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` with ``num_chunks`` gates stacked,
    each drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bias
        self.weight_ih = new_parameter((num_chunks * hidden_size, input_size), dtype, device)
        self.weight_hh = new_parameter((num_chunks * hidden_size, hidden_size), dtype, device)
        if bias:
            self.bias_ih = new_parameter((num_chunks * hidden_size,), dtype, device)
            self.bias_hh = new_parameter((num_chunks * hidden_size,), dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        # PyTorch draws every weight and bias of a cell from U(-1/sqrt(hidden), 1/sqrt(hidden)).
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _prepare(self, input, hx, n_states):
        """(input as 2-d, states as 2-d, whether input was 1-d); zeros where ``hx`` is None."""
        x = as_tensor(input)
        if x.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {x.ndim}D instead")
        n = x.shape[-1]
        if isinstance(n, int) and n != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {n} expected {self.input_size}")
        batched = x.ndim == 2
        if not batched:
            x = _ops.unsqueeze(x, 0)
        if hx is None:
            zero = _ops.zeros_like(x[:, :1]) + _ops.zeros(self.hidden_size, dtype=str(x.dtype), device=x.device)
            return x, (zero,) * n_states, batched
        hs = tuple(as_tensor(h) for h in (hx if n_states > 1 else (hx,)))
        if not batched:
            hs = tuple(_ops.unsqueeze(h, 0) for h in hs)
        return x, hs, batched

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu); ``h`` defaults to zeros."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        out = _act(linear(x, self.weight_ih, self.bias_ih) + linear(h, self.weight_hh, self.bias_hh),
                   self.nonlinearity)
        return out if batched else _ops.squeeze(out, 0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c') = cell(x, (h, c))`` with PyTorch's gate layout; the state
    defaults to zeros."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prepare(input, hx, 2)
        h2, c2 = _lstm_gates(linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh, None,
                             self.hidden_size)
        return (h2, c2) if batched else (_ops.squeeze(h2, 0), _ops.squeeze(c2, 0))


class GRUCell(RNNCellBase):
    """A gated recurrent unit step with PyTorch's (reset, update, new) gate layout."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        out = _gru_gates(linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh, self.hidden_size)
        return out if batched else _ops.squeeze(out, 0)
