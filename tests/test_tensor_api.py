"""The public contract of API.md §1 (tensors), checked the way a user would use it: every name and
signature there against numpy results, hand-derived values or PyTorch-like expectations."""
import math

import numpy as np
import pytest

import d2s

from api_helpers import close


RNG = np.random.default_rng(0)
A = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)


class TestTensorCreation:
    @pytest.mark.parametrize("data, dtype", [(1.5, "float32"), ([1.0, 2.0], "float32"), (3, "int64"),
                                             ([1, 2], "int64"), (True, "bool"), ([True, False], "bool"),
                                             ([1, 2.5], "float32")])
    def test_python_values_default_dtypes(self, data, dtype):
        t = d2s.tensor(data)
        assert t.dtype == dtype and str(t.dtype) == dtype
        assert t.numpy().dtype == np.dtype(dtype)

    @pytest.mark.parametrize("np_dtype", [np.float64, np.float32, np.int32, np.int64, np.bool_])
    def test_numpy_arrays_keep_their_dtype(self, np_dtype):
        a = np.ones((2, 3), np_dtype)
        t = d2s.tensor(a)
        assert t.dtype == np.dtype(np_dtype).name and t.shape == (2, 3)
        np.testing.assert_array_equal(t.numpy(), a)

    @pytest.mark.parametrize("name", ["float32", "float64", "int32", "int64", "bool"])
    def test_dtype_objects_and_strings_are_interchangeable(self, name):
        dt = getattr(d2s, name)
        assert dt == name
        for spelling in (dt, name):
            assert d2s.tensor([1, 0], dtype=spelling).numpy().dtype == np.dtype(name)
            assert d2s.zeros(2, dtype=spelling).dtype == dt
            assert d2s.cast(d2s.tensor([1.0, 0.0]), spelling).dtype == name
            assert d2s.tensor([1.0, 0.0]).cast(spelling).numpy().dtype == np.dtype(name)

    def test_creation_functions(self):
        assert d2s.zeros(2, 3).shape == (2, 3) and d2s.zeros((2, 3)).dtype == "float32"
        close(d2s.ones([2]), np.ones(2))
        assert d2s.full((2,), 3).dtype == "int64" and d2s.full((2,), 3.0).dtype == "float32"
        close(d2s.full((2, 2), 7.0), np.full((2, 2), 7.0))
        t = d2s.tensor(A)
        assert d2s.zeros_like(t).dtype == "float32" and d2s.zeros_like(t).shape == (2, 3)
        assert d2s.ones_like(t, dtype="int64").dtype == "int64"
        close(d2s.full_like(t, 2.5), np.full((2, 3), 2.5))
        np.testing.assert_array_equal(d2s.arange(5).numpy(), np.arange(5))
        assert d2s.arange(5).dtype == "int64" and d2s.arange(0.0, 1.0, 0.25).dtype == "float32"
        np.testing.assert_array_equal(d2s.arange(1, 7, 2).numpy(), [1, 3, 5])
        close(d2s.linspace(0, 1, 5), np.linspace(0, 1, 5))
        close(d2s.eye(2, 3), np.eye(2, 3))
        close(d2s.eye(3), np.eye(3))

    def test_random_creation_is_repeatable_with_manual_seed(self):
        for fn in (lambda: d2s.rand(3, 2), lambda: d2s.randn(3, 2), lambda: d2s.randint(0, 5, (3, 2))):
            d2s.manual_seed(7)
            a = fn().numpy()
            d2s.manual_seed(7)
            b = fn().numpy()
            assert a.shape == (3, 2)
            np.testing.assert_array_equal(a, b)
        assert d2s.rand(4).dtype == "float32" and d2s.randn(4).dtype == "float32"
        r = d2s.randint(3, 5, (200,)).numpy()
        assert r.dtype == np.int64 and r.min() >= 3 and r.max() <= 4

    def test_tensor_class(self):
        assert isinstance(d2s.tensor(1.0), d2s.Tensor)
        assert isinstance(d2s.ones(2) + 1, d2s.Tensor)


class TestTensorAttributes:
    def test_attributes(self):
        t = d2s.tensor(A)
        assert t.shape == (2, 3) and isinstance(t.shape, tuple) and all(type(d) is int for d in t.shape)
        assert t.ndim == 2 and t.device == "cpu" and len(t) == 2
        assert isinstance(t.numpy(), np.ndarray)
        assert t.tolist() == A.tolist()
        close(t.T, A.T)
        assert t.to("cpu").device == "cpu"
        assert d2s.tensor([3.5]).item() == 3.5 and type(d2s.tensor(3).item()) is int
        assert type(d2s.tensor(True).item()) is bool

    def test_item_of_many_elements_raises(self):
        with pytest.raises((ValueError, RuntimeError)):
            d2s.tensor(A).item()

    def test_gpu_without_cupy_raises_a_clear_error(self):
        try:
            import cupy  # noqa: F401
            pytest.skip("cupy is installed")
        except ImportError:
            pass
        with pytest.raises(RuntimeError, match="cupy"):
            d2s.tensor([1.0], device="gpu")


class TestOperators:
    X = np.array([[7.0, -7.5], [2.0, 0.5]], np.float32)
    Y = np.array([[2.0, 3.0], [-4.0, 0.25]], np.float32)

    @pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**", "@", "<", "<=", ">", ">=", "==", "!="])
    def test_binary_operators_match_numpy(self, op):
        x, y = self.X, np.abs(self.Y) if op == "**" else self.Y
        ref = eval(f"x {op} y")
        got = eval(f"d2s.tensor(x) {op} d2s.tensor(y)")
        assert got.dtype == ref.dtype.name
        close(got, ref)
        # Python scalars and numpy arrays on either side
        close(eval(f"d2s.tensor(x) {op} 2.0") if op != "@" else d2s.tensor(x) @ y, eval(f"x {op} 2.0") if op != "@" else x @ y)
        close(eval(f"3.0 {op} d2s.tensor(y)") if op != "@" else x @ d2s.tensor(y), eval(f"3.0 {op} y") if op != "@" else x @ y)
        assert isinstance(eval(f"x {op} d2s.tensor(y)"), d2s.Tensor)

    def test_integer_floor_division_and_mod_follow_python(self):
        a = d2s.tensor([7, -7, 7, -7])
        b = d2s.tensor([2, 2, -2, -2])
        np.testing.assert_array_equal((a // b).numpy(), [3, -4, -4, 3])
        np.testing.assert_array_equal((a % b).numpy(), [1, 1, -1, -1])
        assert (a // b).dtype == "int64"

    def test_unary_and_bool_operators(self):
        close(-d2s.tensor(self.X), -self.X)
        p, q = np.array([True, False, True]), np.array([True, True, False])
        for op in ("&", "|", "^"):
            got = eval(f"d2s.tensor(p) {op} d2s.tensor(q)")
            assert got.dtype == "bool"
            np.testing.assert_array_equal(got.numpy(), eval(f"p {op} q"))
        np.testing.assert_array_equal((~d2s.tensor(p)).numpy(), ~p)

    def test_comparisons_give_bool_tensors(self):
        assert (d2s.tensor(self.X) > 0).dtype == "bool"
        assert (d2s.tensor(self.X) == d2s.tensor(self.X)).numpy().all()


class TestIndexing:
    B = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    @pytest.mark.parametrize("idx", [1, -1, (1, 2), (1, 2, 3), slice(None, None, 2), (slice(None), slice(1, 3)),
                                     (Ellipsis, 0), (None, 1), (1, Ellipsis, None, slice(1, 3)),
                                     (slice(None, None, -1),), (0, slice(None), slice(None, None, -2))])
    def test_basic_indexing_matches_numpy(self, idx):
        close(d2s.tensor(self.B)[idx], self.B[idx])

    def test_mask_and_integer_index_tensors(self):
        t = d2s.tensor(self.B)
        close(t[t > 10], self.B[self.B > 10])
        close(t[d2s.tensor([1, 0, 1])], self.B[[1, 0, 1]])
        close(t[0, d2s.tensor([2, 0])], self.B[0, [2, 0]])
        close(t[np.array([1, 0])], self.B[[1, 0]])
        close(t[d2s.tensor([0, 1]), d2s.tensor([2, 0])], self.B[[0, 1], [2, 0]])

    def test_setitem(self):
        ref = np.zeros((3, 4), np.float32)
        t = d2s.zeros(3, 4)
        for idx, v in [(1, 5.0), ((slice(None), 0), np.array([1.0, 2.0, 3.0], np.float32)), ((0, slice(1, 3)), -2.0)]:
            ref[idx] = v
            t[idx] = d2s.tensor(v) if isinstance(v, np.ndarray) else v
        mask = ref > 4
        ref[mask] = -1
        t[t > 4] = -1.0
        close(t, ref)

    def test_setitem_is_differentiable(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        y[0] = x[1] * 3
        y.sum().backward()
        close(x.grad, [0.0, 4.0])


UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
         "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "relu": lambda a: np.maximum(a, 0), "abs": np.abs,
         "neg": np.negative}
# numpy's max/min are amax/amin (max/min with a dim give (values, indices), as in PyTorch)
REDUCE = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min, "prod": np.prod,
          "argmax": np.argmax, "argmin": np.argmin}


class TestFunctions:
    @pytest.mark.parametrize("name", sorted(UNARY))
    def test_unary_as_function_and_method(self, name):
        x = np.abs(A) + 0.5 if name in ("log", "sqrt") else A
        ref = UNARY[name](x)
        close(getattr(d2s, name)(d2s.tensor(x)), ref)
        close(getattr(d2s.tensor(x), name)(), ref)
        close(getattr(d2s, name)(x), ref)                # numpy array in
        close(getattr(d2s, name)(x.tolist()), ref)       # nested lists in
        assert getattr(d2s, name)(x).dtype == "float32"

    @pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "minimum"])
    def test_binary_functions(self, name):
        npf = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
               "maximum": np.maximum, "minimum": np.minimum}[name]
        x, y = np.abs(A) + 0.5, A[1]
        close(getattr(d2s, name)(d2s.tensor(x), d2s.tensor(y)), npf(x, y), rtol=1e-5)
        close(getattr(d2s.tensor(x), name)(y), npf(x, y), rtol=1e-5)
        close(getattr(d2s, name)(x, 2.0), npf(x, np.float32(2.0)), rtol=1e-5)
        close(getattr(d2s, name)(3.0, d2s.tensor(y)), npf(np.float32(3.0), y), rtol=1e-5)

    @pytest.mark.parametrize("name", sorted(REDUCE))
    @pytest.mark.parametrize("axis", [None, 0, 1, -1])
    @pytest.mark.parametrize("keepdims", [False, True])
    def test_reductions_axis_keepdims(self, name, axis, keepdims):
        ref = REDUCE[name](A, axis=axis, keepdims=keepdims)
        for got in (getattr(d2s, name)(d2s.tensor(A), axis=axis, keepdims=keepdims),
                    getattr(d2s.tensor(A), name)(axis=axis, keepdims=keepdims),
                    getattr(d2s, name)(A, axis=axis, keepdims=keepdims)):
            assert got.shape == np.shape(ref)
            close(got, ref)

    @pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "prod"])
    def test_reductions_over_axis_tuples(self, name):
        b = RNG.standard_normal((2, 3, 4)).astype(np.float32)
        close(getattr(d2s, name)(b, axis=(0, 2)), REDUCE[name](b, axis=(0, 2)), rtol=1e-5)
        assert getattr(d2s, name)(b, axis=(0, 2), keepdims=True).shape == (1, 3, 1)

    def test_argmax_dtype(self):
        assert d2s.argmax(A, axis=1).dtype == "int64"

    def test_clip_where_matmul(self):
        t = d2s.tensor(A)
        close(d2s.clip(t, -1.0, 2.0), np.clip(A, -1, 2))
        close(t.clip(-1.0, 2.0), np.clip(A, -1, 2))
        close(t.clip(min=0.0), np.clip(A, 0, None))
        close(d2s.where(t > 0, t, 0.0), np.where(A > 0, A, 0))
        close(d2s.where(A > 0, A, -A), np.abs(A))
        close(d2s.matmul(t, t.T), A @ A.T)
        close(t.matmul(A.T), A @ A.T)
        close(d2s.matmul(A[0], A.T), A[0] @ A.T)
        b = RNG.standard_normal((3, 2, 3)).astype(np.float32)
        close(d2s.matmul(b, A.T), b @ A.T, rtol=1e-5)

    def test_shape_functions(self):
        b = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        t = d2s.tensor(b)
        close(d2s.reshape(t, (4, 6)), b.reshape(4, 6))
        close(t.reshape(-1, 2), b.reshape(-1, 2))
        close(t.reshape(6, 4), b.reshape(6, 4))
        close(d2s.transpose(t[0]), b[0].T)
        close(t.transpose(0, 2), b.transpose(2, 1, 0))
        close(d2s.permute(t, (2, 0, 1)), b.transpose(2, 0, 1))
        close(t.permute(2, 0, 1), b.transpose(2, 0, 1))
        close(d2s.squeeze(b[None, :, None]), b)
        assert d2s.ones(1, 3, 1).squeeze(0).shape == (3, 1)
        assert t.unsqueeze(1).shape == (2, 1, 3, 4) and d2s.unsqueeze(b, -1).shape == (2, 3, 4, 1)
        close(d2s.broadcast_to(b[0, 0], (3, 4)), np.broadcast_to(b[0, 0], (3, 4)))
        close(t[0, 0].broadcast_to((3, 4)), np.broadcast_to(b[0, 0], (3, 4)))
        assert d2s.flatten(t).shape == (24,) and t.flatten(1).shape == (2, 12)
        close(d2s.concat([t, b], axis=1), np.concatenate([b, b], axis=1))
        close(d2s.stack([t, b], axis=-1), np.stack([b, b], axis=-1))
        assert [p.shape for p in d2s.split(t, 2, axis=2)] == [(2, 3, 2), (2, 3, 2)]
        assert [p.shape for p in t.split([1, 3], axis=2)] == [(2, 3, 1), (2, 3, 3)]

    def test_split_sizes_must_add_up(self):
        # torch.split with a list of sizes that do not sum to the dimension raises.
        with pytest.raises(Exception):
            d2s.split(d2s.arange(5), [2, 2])

    def test_softmax_family_cumsum_gather_one_hot(self):
        lse = np.log(np.exp(A).sum(axis=1, keepdims=True))
        close(d2s.softmax(A, axis=1), np.exp(A - lse))
        close(d2s.tensor(A).softmax(axis=1), np.exp(A - lse))
        close(d2s.log_softmax(A, axis=1), A - lse, atol=1e-5)
        close(d2s.logsumexp(A, axis=1), lse[:, 0])
        close(d2s.logsumexp(A, axis=1, keepdims=True), lse)
        close(d2s.logsumexp(A), np.log(np.exp(A).sum()))
        close(d2s.cumsum(A, axis=1), np.cumsum(A, axis=1))
        idx = np.array([[2, 0], [1, 1]])
        close(d2s.gather(A, 1, idx), np.take_along_axis(A, idx, axis=1))
        close(d2s.tensor(A).gather(1, d2s.tensor(idx)), np.take_along_axis(A, idx, axis=1))
        np.testing.assert_array_equal(d2s.one_hot(d2s.tensor([0, 2]), 3).numpy(), np.eye(3)[[0, 2]])

    def test_python_scalars_are_accepted(self):
        assert d2s.add(1, 2).item() == 3
        assert abs(d2s.exp(1.0).item() - math.e) < 1e-6
        close(d2s.where(True, 1.0, 2.0), 1.0)
        close(d2s.stack([1.0, 2.0]), [1.0, 2.0])
        assert d2s.maximum(1, 2).item() == 2
