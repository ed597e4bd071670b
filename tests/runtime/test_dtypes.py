"""Type promotion as PyTorch's ``torch.result_type`` (d2s_runtime.dtypes: ``result_type``,
``operand_result_type``, ``scalar_result``): over every pair of bool, int32, int64, float32 and
float64 operands, each a dimensioned tensor, a 0-d tensor or a Python number, the result of
``+`` (and of ``where``, ``maximum`` and ``==``) has PyTorch's dtype and values eagerly, in the
converted program (dims static and dynamic), in the saved program and in ONNX. A 0-d tensor
does not widen a dimensioned tensor of its category (float32 * 0-d float64 is float32; int32 +
0-d int64 is int32) but lifts it to a higher one (int32 * 0-d float64 is float64); a Python
number is weaker still (int tensor * 2.5 is float32)."""
import itertools

import numpy as np
import pytest

import d2s
import torch_parity
from d2s.static import InputSpec, build_program
from d2s_runtime.dtypes import operand_result_type, scalar_result
from torch_parity import Case

DTYPES = ("bool", "int32", "int64", "float32", "float64")
NUMBERS = (True, 3, 2.5)


def _operands():
    """One dimensioned and one 0-d array per dtype (values every dtype holds exactly)."""
    out = []
    for dt in DTYPES:
        out.append(np.array([1, 0, 1], dtype=dt) if dt == "bool" else np.array([3, -2, 5], dtype=dt))
        out.append(np.array(True if dt == "bool" else 7, dtype=dt))
    return out


def _table(t, *xs):
    """The pairs of the table: tensor with tensor, tensor with Python number (both sides)."""
    out = []
    for a, b in itertools.product(xs, xs):
        out.append(a + b)
    for a, n in itertools.product(xs, NUMBERS):
        out += [a + n, n + a]
    return tuple(out)


def _more_ops(t, *xs):
    dims = xs[::2]
    out = []
    for a, b in itertools.product(xs, dims):
        out += [t.where(b > 3, a, b), t.maximum(a, b) if a.dtype != t.bool or b.dtype != t.bool else a & b,
                a == b, a * b if a.dtype != t.bool or b.dtype != t.bool else a | b]
    for a in xs:
        out += [a * 2.5, a * 2, a * True, t.where(a > 3, a, 0.5), t.where(a > 3, 1, a)]
    return tuple(out)


def _out_of_range_ints(t, u8, i8, i16, i32):
    """Python ints outside a small integer tensor's range, as PyTorch casts them: wrapped into
    its dtype (``u8 > -1`` compares with 255, ``u8 + 300`` adds 44)."""
    out = []
    for a, ints in ((u8, (-1, 256, 300, -129, 2**31, 2**63)), (i8, (128, -129, 300, 2**40)),
                    (i16, (40000, -2**63)), (i32, (2**31, 2**32 + 5))):
        for s in ints:
            out += [a > s, a < s, a == s, a >= s, a + s, a * s, s - a, a & s, a | s, a ^ s]
    return tuple(out)


def _converted_ints(t, u8, i8, i16, i32):
    """Python ints PyTorch converts checked (where, clamp, a pow exponent: uint8 takes -255..255,
    wrapped) or wrapped (a pow base, fmod, remainder, rounded division)."""
    return (t.where(u8 > 50, u8, -3), u8.clamp(min=-1), u8.clamp(max=-3), t.where(i8 > 50, -100, i8),
            i16.clamp(-5, 7), t.fmod(u8, 300), t.remainder(u8, -1),
            t.fmod(i8, 300), t.div(u8, 300, rounding_mode="trunc"), t.div(i16, 2**31 + 3, rounding_mode="floor"),
            u8 // 300, u8 % -129, i32 % (2**32 + 7))


def _int_pow(t, u8, i8, i16, i32):
    """A Python int base is wrapped into the integer tensor's dtype, an exponent checked."""
    return (-3) ** u8, 300 ** u8, 2**31 ** i16.clamp(0, 3), u8 ** 2, i32 ** 3


def _bool_clamp(t, u8, i8, i16, i32):
    """A bool tensor clamped to int bounds is int64 (to float bounds float32), as in PyTorch."""
    b = u8 > 0
    return b.clamp(min=2), b.clamp(max=0), b.clamp(0, 1), b.clamp(min=0.5), t.clamp(b, -1, 3)


def _wrap_operands():
    return (np.array([0, 1, 200, 255], np.uint8), np.array([0, 1, -100, 127], np.int8),
            np.array([0, 1, -300, 32767], np.int16), np.array([0, 1, -5, 2**31 - 1], np.int32))


TORCH_CASES = [
    Case("out_of_range_python_ints", _out_of_range_ints, *_wrap_operands(), grad=False,
         dynamic="covered by static (the scalar is a constant either way)"),
    Case("converted_python_ints", _converted_ints, *_wrap_operands(), grad=False,
         onnx="onnxruntime has no Where kernel for uint8/int8",
         dynamic="covered by static (the scalar is a constant either way)"),
    Case("int_pow_python_ints", _int_pow, *_wrap_operands(), grad=False, onnx="ONNX's Pow has no uint8 form",
         dynamic="covered by static (the scalar is a constant either way)"),
    Case("bool_clamp_number_bounds", _bool_clamp, *_wrap_operands(), grad=False,
         dynamic="covered by static (the bounds are constants either way)"),
    Case("add_every_pair", _table, *_operands(), grad=False),
    Case("where_maximum_eq_mul", _more_ops, *_operands(), grad=False,
         dynamic="covered by add_every_pair (the same promotion rule); keeps this test fast"),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def _kind_dtype(x):
    if isinstance(x, np.ndarray):
        return str(x.dtype), x.ndim
    return {bool: "bool", int: "int64", float: "float32"}[type(x)], None


def test_the_rule_is_torch_result_type_on_every_pair():
    """``operand_result_type`` (then ``scalar_result`` for numbers) against live
    ``torch.result_type``, or the stored table of the first case (its output dtypes)."""
    ops = _operands()
    pairs = list(itertools.product(ops, ops)) + [p for a, n in itertools.product(ops, NUMBERS) for p in ((a, n), (n, a))]
    got = []
    for a, b in pairs:
        arrays = [x for x in (a, b) if isinstance(x, np.ndarray)]
        dt = operand_result_type([str(x.dtype) for x in arrays], [x.ndim for x in arrays])
        for n in (a, b):
            if not isinstance(n, np.ndarray):
                dt = scalar_result(dt, n)
        got.append(dt)
    stored = torch_parity.reference("runtime.test_dtypes", "add_every_pair")["dtypes"]
    assert got == stored
    torch = torch_parity.live_torch()
    if torch is not None:
        def tt(x):
            return torch.tensor(x) if isinstance(x, np.ndarray) else x

        want = [str(torch.result_type(tt(a), tt(b)) if isinstance(a, np.ndarray) else torch.result_type(tt(b), a))
                .replace("torch.", "") for a, b in pairs]
        assert got == want


def test_a_program_declares_the_dtype_its_kernels_compute():
    """The shape rule (what a program declares) and the kernel (what runs) agree on 0-d
    operands, so a saved program's outputs have the declared dtypes."""
    prog = build_program(lambda a, b: (a * b, b * a, a + b * 2), InputSpec([3], "float32"), InputSpec([], "float64"))
    declared = [prog.block.lookup(n).type.dtype for n in prog.outputs]
    assert declared == ["float32", "float32", "float32"]
    from d2s_runtime import Executor
    outs = Executor(prog).run(np.ones(3, "float32"), np.array(2.0))
    assert [o.dtype.name for o in outs] == declared


def test_weak_loop_counters_still_take_the_tensor_dtype():
    """A converted loop's counter (a Python int in eager code) keeps an int32 or float32 tensor's
    dtype, as before: d2s.static.weak_index."""
    @d2s.jit.to_static
    def f(x, n):
        for i in range(n):
            x = x + i
        return x

    for dt in ("int32", "float32", "float64"):
        out = f(d2s.tensor(np.array([1, 2], dt)), d2s.tensor(3))
        assert out.dtype == dt and out.numpy().tolist() == [4, 5]


def test_python_int_out_of_range_is_wrapped_into_the_tensor_dtype():
    from d2s_runtime.dtypes import wrap_int
    assert wrap_int(-1, "uint8") == 255 and wrap_int(300, "uint8") == 44 and wrap_int(128, "int8") == -128
    assert wrap_int(2**63, "int64") == -2**63 and wrap_int(5, "uint8") == 5
    u8 = d2s.tensor([0, 1, 200], dtype=d2s.uint8)
    assert (u8 > -1).tolist() == [False, False, False]  # compares with 255, as PyTorch
    assert (u8 + 300).tolist() == [44, 45, 244] and (u8 + 300).dtype == d2s.uint8


def test_python_int_beyond_64_bits_is_refused_not_compared_unwrapped():
    u8 = d2s.tensor([0, 1, 200], dtype=d2s.uint8)
    with pytest.raises(OverflowError, match="64 bits"):
        u8 > 2**64
    with pytest.raises(OverflowError, match="64 bits"):
        d2s.jit.to_static(_gt)(u8, -2**63 - 1)


def _gt(a, s):
    return a > s


def _pow(a, s):
    return a ** s


def _where_int(a, s):
    return d2s.where(a > 50, a, s)


def _clamp_max(a, s):
    return a.clamp(max=s)


@pytest.mark.parametrize("fn, dtype, s, error", [
    (_pow, "uint8", -1, "negative integer powers"),  # uint8 would wrap -1 to 255
    (_pow, "int8", -2, "negative integer powers"),
    (_where_int, "uint8", 300, "without overflow"),  # was silently 44
    (_where_int, "int8", 128, "without overflow"),
    (_clamp_max, "int8", 300, "without overflow"),
], ids=["uint8_pow_neg", "int8_pow_neg", "uint8_where_300", "int8_where_128", "int8_clamp_300"])
def test_python_int_pytorch_refuses_is_refused_eager_and_converted(fn, dtype, s, error):
    a = d2s.tensor(np.array([0, 1, 100]).astype(dtype))
    with pytest.raises((ValueError, OverflowError), match=error):
        fn(a, s)
    with pytest.raises(Exception, match=error):
        d2s.jit.to_static(fn)(a, s)


# ------------------------------------------------------------------ fill values (torch 2.13's answers)
def test_checked_fill_converts_as_pytorch_does():
    from d2s_runtime.dtypes import checked_fill
    assert checked_fill(-1, "uint8") == 255 and checked_fill(-255, "uint8") == 1
    assert checked_fill(2.7, "uint8") == 2 and checked_fill(-3.7, "int8") == -3
    assert checked_fill(True, "uint8") is True and checked_fill(2, "bool") == 2
    assert checked_fill(1e6, "float16") == float("inf") and checked_fill(-7e4, "float16") == float("-inf")
    assert checked_fill(0.1, "float32") == 0.1
    for value, dtype in ((256, "uint8"), (-256, "uint8"), (-0.5, "uint8"), (255.5, "uint8"), (float("nan"), "int32"),
                         (float("inf"), "int64"), (200, "int8"), (2 ** 31, "int32"), (2.0 ** 63, "int64"),
                         (1e300, "float32")):
        with pytest.raises(OverflowError, match="without overflow"):
            checked_fill(value, dtype)


def test_checked_values_converts_each_number():
    from d2s_runtime.dtypes import checked_values
    np.testing.assert_array_equal(checked_values([1, -1, 2.5], "uint8"), np.array([1, 255, 2], dtype="uint8"))
    np.testing.assert_array_equal(checked_values([[1.9, -1.9]], "int8"), np.array([[1, -1]], dtype="int8"))
    assert checked_values([1.5], "float32") is None
    with pytest.raises(OverflowError):
        checked_values([1, -1.0], "uint8")
