"""Creation functions against PyTorch (tests/torch_parity.py): sizes as ints, a tuple, a list or
``size=``; ``dtype=`` and PyTorch's dtype inference (fills, arange, tensor(...)); the ``*_like``
and ``Tensor.new_*`` forms; sizes read from an input (symbolic inside a program)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))
I = np.arange(12, dtype="int64").reshape(3, 4)
_NO_ARGS = "no tensor argument: nothing to save or export"


def _const(name, fn, **kw):
    """A case of a creation call with no tensor input."""
    return Case(name, fn, saved=_NO_ARGS, onnx=_NO_ARGS, dynamic=_NO_ARGS, **kw)


TORCH_CASES = [
    _const("zeros_ints", lambda t: t.zeros(2, 3)),
    _const("zeros_tuple", lambda t: t.zeros((2, 3))),
    _const("zeros_list", lambda t: t.zeros([2, 3])),
    _const("zeros_size_kw", lambda t: t.zeros(size=(2, 3))),
    _const("zeros_dtype", lambda t: t.zeros(2, dtype=t.int32)),
    _const("zeros_scalar", lambda t: t.zeros(())),
    _const("ones_dtype", lambda t: (t.ones(2, 3, dtype=t.float64), t.ones((2,), dtype=t.long), t.ones(2, dtype=t.bool))),
    _const("full_kinds", lambda t: (t.full((2, 2), 7), t.full((2,), 2.5), t.full((3,), True), t.full([2], 1, dtype=t.float64))),
    _const("empty_filled", lambda t: (t.empty(2, 3).fill_(1.5), t.empty((2,), dtype=t.int64).fill_(3), t.empty(size=(1,)).fill_(0))),
    Case("zeros_batch", lambda t, x: t.zeros(x.shape[0], 2, dtype=t.float64) + x.sum(), X),
    Case("ones_size", lambda t, x: t.ones(x.size(), dtype=x.dtype) * x, X),
    Case("full_batch", lambda t, x: t.full((x.size(0), 2), 3.0), X),
    Case("zeros_like", lambda t, x: (t.zeros_like(x), t.zeros_like(x, dtype=t.int32), t.ones_like(x),
                                     t.full_like(x, 7), t.full_like(x, 2.5, dtype=t.float64)), X),
    Case("empty_like", lambda t, x: (t.empty_like(x).fill_(2.0), t.empty_like(x, dtype=t.int64).fill_(1)), X),
    Case("like_int", lambda t, x: (t.zeros_like(x), t.ones_like(x, dtype=t.float32), t.full_like(x, 3)), I),
    Case("new_zeros", lambda t, x: (x.new_zeros(2, 3), x.new_zeros((2,)), x.new_ones([3]), x.new_full((2,), 4.0),
                                    x.new_empty(2).fill_(1), x.new_tensor([1, 2]), x.new_zeros(2, dtype=t.int64)), X),
    Case("new_int", lambda t, x: (x.new_zeros(2), x.new_full((2, 2), 5), x.new_tensor([1.7, 2.2]), x.new_ones(1)), I),
    Case("new_batch", lambda t, x: x.new_zeros(x.size(0), 5), X),
    # ranges
    _const("arange_int", lambda t: (t.arange(5), t.arange(1, 7, 2), t.arange(0, -3, -1), t.arange(start=2, end=5))),
    _const("arange_float", lambda t: (t.arange(0, 1, 0.1), t.arange(5.0), t.arange(0.5, 3), t.arange(1, 2, 0.25)),
           rtol=1e-6, atol=1e-7),
    _const("arange_dtype", lambda t: (t.arange(4, dtype=t.float64), t.arange(0, 1, 0.3, dtype=t.float64),
                                      t.arange(0.5, 4.5, dtype=t.int64))),
    Case("arange_batch", lambda t, x: t.arange(x.shape[0]) * 2, X),
    Case("arange_float_batch", lambda t, x: t.arange(x.shape[0], dtype=t.float32) / 2.0, X),
    _const("linspace", lambda t: (t.linspace(0, 1, 5), t.linspace(-2, 3, 7, dtype=t.float64), t.linspace(1, 1, 1),
                                  t.linspace(0, 10, 5, dtype=t.int64), t.linspace(3, -3, steps=4))),
    _const("eye", lambda t: (t.eye(3), t.eye(2, 4), t.eye(3, dtype=t.int64), t.eye(n=2, m=1))),
    # tensor(...) and the legacy constructor: dtype inference
    _const("tensor_inference", lambda t: (t.tensor([True, False]), t.tensor([1, 2.5]), t.tensor([[1, 2], [3, 4]]),
                                          t.tensor(3), t.tensor(2.5), t.tensor([True, 1]), t.tensor([]))),
    _const("tensor_of_tensors", lambda t: (t.tensor([t.tensor(1.0), t.tensor(2.0)]),
                                           t.tensor([t.tensor([1.0]), t.tensor([2.0])]),
                                           t.tensor([t.tensor(1, dtype=t.int32), 2]),
                                           t.tensor([t.tensor(1.0, dtype=t.float64), 2]))),
    _const("tensor_dtype", lambda t: (t.tensor([1, 2], dtype=t.float64), t.tensor(1.7, dtype=t.int32),
                                      t.tensor([0, 3], dtype=t.bool))),
    _const("legacy_constructor", lambda t: (t.Tensor([1, 2]), t.Tensor([[1.5], [2]]), t.Tensor(2, 3).shape,
                                            t.Tensor().shape, t.LongTensor([1, 2]), t.FloatTensor([3]))),
    _const("as_tensor", lambda t: (t.as_tensor([1, 2]), t.as_tensor(np.arange(3.0)), t.as_tensor([1.5], dtype=t.float64),
                                   t.from_numpy(np.arange(4, dtype="int32")))),
    Case("as_tensor_of_tensor", lambda t, x: t.as_tensor(x) * 2.0, X),
    Case("tensor_of_sizes", lambda t, x: t.tensor([x.shape[0], x.shape[1]]) + 1, X),
    # fill values PyTorch converts to small integer dtypes: uint8 takes -1..-255 wrapped, floats are truncated
    Case("fill_wraps_uint8", lambda t, x, m: (t.full_like(x, -1), x.masked_fill(m, -1), x.clone().fill_(-255),
                                              t.full((2,), -1, dtype=t.uint8), t.full_like(x, 2.7),
                                              x.masked_fill(m, 255), x.clone().fill_(True)),
         np.array([1, 2, 3], dtype="uint8"), np.array([True, False, True])),
    Case("fill_int8_and_float16", lambda t, x, h: (t.full_like(x, -128), x.clone().fill_(126.9), t.full_like(x, -3.7),
                                                   t.full_like(h, 1e6), h.clone().fill_(-70000.0), t.full_like(h, 65504)),
         np.array([1, -2], dtype="int8"), np.array([0.5], dtype="float16")),
    _const("tensor_small_int_dtypes", lambda t: (t.tensor([1, -1, 2.5], dtype=t.uint8), t.tensor(-255, dtype=t.uint8),
                                                 t.tensor([[1.9, -1.9]], dtype=t.int8), t.tensor([-128, 127], dtype=t.int8))),
    _const("requires_grad", lambda t: (t.zeros(2, requires_grad=True).requires_grad, t.ones(2, requires_grad=True) * 2,
                                       t.arange(3.0, requires_grad=True).requires_grad)),
    _const("tril_triu_indices", lambda t: (t.tril_indices(3, 4), t.tril_indices(4, 3, -1), t.triu_indices(3, 4, offset=1),
                                           t.triu_indices(3, 3, 5), t.tril_indices(0, 3), t.triu_indices(3, 3, dtype=t.int32))),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(4.0)
    t = d2s.from_numpy(a)
    a[0] = 10.0
    assert t[0].item() == 10.0
    t.add_(1.0)
    np.testing.assert_array_equal(a, [11.0, 2.0, 3.0, 4.0])
    assert d2s.as_tensor(a).numpy() is a or np.shares_memory(d2s.as_tensor(a).numpy(), a)
    assert not np.shares_memory(d2s.tensor(a).numpy(), a)  # d2s.tensor copies, as torch.tensor


@pytest.mark.parametrize("bad", [np.arange(3, dtype="uint32"), np.ones(2, dtype="complex64"), np.array(["a"])])
def test_unsupported_numpy_dtypes_are_refused_at_the_door(bad):
    with pytest.raises(TypeError, match="not supported"):
        d2s.from_numpy(bad)
    with pytest.raises(TypeError):
        d2s.tensor(bad)


def test_tensor_of_multi_element_tensors_is_refused_as_torch():
    with pytest.raises(ValueError, match="one element tensors"):
        d2s.tensor([d2s.ones(2), d2s.ones(2)])
    f = d2s.jit.to_static(lambda x: d2s.tensor([x, x]), input_spec=[d2s.jit.InputSpec([None])])
    with pytest.raises(ValueError, match="one element tensors"):
        f(d2s.ones(2))


def test_out_keyword_is_refused_with_what_to_do():
    with pytest.raises(TypeError, match="out="):
        d2s.zeros(2, out=d2s.zeros(2))


@pytest.mark.parametrize("call", [lambda: d2s.arange(0, 5, 0), lambda: d2s.arange(5, 0), lambda: d2s.zeros(-1)])
def test_bad_ranges_and_sizes_raise(call):
    with pytest.raises(ValueError):
        call()


def test_default_dtype_follows_set_default_dtype():
    prev = d2s.get_default_dtype()
    try:
        d2s.set_default_dtype(d2s.float64)
        assert d2s.get_default_dtype() == d2s.float64
        for t in (d2s.tensor(1.5), d2s.tensor([1, 2.5]), d2s.zeros(2), d2s.ones(1), d2s.empty(1), d2s.rand(2),
                  d2s.randn(2), d2s.arange(0.5, 2), d2s.linspace(0, 1, 3), d2s.eye(2), d2s.full((1,), 0.5),
                  d2s.Tensor([1, 2])):
            assert t.dtype == d2s.float64
        assert d2s.tensor([1, 2]).dtype == d2s.int64
        with pytest.raises(TypeError):
            d2s.set_default_dtype(d2s.int64)
    finally:
        d2s.set_default_dtype(prev)
    assert d2s.zeros(1).dtype == d2s.float32


def test_creation_on_a_missing_device_says_which():
    try:
        import cupy  # noqa: F401
        pytest.skip("cupy is installed: the GPU tests cover device=")
    except ImportError:
        pass
    with pytest.raises(RuntimeError, match="cupy"):
        d2s.zeros(2, device="cuda")


U8 = np.array([1, 2, 3], dtype="uint8")


@pytest.mark.parametrize("fill", [
    lambda t, x: t.full_like(x, 256), lambda t, x: t.full_like(x, -256), lambda t, x: x.clone().fill_(-0.5),
    lambda t, x: x.masked_fill(x > 1, 255.5), lambda t, x: t.full_like(x, float("nan")),
    lambda t, x: x.clone().fill_(float("inf")), lambda t, x: t.full((2,), 200, dtype=t.int8),
    lambda t, x: t.full_like(x.to(t.int32), 2 ** 31), lambda t, x: t.full_like(x.to(t.float32), 1e300),
    lambda t, x: _set(x, 0, 256), lambda t, x: _set(x.to(t.int8), 0, 127.5),
    lambda t, x: x + t.tensor([1, 127.5], dtype=t.int8)[1], lambda t, x: x + t.tensor([300.0], dtype=t.uint8),
], ids=["256", "-256", "-0.5", "255.5", "nan", "inf", "int8_200", "int32_2**31", "float32_1e300", "setitem_256",
        "setitem_int8_127.5", "tensor_int8_127.5", "tensor_uint8_300.0"])
def test_a_fill_value_pytorch_refuses_raises_eagerly_and_converted(fill):
    # PyTorch raises "value cannot be converted to type uint8_t without overflow"; numpy would
    # have wrapped or turned it into garbage
    with pytest.raises(OverflowError, match="without overflow"):
        fill(d2s, d2s.tensor(U8))
    with pytest.raises(OverflowError, match="without overflow"):
        d2s.jit.to_static(lambda x: fill(d2s, x) + 0)(d2s.tensor(U8))


def _set(x, i, v):
    y = x.clone()
    y[i] = v
    return y
