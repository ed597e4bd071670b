"""``default_collate`` and ``default_convert``: samples to batches, with PyTorch's rules.

* tensors are stacked on a new first dimension (on their device);
* numpy arrays become tensors of their dtype, stacked; numpy scalars a 1-d tensor;
* Python floats a float64 tensor, ints an int64 one, bools a bool one (PyTorch's dtypes);
* strings and bytes stay a list;
* dicts (any mapping), named tuples, tuples and lists are collated field by field: a mapping
  keeps its type, a named tuple its type, a tuple becomes a **list** (as in PyTorch), another
  sequence its type where it can be rebuilt.

Works on the arrays directly (no d2s ops), so it runs the same in a loader's thread or worker;
only samples that require grad are stacked by the ``stack`` op, which records their history.
"""
import collections.abc
import copy

import numpy as np

from d2s_runtime.device import xp_of

from ..tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}: pass "
        "collate_fn= to build batches yourself")


def _from_numpy(a):
    a = np.asarray(a)
    return Tensor._make(a if a.flags.c_contiguous else np.ascontiguousarray(a))


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_collate(batch):
    """Stack a list of samples into a batch (see the module docstring for the rules).

    Args:
        batch: a list of samples of one structure.

    Returns:
        The batch: tensors with a new first dimension, in the samples' structure.
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        if any(s.is_symbolic for s in batch):
            raise TypeError("DataLoader: a sample holds a symbolic tensor; datasets must return concrete data")
        xp = xp_of(elem.array)
        shapes = {tuple(s.shape) for s in batch}
        if len(shapes) != 1:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {sorted(shapes)} in one "
                               "batch: pad the samples or pass collate_fn=")
        if any(s.requires_grad for s in batch):
            # torch.stack, as PyTorch's collate: the batch keeps the samples' autograd history
            from ..ops import stack
            return stack(batch)
        return Tensor._make(xp.stack([s.array for s in batch]))
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OUSV":
            raise TypeError(_ERR.format(f"a numpy array of dtype {elem.dtype}"))
        shapes = {s.shape for s in batch}
        if len(shapes) != 1:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {sorted(shapes)} in one "
                               "batch: pad the samples or pass collate_fn=")
        return _from_numpy(np.stack(batch))
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_, np.object_)):
        return _from_numpy(np.asarray(batch))
    if isinstance(elem, bool):
        return Tensor._make(np.asarray(batch, dtype=np.bool_))
    if isinstance(elem, int):
        return Tensor._make(np.asarray(batch, dtype=np.int64))
    if isinstance(elem, float):
        return Tensor._make(np.asarray(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        out = {key: default_collate([d[key] for d in batch]) for key in elem}
        return _rebuild(elem, out)
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(s) != len(elem) for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(s) for s in zip(*batch)]  # each field's samples as a tuple, as in PyTorch
        if isinstance(elem, tuple):
            return fields  # PyTorch returns a list for tuples
        return _rebuild(elem, fields)
    raise TypeError(_ERR.format(type(elem).__name__))


def _rebuild(elem, value):
    """``value`` (a dict, or a list of fields) in ``elem``'s container type, as PyTorch rebuilds it:
    a mutable container is copied and filled (keeping any extra attributes), another one made
    from the values, and one that cannot be either becomes a plain dict or list."""
    try:
        if isinstance(elem, (collections.abc.MutableMapping, collections.abc.MutableSequence)):
            clone = copy.copy(elem)
            if isinstance(clone, collections.abc.MutableMapping):
                clone.update(value)
            else:
                for i, v in enumerate(value):
                    clone[i] = v
            return clone
        return type(elem)(value)
    except TypeError:
        return dict(value) if isinstance(value, dict) else list(value)


def default_convert(data):
    """What a loader with ``batch_size=None`` (no batching) does to each sample: numpy arrays
    (and numpy scalars) become tensors, containers are converted field by field, anything else
    is left as it is."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if data.dtype.kind in "OUSV" else _from_numpy(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_, np.object_)):
        return _from_numpy(np.asarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {k: default_convert(v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
