"""Recurrent cells (one time step each): ``RNNCell`` and ``GRUCell``, PyTorch layouts."""
import math

from .. import ops
from . import functional as F
from . import init
from ._param import new_parameter
from .module import Module


class _CellBase(Module):
    def __init__(self, input_size, hidden_size, bias, gates, dtype, device):
        super().__init__()
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.weight_ih = new_parameter((gates * hidden_size, input_size), dtype, device)
        self.weight_hh = new_parameter((gates * hidden_size, hidden_size), dtype, device)
        if bias:
            self.bias_ih = new_parameter((gates * hidden_size,), dtype, device)
            self.bias_hh = new_parameter((gates * hidden_size,), dtype, device)
        else:
            self.bias_ih = self.bias_hh = None
        self.reset_parameters()

    def reset_parameters(self):
        # PyTorch draws every weight and bias of a cell from U(-1/sqrt(hidden), 1/sqrt(hidden)).
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _initial(self, x, h):
        if h is not None:
            return h
        # zeros shaped (batch, hidden) derived from x with d2s ops, so a symbolic batch size works
        zero_col = ops.sum(x * 0.0, axis=-1, keepdims=True)  # (batch, 1), or (1,) unbatched
        return zero_col + ops.zeros(self.hidden_size, dtype=str(x.dtype))

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class RNNCell(_CellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu); ``h`` defaults to zeros."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", dtype="float32", device=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, 1, dtype, device)
        self.nonlinearity = nonlinearity

    def forward(self, x, h=None):
        return F.rnn_cell(x, self._initial(x, h), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh,
                          self.nonlinearity)


class GRUCell(_CellBase):
    """A gated recurrent unit step with PyTorch's (reset, update, new) gate layout."""

    def __init__(self, input_size, hidden_size, bias=True, dtype="float32", device=None):
        super().__init__(input_size, hidden_size, bias, 3, dtype, device)

    def forward(self, x, h=None):
        return F.gru_cell(x, self._initial(x, h), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
