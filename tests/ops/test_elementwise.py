"""Arithmetic, division, clamp, logic and the composite element-wise functions
(d2s/ops/elementwise.py, and lerp/addcmul/addcdiv/isclose in pointwise.py) against PyTorch:
values, dtypes and float64 gradients on ordinary and edge inputs (NaN, inf, signed zeros,
negative operands of remainder and fmod, ties of clamp and maximum), then converted, with
dynamic dims, saved and exported (tests/torch_parity.py). Integer division by zero raises
PyTorch's ZeroDivisionError eagerly, inside programs and in the native backend."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(5)
X = R.standard_normal((3, 4))
Y = R.standard_normal((3, 4))
V = R.standard_normal(4)
EDGE = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 3.0, -7.25, 2.0, 0.5, -2.0])
EDGE_B = np.array([2.0, -2.0, 3.0, -2.0, 2.0, np.inf, -np.inf, -3.0, 2.0, 0.0, -0.0, -2.0])
INTS = np.array([[7, -7, 0, 5, -3, 12], [-12, 1, 2, -1, 9, -9]], "int64")
DIVS = np.array([2, 3, -4, -5, 7, -2], "int64")
TIES = np.array([[0.5, -0.5, 1.0, 2.0], [0.0, -1.0, 0.5, 3.0]])  # values equal to the bounds below
LO, HI = np.array([0.5, -1.0, 0.0, 2.0]), np.array([[1.0], [0.0]])

TORCH_CASES = [
    # arithmetic keywords and aliases
    Case("add_sub_alpha", lambda t, x, y: (t.add(x, y, alpha=2.5), t.sub(x, y, alpha=-1), x.add(y, alpha=0.5),
                                           x.subtract(y), t.multiply(x, y), t.negative(x), t.absolute(x)), X, Y),
    Case("div_rounding_modes", lambda t, x, y: (t.div(x, y), t.div(x, y, rounding_mode="trunc"),
                                                t.div(x, y, rounding_mode="floor"), t.true_divide(x, y),
                                                x.divide(y), t.floor_divide(x, y)), X * 5, Y, grad=False),
    Case("div_int_rounding", lambda t, a, b: (t.div(a, b), t.div(a, b, rounding_mode="trunc"),
                                              t.div(a, b, rounding_mode="floor"), a // b, a % b, t.fmod(a, b),
                                              t.remainder(a, b), t.floor_divide(a, 3), t.remainder(-7, b)),
         INTS, DIVS),
    Case("remainder_fmod_edges", lambda t, a, b: (t.remainder(a, b), t.fmod(a, b), a % b, a // b),
         EDGE, EDGE_B, grad=False),
    Case("remainder_fmod_grad", lambda t, a, b: (t.remainder(a, b), t.fmod(a, b)), X * 3, np.full(4, 0.7)),
    Case("pow_forms", lambda t, x, e: (t.pow(x, 2), t.pow(2.0, x), t.pow(x.abs(), e), x ** 3, 2 ** x,
                                       t.float_power(x, 2), x.square(), t.reciprocal(x), t.rsqrt(x.abs() + 0.5)),
         X, Y),
    # at a zero base or exponent: PyTorch's gradient is 0 where the exponent is 0 (x ** 0 in a
    # polynomial feature), -inf or NaN where 0 ** b < 0 or the base is negative; a Python-number
    # base's log is taken in double precision (float32 before: 1e-8 off in float64 gradients)
    Case("pow_zero_and_scalar_base_grads", lambda t, x, e: (x ** 0, x ** 0.0, x ** e, 0.1 ** x, (-2.0) ** x,
                                                            0.0 ** x, 3.3 ** e, t.pow(x.abs(), 2.5)),
         np.array([0.0, 0.5, -2.0, 2.0, 0.0, -1.5]), np.array([0.0, -1.0, 2.0, 0.0, -1.0, 3.0]),
         rtol=1e-13, atol=1e-13),
    # a mask's gradient selects, it does not multiply: where relu, clamp or maximum pass nothing,
    # an inf upstream gradient (sqrt or log at 0: pairwise distances' clamp(min=0).sqrt()) gives
    # 0, not NaN; maximum/minimum give both operands the gradient where one is NaN
    Case("masked_grads_of_inf_upstream", lambda t, x: (t.relu(x).sqrt(), x.clamp(min=0).sqrt(),
                                                        x.clamp(0, 1).log(), t.maximum(x, t.zeros_like(x)).sqrt(),
                                                        t.minimum(-x, t.zeros_like(x)).neg().log()),
         np.array([-1.0, 0.0, 0.5, 2.0, -2.0, 0.25, 3.0])),
    Case("maximum_minimum_nan_grads", lambda t, x, y: (t.maximum(x, y), t.minimum(x, y)),
         np.array([1.0, np.nan, 2.0, np.nan, 0.5]), np.array([1.0, 3.0, np.nan, np.nan, 0.7])),
    # the divisor's gradient as -g ((a / b) / b): b * b overflowed (zero gradient) or underflowed
    Case("div_grad_extreme_divisors", lambda t, a, b: a / b,
         np.array([1.0, 3.0, 1e-30, 2.0, -5.0], np.float32), np.array([1e20, 1e-21, 1e-30, 3.0, -4e19], np.float32),
         rtol=1e-6, atol=0),
    Case("pow_int", lambda t, a: (t.pow(a, 2), a ** 3, t.square(a), t.float_power(a, 2), t.reciprocal(a)),
         np.array([1, -2, 3, 4], "int32")),
    Case("maximum_minimum_ties", lambda t, x, y: (t.maximum(x, y), t.minimum(x, y), t.fmax(x, y), t.fmin(x, y)),
         TIES, TIES[::-1].copy()),
    Case("fmax_fmin_nan", lambda t, x, y: (t.fmax(x, y), t.fmin(x, y), t.maximum(x, y), t.minimum(x, y)),
         EDGE, EDGE_B, grad=False),
    # clamp: numbers, tensors, either bound None; at a bound the gradient goes to the input
    Case("clamp_scalars", lambda t, x: (t.clamp(x, -0.5, 1.0), t.clamp(x, min=0.5), x.clamp(max=0.0),
                                        t.clip(x, -1, 1), x.clamp_min(0.5), x.clamp_max(-0.5)), TIES),
    Case("clamp_tensors", lambda t, x, lo, hi: (t.clamp(x, lo, hi), t.clamp(x, min=lo), t.clamp(x, max=hi),
                                                x.clamp(lo, lo + 1.0), t.clamp_min(x, lo), x.clamp_max(hi)),
         TIES, LO, HI),
    Case("clamp_min_above_max", lambda t, x, lo, hi: t.clamp(x, lo, hi), X, np.full(4, 0.5), np.full((3, 1), -0.5)),
    Case("clamp_nan", lambda t, x, lo: (t.clamp(x, -1.0, 1.0), t.clamp(x, min=lo)),
         EDGE, np.where(np.arange(12) % 3 == 0, np.nan, 0.25), grad=False),
    Case("clamp_int", lambda t, a: (t.clamp(a, -2, 3), t.clamp(a, min=2.5), a.clamp(max=0)), INTS),
    # logic: any dtype, truth values; bitwise on integers and bools
    Case("logical_any_dtype", lambda t, a, x: (t.logical_and(a, x), t.logical_or(a, x > 1), t.logical_xor(x, a),
                                               t.logical_not(a), x.logical_not(), a.logical_and(x > 0)),
         INTS[0, :4].copy(), EDGE[:4].copy()),
    Case("bitwise", lambda t, a, b: (t.bitwise_and(a, b), t.bitwise_or(a, b), a.bitwise_xor(b), t.bitwise_not(a),
                                     ~a, a & b, a | 3, t.bitwise_and(a > 0, b > 0), t.bitwise_not(a > 0)),
         INTS, np.flip(INTS).copy()),
    # compositions
    Case("lerp", lambda t, a, b, w: (t.lerp(a, b, 0.3), t.lerp(a, b, 0.75), a.lerp(b, w)), X, Y,
         R.uniform(-1, 2, (3, 4))),
    Case("addcmul_addcdiv", lambda t, x, a, b: (t.addcmul(x, a, b), t.addcmul(x, a, b, value=-0.5),
                                                x.addcdiv(a, b.abs() + 1, value=2), t.addcdiv(x, a, b.abs() + 1)),
         X, Y, V),
    Case("isclose_allclose", lambda t, a, b: (t.isclose(a, b), t.isclose(a, b, rtol=0.1, atol=0.5),
                                              t.isclose(a, b, equal_nan=True), a.isclose(a)),
         EDGE, np.where(np.isnan(EDGE), np.nan, EDGE + 1e-6), static="returns bools; the eager results suffice",
         grad=False),
    Case("isclose_int", lambda t, a, b: (t.isclose(a, b), t.isclose(a, b, atol=2)), INTS, INTS + 1, grad=False),
    Case("where_and_comparisons", lambda t, x, y: (t.where(x > y, x, y), t.where(x > 0, x, 0.0), x == y, x != y,
                                                   x <= y, t.eq(x, y), t.ne(x, 0)), TIES, TIES[::-1].copy()),
]

# comparisons as methods and under PyTorch's other spellings (the MNIST example's pred.eq(target))
_C1, _C2 = np.array([1, 2, 3, 4]), np.array([1, 0, 3, 5])
TORCH_CASES += [
    Case("comparison_methods", lambda t, a, b: (a.eq(b), a.ne(b), a.lt(b), a.le(b), a.gt(b), a.ge(b), a.eq(2),
                                                  a.not_equal(b), a.greater(b), a.greater_equal(b), a.less(b),
                                                  a.less_equal(b)), _C1, _C2),
    Case("comparison_spellings", lambda t, a, b: (t.greater(a, b), t.less_equal(a, 2), t.not_equal(a, b)), _C1, _C2),
    Case("equal", lambda t, a, b: (t.equal(a, b), t.equal(a, a.clone()), a.equal(a[:2]), t.equal(a, a * 1.0)), _C1, _C2,
         static="torch.equal returns a Python bool read from the values: eager only"),
]

# a 0-d tensor operand of the same kind does not widen the result (int32 & tensor(-4) is int32,
# uint8 | tensor(-4) wraps to uint8), as for the arithmetic operators
TORCH_CASES += [
    Case("bitwise_zero_d_tensor_keeps_dtype", lambda t, a, u, s, b: (a & s, a | s, t.bitwise_xor(a, s), u | s, s & u,
                                                                     u ^ b, t.bitwise_and(b, s)),
         np.array([-3, 1, 6], np.int32), np.array([3, 1, 200], np.uint8), np.array(-4), np.array(True)),
]

# an integer tensor clamped with a float bound computes in float32, where an int bound keeps its
# value (not wrapped into uint8): max wins where min > max
TORCH_CASES += [
    Case("clamp_int_tensor_float_and_int_bounds", lambda t, u, i: (u.clamp(2.0, -3), u.clamp(-1.5, 300),
                                                                     t.clamp(i, 0.5, -3), u.clamp(max=-2, min=0.5)),
         np.array([2, 2, 0, 200], np.uint8), np.array([2, -7, 0], np.int32)),
]

# an integer base to a negative integer tensor exponent: 1 for base 1, +-1 for base -1, else 0
TORCH_CASES += [
    Case("pow_int_negative_tensor_exponent", lambda t, x, e, e32, u: (t.pow(x, e), x ** e, 2 ** e, (-1) ** e, t.pow(x, e32),
                                                                       u ** e, x ** t.tensor(-2), t.pow(x[:1], e)),
         np.array([-3, -2, -1, 0, 1, 2, 3]), np.array([-1, -2, -3, -1, 2, 3, -4]),
         np.array([-1, -2, -3, -1, 2, 3, -4], np.int32), np.array([0, 1, 2, 3, 4, 5, 6], np.uint8)),
    # an integer division of no elements by zero divides nothing: an empty result, no error
    Case("int_division_of_empty_by_zero", lambda t, e, z: (t.div(e, z, rounding_mode="floor"), t.div(e, z, rounding_mode="trunc"),
                                                           e // 0, e % z, t.fmod(e, 0), t.remainder(e, z)),
         np.zeros((0, 3), np.int64), np.array(0, np.uint8)),
    # a number divided by a tensor is PyTorch's reciprocal(x) * number: bit for bit
    Case("number_divided_by_tensor", lambda t, x, i: (-5 / x, 2.5 / x, 1 / x, 7 / i, 0.1 / i, True / x),
         (np.random.default_rng(3).standard_normal(200) * 3).astype(np.float32), np.arange(1, 41), rtol=0, atol=0),
    # PyTorch's pow special-cases the exponents 3, -0.5 and -2 (x * x * x, rsqrt, 1 / (x * x)): bit for bit
    Case("pow_special_cased_exponents", lambda t, x: (x ** 3, t.pow(x, 3.0), x.abs() ** -0.5, x ** -2, t.pow(x, -0.5),
                                                      0.044715 * t.pow(x, 3), x ** 2, x ** -1),
         (np.random.default_rng(4).standard_normal(300) * 3).astype(np.float32), rtol=0, atol=0),
    # float32 lerp and addcmul round as PyTorch's fused multiply-adds: bit for bit
    Case("lerp_addcmul_float32_bits", lambda t, s, a, w: (t.lerp(s, a, 0.3), s.lerp(a, 0.7), t.lerp(s, a, w), t.lerp(s, a, -0.2),
                                                          t.addcmul(s, a, w, value=0.3), s.addcmul(a, a), t.addcmul(s, a, w, value=-2)),
         *(np.random.default_rng(k).standard_normal(301).astype(np.float32) for k in (10, 11)),
         np.random.default_rng(12).random(301).astype(np.float32), rtol=0, atol=0),
    Case("pow_bool_tensor_bool_exponent", lambda t, b: (b ** True, b ** False, t.pow(b, True), t.pow(b, 2), b ** 0.5),
         np.array([True, False, True])),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_allclose_returns_a_python_bool():
    a = d2s.tensor(X)
    assert d2s.allclose(a, a + 1e-9) is True and d2s.allclose(a, a + 1) is False
    assert a.allclose(a) is True
    nan = d2s.tensor([np.nan])
    assert d2s.allclose(nan, nan) is False and d2s.allclose(nan, nan, equal_nan=True) is True


def test_allclose_inside_a_program_is_a_bool_tensor_the_code_can_branch_on():
    @d2s.jit.to_static
    def f(x, y):
        if d2s.allclose(x, y):
            return x * 0
        return x - y

    x = d2s.tensor(X)
    np.testing.assert_array_equal(f(x, x).numpy(), np.zeros((3, 4)))
    np.testing.assert_allclose(f(x, x + 1).numpy(), -np.ones((3, 4)))


# ------------------------------------------------------------------ integer division by zero
@pytest.mark.parametrize("fn", [lambda a, b: a // b, lambda a, b: a % b, lambda a, b: d2s.fmod(a, b),
                                lambda a, b: d2s.div(a, b, rounding_mode="trunc"),
                                lambda a, b: d2s.div(a, b, rounding_mode="floor"), lambda a, b: d2s.remainder(7, b)],
                         ids=["floordiv", "mod", "fmod", "trunc", "floor", "scalar_mod"])
def test_integer_division_by_zero_raises_as_pytorch(fn):
    a, b = d2s.tensor([7, -7, 3]), d2s.tensor([2, 0, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, b)
    with pytest.raises(ZeroDivisionError):  # both catch it
        fn(a, b)
    # a program: the same error when it runs, never a number
    static = d2s.jit.to_static(fn)
    np.testing.assert_array_equal(static(a, d2s.tensor([2, 3, 1])).numpy(), fn(a, d2s.tensor([2, 3, 1])).numpy())
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        static(a, b)


def test_integer_division_by_a_zero_scalar_raises():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        d2s.tensor([1, 2]) // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        d2s.tensor([1, 2]) % 0
    # float division by zero is IEEE's, as in PyTorch
    with np.errstate(all="ignore"):
        out = (d2s.tensor([1.0, -1.0, 0.0]) // 0).numpy()
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])


def test_saved_program_raises_on_integer_division_by_zero(tmp_path):
    import d2s_runtime
    fn = d2s.jit.to_static(lambda a, b: a // b + a % b)
    spec = [d2s.jit.InputSpec([None], "int32"), d2s.jit.InputSpec([None], "int32")]
    d2s.jit.save(fn, str(tmp_path / "m"), input_spec=spec)
    model = d2s_runtime.load(str(tmp_path / "m"))
    a = np.array([7, -7], "int32")
    np.testing.assert_array_equal(model(a, np.array([2, 3], "int32")), np.array([4, -1], "int32"))  # 7 // 2 + 7 % 2, -7 // 3 + -7 % 3
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        model(a, np.array([2, 0], "int32"))


def test_onnx_integer_floor_division_near_int32_min_equals_d2s(tmp_path):
    """Issue 28 item 7: ``(a - a mod b) / b`` overflowed near INT32_MIN, and onnxruntime's C
    division traps (SIGFPE) on INT32_MIN / -1; the export divides overflow-free."""
    ort = pytest.importorskip("onnxruntime")
    info = np.iinfo(np.int32)
    a = np.array([info.min, info.min, info.min + 1, info.max, info.max, -7, 7, -1, 0, info.min, -8], "int32")
    b = np.array([-1, 3, -3, -1, 2, 2, -2, 5, 5, 2, -3], "int32")
    fn = d2s.jit.to_static(lambda a, b: (a // b, a % b, d2s.fmod(a, b), d2s.div(a, b, rounding_mode="trunc")))
    spec = [d2s.jit.InputSpec([None], "int32", name="a"), d2s.jit.InputSpec([None], "int32", name="b")]
    path = str(tmp_path / "m.onnx")
    d2s.onnx.export(fn, path, spec)
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"a": a, "b": b})
    with np.errstate(all="ignore"):
        want = fn(d2s.tensor(a), d2s.tensor(b))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w.numpy())
    assert got[0][1] == info.min // 3 and got[0][0] == info.min  # -INT32_MIN wraps, as in d2s


# ------------------------------------------------------------------ errors PyTorch raises
@pytest.mark.parametrize("call,msg", [
    (lambda: d2s.clamp(d2s.tensor([1.0])), "at least one of min and max"),
    (lambda: d2s.div(d2s.tensor([1.0]), 2, rounding_mode="round"), "rounding_mode"),
    (lambda: d2s.tensor([True]) - d2s.tensor([False]), "bool"),
    (lambda: -d2s.tensor([True]) if False else d2s.neg(d2s.tensor([True])), "bool"),
    (lambda: d2s.bitwise_and(d2s.tensor([1.0]), d2s.tensor([1.0])), "integer and bool"),
    (lambda: d2s.addcdiv(d2s.tensor([1.0]), d2s.tensor([1]), d2s.tensor([2])), "integer division"),
    (lambda: d2s.isclose(d2s.tensor([1.0]), d2s.tensor([1]), ), "same dtype"),
])
def test_pytorch_errors(call, msg):
    with pytest.raises((TypeError, ValueError, RuntimeError), match=msg):
        call()


def test_strict_device_eager_values(device):
    """The kernels use only the array namespace (tests/strict_device.py refuses numpy calls)."""
    for case in TORCH_CASES:
        if case.name in ("isclose_allclose",):
            continue
        want = torch_parity.reference("ops.test_elementwise", case.name)
        got = torch_parity.run(d2s, case)
        torch_parity.compare(got, want, case, f"d2s eager on {device}")


def _minus_one(a):
    return a - 1


def _one_minus(a):
    return 1 - a


def _minus_true(a):
    return a - True


def _minus_mask(a):
    return a - (a > 0)


@pytest.mark.parametrize("fn, dtype", [(_minus_one, "bool"), (_one_minus, "bool"), (_minus_true, "int16"),
                                       (_minus_true, "float32"), (_minus_mask, "uint8"), (_minus_one, "bool")],
                         ids=["mask_minus_1", "1_minus_mask", "int_minus_True", "float_minus_True",
                              "uint8_minus_mask", "mask_minus_1_again"])
def test_subtraction_with_a_bool_operand_is_refused_as_in_pytorch(fn, dtype):
    # PyTorch refuses `-` with any bool operand; d2s computed an answer (mask - 1 gave int64)
    a = d2s.tensor(np.array([1, 0, 2]).astype(dtype))
    with pytest.raises((TypeError, ValueError, RuntimeError), match="bool"):
        fn(a)
    with pytest.raises((TypeError, ValueError, RuntimeError), match="bool"):
        d2s.jit.to_static(fn)(a)


def test_clamp_gradient_outside_the_bounds_is_plus_zero_as_in_pytorch():
    # PyTorch's clamp_backward selects (where(mask, grad, 0)): a negative or infinite gradient
    # outside the bounds gives +0.0; d2s multiplied by the mask (-0.0, NaN), and the converted
    # program's backward, which selects, differed from eager in the sign of those zeros
    x = d2s.tensor([3.0, -3.0, 0.5, 5.0], requires_grad=True)
    y = x.clamp(-2.0, 2.0)
    y.backward(d2s.tensor([-1.5, -1.5, -1.5, float("inf")]))
    g = x.grad.numpy()
    assert g.tolist() == [0.0, 0.0, -1.5, 0.0] and not np.signbit(g[[0, 1, 3]]).any()
