"""Datasets: the ``Dataset`` protocol and ``TensorDataset``."""
import numpy as np

from d2s_runtime.device import xp_of

from ..tensor import Tensor, tensor


class Dataset:
    """A map-style dataset: ``len(ds)`` samples, ``ds[i]`` the i-th (any nesting of tuples,
    lists and dicts of tensors, arrays and numbers)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class TensorDataset(Dataset):
    """Samples are the i-th rows of tensors (or arrays) sharing their first dimension:
    ``TensorDataset(x, y)[i] == (x[i], y[i])``."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        ts = [t if isinstance(t, Tensor) else tensor(t) for t in tensors]
        for t in ts:
            if t.is_symbolic:
                raise TypeError("TensorDataset needs concrete tensors, not symbolic ones")
            if t.ndim == 0:
                raise ValueError("TensorDataset: every tensor needs a first (sample) dimension")
        n = {t.shape[0] for t in ts}
        if len(n) != 1:
            raise ValueError(f"TensorDataset: tensors differ in their first dimension: "
                             f"{[tuple(t.shape) for t in ts]}")
        self.tensors = tuple(ts)

    def __len__(self):
        return self.tensors[0].shape[0]

    # Rows are cut from the arrays directly, not through d2s ops: the DataLoader calls this
    # from its worker thread, where an op would be seen by a program being built (or a
    # tracer running) in the main thread.
    def __getitem__(self, index):
        return tuple(Tensor._make(t._data[index]) for t in self.tensors)

    def get_batch(self, indices):
        """The samples at ``indices``, already stacked into one batch (one gather per tensor)."""
        out = []
        for t in self.tensors:
            idx = np.asarray(indices, dtype=np.int64)
            xp = xp_of(t._data)
            out.append(Tensor._make(t._data[idx if xp is np else xp.asarray(idx)]))
        return tuple(out)
