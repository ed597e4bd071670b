"""Functions with data-dependent control flow (and a few without), for the trace tests.

Each :class:`Case` has an ``example`` input (the one traced) and ``others``: inputs that take
another path through the function and give another answer than the traced path would. The
functions use only what ``to_static`` converts (if/elif/else, while, for over a tensor-sized
``range``, break, early return, and/or/not), so the same corpus checks source conversion.
``VALUE_READS`` holds functions that read values in ways only tracing sees through
(``.item()``, ``float()``, ``.numpy()``, ...), and ``STATIC`` functions whose control flow
does not depend on tensor values.
"""
import numpy as np

import d2s
from d2s import nn


def t(*values):
    return d2s.tensor(np.array(values, dtype=np.float32))


class Case:
    def __init__(self, fn, example, *others):
        self.fn, self.example, self.others = fn, example, others
        self.name = getattr(fn, "__name__", type(fn).__name__)

    def inputs(self):
        return [self.example, *self.others]

    def __repr__(self):
        return self.name


# ------------------------------------------------------------------ if / elif / else
def if_else_return(x):
    if x.sum() > 0:
        return x * 2
    else:
        return x - 1


def if_assign(x):
    y = x + 1
    if x.mean() > 1:
        y = y * 3
    return y


def if_no_else(x):
    if x.max() > 2:
        x = x - 2
    return x * x


def elif_chain(x):
    s = x.sum()
    if s > 10:
        y = x / 10
    elif s > 0:
        y = x + 0.5
    else:
        y = -x
    return y


def elif_four_way(x):
    k = x.argmax()
    if k == 0:
        y = x * 1
    elif k == 1:
        y = x * 2
    elif k == 2:
        y = x * 3
    else:
        y = x * 4
    return y


def nested_if(x):
    if x.sum() > 0:
        if x.max() > 2:
            y = x - 2
        else:
            y = x + 2
    else:
        y = x * 0.5
    return y


def if_all(x):
    if (x > 0).all():
        return d2s.exp(-x)
    return x


def if_any(x):
    y = x
    if (x > 2.5).any():
        y = x / 2
    return y + 1


def if_index_compare(x):
    if x[0] > x[-1]:
        return x[0] - x
    return x - x[-1]


def clip_by_norm(x):
    n = d2s.sqrt((x * x).sum())
    if n > 4:
        x = x * (4 / n)
    return x


def piecewise_activation(x):
    if x.max() > 0:
        y = d2s.relu(x)
    else:
        y = x * 0.1
    return y


# ------------------------------------------------------------------ and / or / not
def if_and(x):
    if x.sum() > 0 and x.max() < 5:
        return x * 2
    return x


def if_or(x):
    if x.min() < -1 or x.max() > 3:
        return x / 2
    return x


def if_not(x):
    if not x.sum() > 0:
        x = -x
    return x + 1


# ------------------------------------------------------------------ while / break
def while_halve(x):
    while x.abs().max() > 1:
        x = x / 2
    return x


def while_count(x):
    i = d2s.zeros([])
    while x.sum() < 10:
        x = x + 1
        i = i + 1
    return x, i


def while_and(x):
    while x.sum() < 20 and x.max() < 6:
        x = x * 1.5
    return x


def while_break(x):
    while x.sum() < 100:
        x = x * 3
        if x.max() > 20:
            break
    return x


def for_break(x):
    for _ in range(6):
        x = x * 2
        if x.sum() > 20:
            break
    return x


def collatz_steps(x):
    steps = d2s.zeros([])
    while x > 1:
        x = d2s.where(x % 2 == 0, x / 2, 3 * x + 1)
        steps = steps + 1
    return steps


def newton_sqrt(a):
    y = a
    while ((y * y - a).abs()).max() > 1e-3:
        y = 0.5 * (y + a / y)
    return y


# ------------------------------------------------------------------ for over a tensor-sized range
def for_range_count(x):
    n = (x > 0).sum()
    acc = x * 0
    for _ in range(n):
        acc = acc + x
    return acc


def for_range_clipped(x):
    n = d2s.clip(x.sum(), 0, 5).cast("int64")
    y = x
    for _ in range(n):
        y = y * 0.5 + 1
    return y


def for_range_index(x):
    n = (x > 0).sum()
    s = d2s.zeros([])
    for i in range(n):
        s = s + x[i] * (i + 1)
    return s


# ------------------------------------------------------------------ early return
def early_return_nested(x):
    if x.sum() > 0:
        if x.min() > 0:
            return x * 10
        return x * 5
    return x


def early_return_in_loop(x):
    for _ in range(4):
        if x.sum() > 10:
            return x
        x = x + 1
    return -x


# ------------------------------------------------------------------ a module
class GatedLayer(nn.Module):
    """A linear layer whose activation depends on the sign of its output's mean."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        w = np.array([[1.0, 0.5, -0.5], [0.2, 1.0, 0.3], [-0.4, 0.1, 1.0]], dtype=np.float32)
        self.lin.weight._data[...] = w
        self.lin.bias._data[...] = 0.1

    def forward(self, x):
        h = self.lin(x)
        if h.mean() > 0:
            return d2s.relu(h)
        return d2s.tanh(h) * 2


def gated_module(x):
    return _GATED(x)


_GATED = GatedLayer()


CORPUS = [
    Case(if_else_return, t(1, 2, 3), t(-1, -2, -3)),
    Case(if_assign, t(1, 2, 3), t(0, 0, 1)),
    Case(if_no_else, t(1, 2, 3), t(0, 0, 1)),
    Case(elif_chain, t(1, 2, 3), t(5, 5, 5), t(-1, -2, -3)),
    Case(elif_four_way, t(1, 5, 2, 3), t(5, 1, 2, 3), t(1, 2, 5, 3), t(1, 2, 3, 5)),
    Case(nested_if, t(1, 2, 3), t(1, 1, 1), t(-1, -2, -3)),
    Case(if_all, t(1, 2, 3), t(1, -2, 3)),
    Case(if_any, t(1, 2, 3), t(1, 2, 2)),
    Case(if_index_compare, t(3, 2, 1), t(1, 2, 3)),
    Case(clip_by_norm, t(3, 4, 5), t(1, 1, 1)),
    Case(piecewise_activation, t(-1, 2, 3), t(-1, -2, -3)),
    Case(if_and, t(1, 2, 3), t(1, 2, 6), t(-1, -2, 3)),
    Case(if_or, t(1, 2, 3), t(1, 2, 4), t(-2, 1, 1)),
    Case(if_not, t(1, 2, 3), t(-1, -2, -3)),
    Case(while_halve, t(1, 2, 3), t(4, 5, 6), t(0.5, 0.1, 0.2)),
    Case(while_count, t(1, 2, 3), t(0, 0, 0), t(5, 5, 5)),
    Case(while_and, t(1, 1, 1), t(2, 2, 2), t(10, 0, 0)),
    Case(while_break, t(1, 2, 3), t(10, 20, 30), t(0.1, 0.1, 0.1)),
    Case(for_break, t(1, 1, 1), t(5, 5, 5), t(0.1, 0.1, 0.1)),
    Case(collatz_steps, t(6), t(7), t(1)),
    Case(newton_sqrt, t(4, 9, 2), t(400, 900, 200)),
    Case(for_range_count, t(1, -2, 3), t(1, 2, 3), t(-1, -2, -3)),
    Case(for_range_clipped, t(1, 1, 1), t(0.5, 0.5, 0.5), t(3, 3, 3)),
    Case(for_range_index, t(1, 2, -3), t(1, 2, 3), t(-1, -2, 3)),
    Case(early_return_nested, t(1, 2, 3), t(-1, 2, 3), t(-1, -2, -3)),
    Case(early_return_in_loop, t(3, 3, 3), t(1, 1, 1), t(-3, -3, -3)),
    Case(gated_module, t(1, 2, 3), t(-1, -2, -3)),
]


# ------------------------------------------------------------------ value reads only a trace sees
def read_item(x):
    if x.sum().item() > 0:
        return x + 1
    return x - 1


def read_float(x):
    return x * float(x.max())


def read_int(x):
    n = int((x > 0).sum())
    return x[:n] * 2


def read_bool(x):
    flag = bool(x.sum() > 0)
    return x * 2 if flag else x


def read_numpy(x):
    a = x.numpy()
    return x + float(a.min())


def read_tolist(x):
    return x * len([v for v in x.tolist() if v > 0])


def read_len_masked(x):
    m = x[x > 0]
    s = d2s.zeros([])
    for i in range(len(m)):
        s = s + m[i]
    return s


def read_shape_masked(x):
    m = x[x > 0]
    return m.sum() * m.shape[0]


VALUE_READS = [
    Case(read_item, t(1, 2, 3), t(-1, -2, -3)),
    Case(read_float, t(1, 2, 3), t(1, 2, 4)),
    Case(read_int, t(1, 2, -3), t(1, 2, 3)),
    Case(read_bool, t(1, 2, 3), t(-1, -2, -3)),
    Case(read_numpy, t(1, 2, 3), t(0, 2, 3)),
    Case(read_tolist, t(1, -2, 3), t(1, 2, 3)),
    Case(read_len_masked, t(1, -2, 3), t(1, 2, 3)),
    Case(read_shape_masked, t(1, -2, 3), t(1, 2, 3)),
]


# ------------------------------------------------------------------ no data-dependent control flow
def mlp_like(x):
    h = d2s.tanh(x * 2 + 1)
    return d2s.softmax(h, axis=0)


def python_loop(x):
    for i in range(3):
        x = x * 0.5 + i
    return x


def shape_loop(x):
    s = d2s.zeros([])
    for i in range(x.shape[0]):
        s = s + x[i] * i
    return s


def len_of_input(x):
    return x * len(x)


def constant_condition(x):
    c = d2s.tensor(3.0)
    if c > 2:
        x = x + c
    return x


def tensor_index(x):
    return x[x.argmax()] * x


def masked_sum(x):
    return (x[x > 0]).sum()


STATIC = [
    Case(mlp_like, t(1, 2, 3), t(-1, 0, 5)),
    Case(python_loop, t(1, 2, 3), t(-4, 0, 9)),
    Case(shape_loop, t(1, 2, 3), t(-1, -2, 7)),
    Case(len_of_input, t(1, 2, 3), t(0, -1, 2)),
    Case(constant_condition, t(1, 2, 3), t(-3, 0, 1)),
    Case(tensor_index, t(1, 2, 3), t(5, 0, 1)),
    Case(masked_sum, t(1, -2, 3), t(1, 2, 3)),
    Case(_GATED.lin, t(1, 2, 3), t(-1, 0, 2)),
]
