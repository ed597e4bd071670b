"""Datasets: ConcatDataset, ChainDataset, StackDataset, Subset and random_split, against PyTorch
where the result is deterministic (split sizes, concatenated indexing), stored
(``python -m tests.torch_parity data.test_dataset``) and compared live where torch imports."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s.data import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from torch_parity import Case


def _data(lib):
    return lib.utils.data if lib.__name__ == "torch" else lib.data


class Squares(Dataset):
    def __init__(self, n, offset=0):
        self.n, self.offset = n, offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not -self.n <= i < self.n:
            raise IndexError(i)
        return (i % self.n + self.offset) ** 2


def _split_sizes(lib, n, lengths):
    parts = _data(lib).random_split(list(range(n)), lengths)
    return [len(p) for p in parts]


def _concat(lib):
    ds = _data(lib).ConcatDataset([Squares(3), Squares(4, offset=10), Squares(2, offset=100)])
    return [len(ds), ds.cumulative_sizes, [ds[i] for i in range(len(ds))], ds[-1], ds[-9]]


def _case(name, fn):
    return Case(name, fn, grad=False, static="datasets are Python objects")


TORCH_CASES = [
    _case("random_split-fractions-remainder-spread", lambda lib: _split_sizes(lib, 10, [0.3, 0.3, 0.4])),
    _case("random_split-fractions-odd", lambda lib: _split_sizes(lib, 7, [0.5, 0.5])),
    _case("random_split-many-fractions", lambda lib: _split_sizes(lib, 13, [0.1] * 10)),
    _case("random_split-lengths", lambda lib: _split_sizes(lib, 9, [2, 3, 4])),
    _case("concat-indexing", _concat),
    # a dataset over tensors that require grad gives rows (and batches) that keep their history,
    # as torch's indexing and torch.stack do; lib.utils.data is reachable right after `import`
    Case("tensor-dataset-rows-keep-grad", lambda lib, x: _grad_batches(lib, x), np.arange(12.0).reshape(6, 2),
         static="datasets are Python objects"),
    _case("random_split-with-generator", lambda lib: sorted(
        i for part in lib.utils.data.random_split(range(10), [0.7, 0.3], generator=lib.Generator().manual_seed(1))
        for i in part)),
]


def _grad_batches(lib, x):
    ds = lib.utils.data.TensorDataset(x * 2, x.sum(1))
    return list(lib.utils.data.DataLoader(ds, batch_size=4)), ds[1]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_random_split_is_a_partition_repeatable_with_a_seed_or_generator():
    ds = list(range(20))
    d2s.manual_seed(3)
    a = [list(s) for s in random_split(ds, [0.25, 0.75])]
    d2s.manual_seed(3)
    b = [list(s) for s in random_split(ds, [5, 15])]
    assert a == b and sorted(a[0] + a[1]) == ds and len(a[0]) == 5
    assert a[0] != list(range(5))  # shuffled
    g1 = [list(s) for s in random_split(ds, [10, 10], generator=np.random.default_rng(1))]
    g2 = [list(s) for s in random_split(ds, [10, 10], generator=np.random.default_rng(1))]
    assert g1 == g2
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 4])
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        random_split(ds, [10, 10], generator=42)
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(list(range(2)), [0.9, 0.1])


def test_subset_and_its_batch_fast_path_agree():
    x = d2s.tensor(np.arange(12.0).reshape(6, 2))
    ds = TensorDataset(x, np.arange(6))
    sub = Subset(ds, [4, 1, 5])
    assert len(sub) == 3 and sub[0][1].item() == 4
    assert [int(s[1]) for s in sub.__getitems__([2, 0])] == [5, 4]
    (xb, yb), = list(d2s.data.DataLoader(sub, batch_size=3))
    assert yb.tolist() == [4, 1, 5] and xb.numpy()[:, 0].tolist() == [8.0, 2.0, 10.0]


def test_tensor_dataset_rows_and_errors():
    ds = TensorDataset(np.zeros((3, 2)), d2s.tensor([1, 2, 3]))
    assert len(ds) == 3 and ds[2][1].item() == 3
    with pytest.raises(ValueError, match="first dimension"):
        TensorDataset(np.zeros((3, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="sample"):
        TensorDataset(np.float32(1.0))


class Stream(IterableDataset):
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


def test_chain_and_add_operators():
    chained = Stream([1, 2]) + Stream([3])
    assert isinstance(chained, ChainDataset) and list(chained) == [1, 2, 3] and len(chained) == 3
    concat = Squares(2) + Squares(1, offset=5)
    assert isinstance(concat, ConcatDataset) and [concat[i] for i in range(3)] == [0, 1, 25]
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Stream([1])])
    with pytest.raises(TypeError, match="only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))
    with pytest.raises(ValueError, match="absolute value"):
        concat[-4]


def test_stack_dataset_tuples_and_dicts():
    st = StackDataset(Squares(3), Squares(3, offset=1))
    assert st[2] == (4, 9) and len(st) == 3
    named = StackDataset(a=Squares(2), b=Squares(2, offset=2))
    assert named[1] == {"a": 1, "b": 9}
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(Squares(2), Squares(3))
    with pytest.raises(ValueError, match="both types"):
        StackDataset(Squares(2), b=Squares(2))
