"""default_collate and default_convert against PyTorch's: batch structure (a tuple becomes a list,
dicts and named tuples keep their type), dtypes (Python floats float64, ints int64, bools bool,
numpy dtypes kept) and values, stored (``python -m tests.torch_parity data.test_collate``) and
compared live where torch imports."""
import collections

import numpy as np
import pytest

import d2s
import torch_parity
from d2s.data import default_collate, default_convert
from torch_parity import Case

Point = collections.namedtuple("Point", ["x", "y"])
RNG = np.random.default_rng(4)


def _collate(lib):
    return lib.utils.data.default_collate if lib.__name__ == "torch" else lib.data.default_collate


def _convert(lib):
    return lib.utils.data.default_convert if lib.__name__ == "torch" else lib.data.default_convert


def _case(name, samples, convert=False):
    def fn(lib, *arrays):
        made = samples(lib, *arrays)
        return _convert(lib)(made) if convert else _collate(lib)(made)
    return Case(name, fn, grad=False, static="collation runs on the data, outside programs")


A = RNG.standard_normal((4, 3)).astype(np.float32)
TORCH_CASES = [
    _case("tensors", lambda lib: [lib.tensor(A[i]) for i in range(4)]),
    _case("numpy-arrays-keep-dtype", lambda lib: [A[i].astype(np.float64) for i in range(3)]),
    _case("numpy-int-arrays", lambda lib: [np.arange(3, dtype=np.int32) + i for i in range(2)]),
    _case("numpy-scalars", lambda lib: [np.float32(1.5), np.float32(-2.0)]),
    _case("python-floats-are-float64", lambda lib: [1.0, 2.5, -3.0]),
    _case("python-ints-are-int64", lambda lib: [1, 2, 3]),
    _case("python-bools", lambda lib: [True, False]),
    _case("tuples-become-lists", lambda lib: [(lib.tensor(A[i]), i, float(i)) for i in range(3)]),
    _case("lists", lambda lib: [[A[i], i] for i in range(2)]),
    _case("dicts", lambda lib: [{"x": lib.tensor(A[i]), "label": i, "w": 0.5 * i} for i in range(3)]),
    _case("namedtuples", lambda lib: [Point(lib.tensor(A[i]), i) for i in range(3)]),
    _case("nested", lambda lib: [{"inp": (A[i], [i, i + 1]), "meta": {"id": i}} for i in range(2)]),
    _case("strings-stay-a-list", lambda lib: [("a", 1), ("b", 2)]),
    _case("convert-array", lambda lib: A, convert=True),
    _case("convert-tuple-of-arrays", lambda lib: (A[0], A[1], 3, "s"), convert=True),
    _case("convert-dict", lambda lib: {"a": A[0], "b": [np.float32(2.0), 1.5]}, convert=True),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_tensors_of_different_shapes_raise_a_clear_error():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([d2s.ones(2), d2s.ones(3)])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([(1, 2), (1, 2, 3)])


@pytest.mark.parametrize("bad", [[object(), object()], [np.array(["a"]), np.array(["b"])]])
def test_unsupported_samples_name_their_type_and_collate_fn(bad):
    with pytest.raises(TypeError, match="collate_fn"):
        default_collate(bad)


def test_convert_leaves_other_values_alone():
    marker = object()
    out = default_convert({"m": marker, "t": d2s.ones(2)})
    assert out["m"] is marker and isinstance(out["t"], d2s.Tensor)


def test_a_custom_mapping_keeps_its_type_and_attributes():
    class Record(dict):
        pass

    r1, r2 = Record(a=1), Record(a=2)
    r1.tag = r2.tag = "kept"
    out = default_collate([r1, r2])
    assert type(out) is Record and out.tag == "kept" and out["a"].tolist() == [1, 2]
