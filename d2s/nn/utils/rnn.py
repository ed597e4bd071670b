"""Batches of variable-length sequences (PyTorch's ``torch.nn.utils.rnn``): ``pad_sequence``,
``unpad_sequence``, and ``PackedSequence`` with ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence`` and ``unpack_sequence``.

Every reordering is a gather with index arrays computed from the lengths, so gradients flow
through packing and padding. The lengths must be known (Python ints, or a concrete tensor):
packing is eager, or static inside a program when the lengths are constants there.
"""
from collections import namedtuple

import numpy as np

from ... import ops as _ops
from ...tensor import Tensor, tensor
from .._util import _static_shape, as_tensor, const

__all__ = ["PackedSequence", "pad_sequence", "unpad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A batch of sequences of different lengths, stored time step by time step: ``data``
    holds the rows of every sequence still running at step 0, then at step 1, ...;
    ``batch_sizes[t]`` is how many there are at step t. Sequences are ordered longest first;
    ``sorted_indices``/``unsorted_indices`` map to and from the caller's order (None when the
    caller's batch was sorted already). Recurrent layers accept one in place of a tensor."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        return type(self)(self.data.to(*args, **kwargs), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    @property
    def is_cuda(self):
        return self.data.device == "gpu"


def _ints(x, what):
    if isinstance(x, Tensor):
        if x.is_symbolic:
            raise ValueError(f"{what} must be known (Python ints or a concrete tensor), not a value computed inside "
                             "the program: packing reorders rows by the lengths")
        return np.asarray(x.numpy()).astype(np.int64).reshape(-1)
    return np.asarray(x, dtype=np.int64).reshape(-1)


def _invert(perm):
    p = _ints(perm, "sorted_indices")
    inv = np.empty_like(p)
    inv[p] = np.arange(len(p))
    return const(inv, perm) if isinstance(perm, Tensor) else tensor(inv)


def _positions(lengths):
    """(time index, batch index) of every packed row, step by step, for lengths sorted longest
    first."""
    t_idx, b_idx = [], []
    for t in range(int(lengths[0]) if len(lengths) else 0):
        n = int((lengths > t).sum())
        t_idx.extend([t] * n)
        b_idx.extend(range(n))
    return np.asarray(t_idx, dtype=np.int64), np.asarray(b_idx, dtype=np.int64)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (L_max, B, *) (``batch_first``: (B, L_max, *)),
    filling with ``padding_value`` after (or, ``padding_side='left'``, before) each."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = [as_tensor(s) for s in sequences]
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    lens = [_static_shape(s)[0] for s in seqs]
    if any(n is None for n in lens):
        raise ValueError("pad_sequence: every sequence's length must be known when the program is built")
    longest = max(lens)
    padded = []
    for s, n in zip(seqs, lens):
        if n < longest:
            fill = _ops.full_like(_ops.zeros_like(s[:1]), padding_value)
            pad = _ops.concat([fill] * (longest - n), axis=0) if longest - n > 1 else fill
            s = _ops.concat([s, pad] if padding_side == "right" else [pad, s], axis=0)
        padded.append(s)
    return _ops.stack(padded, axis=0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences of a padded batch, each cut to its length."""
    lens = _ints(lengths, "lengths")
    x = as_tensor(padded_sequences)
    if not batch_first:
        x = _ops.transpose(x, 0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lens)]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (``batch_first``: (B, T, *)) of sequences with ``lengths``.

    With ``enforce_sorted`` the lengths must be in decreasing order; otherwise the batch is
    sorted here and the order kept in the result (``sorted_indices``).
    """
    lens = _ints(lengths, "lengths")
    x = as_tensor(input)
    if batch_first:
        x = _ops.transpose(x, 0, 1)
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = const(order, x)
        x = x[:, sorted_indices]
    if len(lens) and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    t_idx, b_idx = _positions(lens)
    data = x[const(t_idx, x), const(b_idx, x)]
    batch_sizes = tensor(np.asarray([(lens > t).sum() for t in range(int(lens[0]))], dtype=np.int64))
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _lengths_of(batch_sizes):
    bs = _ints(batch_sizes, "batch_sizes")
    return np.asarray([(bs > b).sum() for b in range(int(bs[0]))], dtype=np.int64) if len(bs) else bs


def _padded(sequence, padding_value, total_length=None):
    """(padded (T, B_sorted, *), sorted lengths) of a PackedSequence."""
    lens = _lengths_of(sequence.batch_sizes)
    t_max = int(lens[0]) if len(lens) else 0
    if total_length is not None:
        if total_length < t_max:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {t_max}")
        t_max = total_length
    t_idx, b_idx = _positions(lens)
    rows = len(t_idx)
    index = np.full((t_max, len(lens)), rows, dtype=np.int64)  # ``rows`` picks the padding row
    index[t_idx, b_idx] = np.arange(rows)
    data = as_tensor(sequence.data)
    fill = _ops.full_like(_ops.zeros_like(data[:1]), padding_value)
    return _ops.concat([data, fill], axis=0)[const(index, data)], lens


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The padded batch (T, B, *) (``batch_first``: (B, T, *)) and the lengths (an int64
    tensor) of a PackedSequence, in the caller's original batch order."""
    x, lens = _padded(sequence, padding_value, total_length)
    if sequence.unsorted_indices is not None:
        x = x[:, sequence.unsorted_indices]
        lens = lens[_ints(sequence.unsorted_indices, "unsorted_indices")]
    if batch_first:
        x = _ops.transpose(x, 0, 1)
    return x, tensor(lens)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of (L_i, *) tensors (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = [_static_shape(as_tensor(s))[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of (L_i, *) tensors a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


# ------------------------------------------------------------------ for the recurrent layers
def unpack_for_layer(packed):
    """(padded time-major input, sorted lengths, sorted_indices, unsorted_indices)."""
    x, lens = _padded(packed, 0.0)
    return x, lens, packed.sorted_indices, packed.unsorted_indices


def mask_of(lengths, x):
    """Bool (T, B, 1): True while sequence b has a step t."""
    t_max = _static_shape(x)[0]
    return const((np.arange(t_max)[:, None] < np.asarray(lengths)[None, :])[..., None], x)


def pack_like(out, packed):
    """Time-major padded ``out`` packed with the layout of ``packed``."""
    t_idx, b_idx = _positions(_lengths_of(packed.batch_sizes))
    return PackedSequence(out[const(t_idx, out), const(b_idx, out)], packed.batch_sizes, packed.sorted_indices,
                          packed.unsorted_indices)
