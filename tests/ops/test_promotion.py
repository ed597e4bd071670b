"""PyTorch's dtype-promotion queries (d2s/ops/promotion.py): result_type over dimensioned and 0-d
tensors and Python numbers, promote_types, can_cast and scalar_tensor, against a table of
PyTorch 2.13's answers and against live torch where it imports."""
import pytest

import d2s

# (dtype of a 1-d tensor, other: a dtype name for a 0-d tensor, '1-d <dtype>', or a Python value, torch's answer)
RESULT_TYPES = [
    ("int32", "float64", "float64"), ("int32", "int64", "int32"), ("int32", 2.5, "float32"), ("int32", 7, "int32"),
    ("float16", 2.5, "float16"), ("bool", 3, "int64"), ("bool", True, "bool"), ("uint8", "int8", "uint8"),
    ("float32", "1-d float64", "float64"), ("int8", "1-d uint8", "int16"), ("float32", "int64", "float32"),
]


def _operand(lib, spec):
    if isinstance(spec, str) and spec.startswith("1-d "):
        return lib.ones(2, dtype=getattr(lib, spec[4:]))
    if isinstance(spec, str):
        return lib.tensor(1, dtype=getattr(lib, spec))
    return spec


@pytest.mark.parametrize("dtype, other, want", RESULT_TYPES)
def test_result_type(dtype, other, want):
    t = d2s.ones(2, dtype=dtype)
    assert str(d2s.result_type(t, _operand(d2s, other))) == want
    if not isinstance(other, str):
        assert str(d2s.result_type(other, t)) == want


def test_result_type_of_numbers_and_promote_types_and_can_cast():
    assert [str(d2s.result_type(a, b)) for a, b in ((2, 3), (2, 3.0), (True, False), (True, 2))] == \
        ["int64", "float32", "bool", "int64"]
    assert str(d2s.promote_types(d2s.int64, d2s.float16)) == "float16"
    assert str(d2s.promote_types("uint8", "int8")) == "int16"
    assert d2s.can_cast(d2s.int64, d2s.uint8) and d2s.can_cast(d2s.bool, d2s.float16)
    assert not d2s.can_cast(d2s.float32, d2s.int32) and not d2s.can_cast(d2s.int8, d2s.bool)
    s = d2s.scalar_tensor(3)
    assert s.ndim == 0 and str(s.dtype) == "float32" and float(s) == 3.0
    assert str(d2s.scalar_tensor(2, dtype=d2s.int64).dtype) == "int64"


def test_same_answers_as_torch():
    torch = pytest.importorskip("torch")
    for dtype, other, want in RESULT_TYPES:
        assert str(torch.result_type(torch.ones(2, dtype=getattr(torch, dtype)), _operand(torch, other))) == \
            f"torch.{want}"
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]  # (no bfloat16 in numpy)
    for a in names:
        for b in names:
            assert str(d2s.promote_types(a, b)) == str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:]
            assert d2s.can_cast(a, b) == torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)
