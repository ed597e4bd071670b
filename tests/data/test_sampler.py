"""Samplers: the deterministic ones (sequential, batches, lengths) against PyTorch, stored
(``python -m tests.torch_parity data.test_sampler``) and compared live where torch imports; the
random ones by their properties (a permutation per pass, replacement, ``num_samples``, the
weights' proportions, repeatable from ``d2s.manual_seed`` or a generator)."""
import numpy as np
import pytest

import d2s
import torch_parity
from d2s.data import (BatchSampler, DataLoader, RandomSampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)
from torch_parity import Case


def _data(lib):
    return lib.utils.data if lib.__name__ == "torch" else lib.data


def _batches(lib, n, batch_size, drop_last):
    data = _data(lib)
    bs = data.BatchSampler(data.SequentialSampler(range(n)), batch_size, drop_last)
    return [list(bs), len(bs)]


def _case(name, fn):
    return Case(name, fn, grad=False, static="samplers are Python objects")


TORCH_CASES = [
    _case("batches-10-by-3", lambda lib: _batches(lib, 10, 3, False)),
    _case("batches-10-by-3-drop-last", lambda lib: _batches(lib, 10, 3, True)),
    _case("batches-9-by-3-drop-last", lambda lib: _batches(lib, 9, 3, True)),
    _case("batches-2-by-5", lambda lib: _batches(lib, 2, 5, False)),
    _case("random-sampler-lengths", lambda lib: [len(_data(lib).RandomSampler(range(7))),
                                                 len(_data(lib).RandomSampler(range(7), num_samples=20)),
                                                 len(_data(lib).RandomSampler(range(7), True, 3))]),
    _case("shuffle-with-generator", lambda lib: [sorted(int(v) for b in _data(lib).DataLoader(
        list(range(10)), batch_size=4, shuffle=True, generator=lib.Generator().manual_seed(3)) for v in b),
        len(list(_data(lib).RandomSampler(range(7), generator=lib.Generator())))]),
    _case("loader-lengths", lambda lib: [len(_data(lib).DataLoader(list(range(10)), batch_size=4)),
                                         len(_data(lib).DataLoader(list(range(10)), batch_size=4, drop_last=True)),
                                         len(_data(lib).DataLoader(list(range(10)), batch_size=None))]),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_random_sampler_draws_a_new_permutation_each_pass_repeatable_from_manual_seed():
    s = RandomSampler(range(12))
    d2s.manual_seed(7)
    first, second = list(s), list(s)
    assert sorted(first) == list(range(12)) and sorted(second) == list(range(12)) and first != second
    d2s.manual_seed(7)
    assert list(s) == first and list(s) == second


def test_random_sampler_num_samples_and_replacement():
    d2s.manual_seed(0)
    more = list(RandomSampler(range(5), num_samples=12))
    assert len(more) == 12 and sorted(more[:5]) == list(range(5)) and sorted(more[5:10]) == list(range(5))
    with_replacement = list(RandomSampler(range(3), replacement=True, num_samples=70))
    assert len(with_replacement) == 70 and set(with_replacement) == {0, 1, 2}
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)


def test_a_generator_makes_the_order_independent_of_the_global_seed():
    a = list(RandomSampler(range(10), generator=np.random.default_rng(5)))
    d2s.manual_seed(123)
    b = list(RandomSampler(range(10), generator=np.random.default_rng(5)))
    assert a == b
    loader_a = [v for batch in DataLoader(list(range(10)), batch_size=3, shuffle=True,
                                          generator=np.random.default_rng(9)) for v in batch.tolist()]
    loader_b = [v for batch in DataLoader(list(range(10)), batch_size=3, shuffle=True,
                                          generator=np.random.default_rng(9)) for v in batch.tolist()]
    assert loader_a == loader_b and sorted(loader_a) == list(range(10))
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        RandomSampler(range(3), generator="seed")


def test_subset_random_sampler_permutes_the_given_indices():
    d2s.manual_seed(1)
    got = list(SubsetRandomSampler([10, 20, 30, 40]))
    assert sorted(got) == [10, 20, 30, 40] and len(SubsetRandomSampler([1, 2])) == 2


def test_weighted_random_sampler_follows_the_weights():
    d2s.manual_seed(2)
    draws = np.array(list(WeightedRandomSampler([0.0, 1.0, 3.0], num_samples=4000)))
    assert set(draws.tolist()) <= {1, 2}
    assert 0.70 < np.mean(draws == 2) < 0.80  # 3/4, with a margin of about 7 standard deviations
    once = list(WeightedRandomSampler([1, 1, 1, 1], num_samples=4, replacement=False))
    assert sorted(once) == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="without replacement"):
        WeightedRandomSampler([1, 0], num_samples=2, replacement=False)
    with pytest.raises(ValueError, match="1d sequence"):
        WeightedRandomSampler([[1, 2]], num_samples=2)


def test_batch_sampler_arguments_and_loader_with_batch_sampler():
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(SequentialSampler(range(3)), 0, False)
    bs = BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)
    got = [b.tolist() for b in DataLoader(list(range(7)), batch_sampler=bs)]
    assert got == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(list(range(7)), batch_sampler=bs, batch_size=2)
