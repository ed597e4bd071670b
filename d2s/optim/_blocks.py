"""Updating a big parameter a block at a time.

An update is a dozen element-wise numpy operations, each making a temporary the size of the
parameter. For the parameters of a model (a GPT's 1024 x 256 matrices), those temporaries are
fresh memory at every operation, and the update runs at memory speed with page faults; on
blocks of ``BLOCK`` elements they stay in the core's cache. Measured on this machine with the
GPT of ``benchmarks/bench_models.py`` (5.3M parameters, AdamW; thread CPU time): 31 ms per
``step()`` whole, 23 ms by blocks (PyTorch's: 9 ms on two threads). Every element goes
through the same operations in the same order, so the result is bitwise the same.

Blocks are runs of rows (slices of the first dim), and run the optimizer's ``_update``
unchanged on them: array state is handed out as the same rows of its array, and scalar state
(``step``, NAdam's ``mu_product``, ASGD's ``eta``) advances once per step: the first block
updates it, the later blocks get copies of the values it had before the step. State an update
creates on its first step (SGD's ``momentum_buffer``) is allocated whole by the first block
that sets it and reads as absent to each block until that block sets its part, as it would to
an update of the whole parameter.
"""
import numpy as np

from ..tensor import Tensor

BLOCK = 1 << 16  # elements: 256 KiB of float32 per array, in a core's L2 cache with its temporaries


def blockable(xp, w, g, state):
    """Whether the update of ``w`` from ``g`` with ``state`` can go by blocks: numpy arrays of more
    than one block, the state's arrays shaped as the parameter (or 0-d: scalar state)."""
    if xp is not np or w.size <= BLOCK or w.shape[0] < 2:
        return False
    for v in state.values():
        a = _array(v)
        if not isinstance(a, np.ndarray) or (a.ndim and a.shape != w.shape):
            return False
    return True


def update_by_blocks(update, xp, w, g, state):
    """Run ``update(xp, w_block, g_block, block_state)`` over blocks of rows of ``w`` and ``g``
    (slices of the first dim: views whatever the arrays' strides; a gradient is often a
    transposed product)."""
    scalars = {k: np.array(_array(v), copy=True) for k, v in state.items() if _array(v).ndim == 0}
    created = set()
    rows = max(1, BLOCK * w.shape[0] // w.size)
    for lo in range(0, w.shape[0], rows):
        block = _Block(state, slice(lo, lo + rows), created,
                       None if lo == 0 else {k: v.copy() for k, v in scalars.items()})
        # (a transposed gradient's rows are strided: one copy of the block reads it in order,
        # cheaper than a dozen operations each reading across it)
        update(xp, w[block.sl], np.ascontiguousarray(g[block.sl]), block)
        block.finish(w.shape)


def _array(v):
    return v.array if isinstance(v, Tensor) else v


class _Block:
    """One block's view of a parameter's state (the interface of ``optimizer._Arrays``)."""

    __slots__ = ("_state", "sl", "_created", "_scalars", "_new")

    def __init__(self, state, sl, created, scalars):
        # scalars: None for the first block (it updates the real ones), else copies of their
        # values before the step. _new: arrays this block set, kept as the update made them
        # (it may go on changing them in place) and written into the state by finish()
        self._state, self.sl, self._created, self._scalars = state, sl, created, scalars
        self._new = {}

    def _absent(self, key):
        if key in self._new:
            return False
        return key not in self._state or key in self._created

    def __getitem__(self, key):
        if key in self._new:
            return self._new[key]
        if self._absent(key):
            raise KeyError(key)
        v = _array(self._state[key])
        if v.ndim == 0:
            return v if self._scalars is None else self._scalars.setdefault(key, v.copy())
        return v[self.sl]

    def __setitem__(self, key, value):
        if isinstance(value, Tensor) or not hasattr(value, "shape") or value.ndim == 0:
            if self._scalars is not None:
                self._scalars[key] = value
            else:
                self._state[key] = value if isinstance(value, Tensor) or not hasattr(value, "shape") \
                    else Tensor._make(value)
            return
        self._new[key] = value

    def __contains__(self, key):
        return not self._absent(key)

    def get(self, key, default=None):
        return default if self._absent(key) else self[key]

    def finish(self, shape):
        """Write the arrays this block set into the state's arrays (allocated whole by the first
        block that sets one the parameter did not have)."""
        for key, value in self._new.items():
            if key not in self._state:
                self._created.add(key)
                self._state[key] = Tensor._make(np.empty(shape, value.dtype))
            _array(self._state[key])[self.sl] = value
