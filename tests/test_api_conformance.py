"""d2s's public API contract, checked the way a user would use it.

Every name and signature of the contract is exercised here, against numpy results, hand-derived
values or PyTorch-like expectations. Sections follow the contract: §1 tensors, §2 autograd, §3 nn / optim
/ data, §4 d2s.jit and control flow, §5 programs, §6 the command line.
"""
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn, optim

RNG = np.random.default_rng(0)
A = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)


def close(t, ref, rtol=1e-5, atol=1e-6):
    got = t.numpy() if isinstance(t, d2s.Tensor) else np.asarray(t)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


# ====================================================================== §1 tensors
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
REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
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

    @pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
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


# ====================================================================== §2 autograd
class TestAutograd:
    def test_leaf_attributes(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        assert x.is_leaf and x.grad_fn is None and x.grad is None
        y = x * 2
        assert not y.is_leaf and y.requires_grad
        d = y.detach()
        assert not d.requires_grad and d.is_leaf and d.grad_fn is None
        z = d2s.tensor([1.0])
        assert z.requires_grad_() is z and z.requires_grad

    @pytest.mark.parametrize("expr, name", [("x + x", "AddBackward0"), ("x * 2", "MulBackward0"),
                                            ("x @ w", "MatmulBackward0"), ("x - 1", "SubBackward0"),
                                            ("x / 2", "DivBackward0"), ("-x", "NegBackward0"),
                                            ("x.exp()", "ExpBackward0"), ("x.sum()", "SumBackward0"),
                                            ("x.mean()", "MeanBackward0")])
    def test_grad_fn_names(self, expr, name):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        w = d2s.tensor([[1.0, 0.0], [0.0, 2.0]], requires_grad=True)
        assert eval(expr).grad_fn.name() == name

    def test_next_functions(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 2) + x
        names = [(None if n is None else n.name(), i) for n, i in y.grad_fn.next_functions]
        assert names == [("MulBackward0", 0), ("AccumulateGrad", 0)]
        c = d2s.tensor([1.0, 1.0])
        nf = (x * c).grad_fn.next_functions
        assert nf[0][0].name() == "AccumulateGrad" and nf[1][0] is None

    def test_backward_accumulates_into_leaves(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        (x * x).sum().backward()
        close(x.grad, [4.0, 8.0])

    def test_backward_errors(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp().sum()
        y.backward()
        with pytest.raises(RuntimeError):
            y.backward()
        with pytest.raises(RuntimeError):
            (x * 2).backward()

    def test_backward_gradient_retain_graph_create_graph(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).backward(d2s.tensor([1.0, 3.0]))
        close(x.grad, [2.0, 6.0])
        x.grad = None
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        close(x.grad, [4.0, 8.0])
        s = d2s.tensor(2.0, requires_grad=True)
        (s ** 3).backward(create_graph=True)
        g = s.grad
        assert g.requires_grad
        s.grad = None
        g.backward()
        close(s.grad, 12.0)

    def test_d2s_grad(self):
        x = d2s.tensor(2.0, requires_grad=True)
        z = d2s.tensor(1.0, requires_grad=True)
        out = d2s.grad(x ** 3, x, create_graph=True)
        assert isinstance(out, tuple)
        close(out[0], 12.0)
        close(d2s.grad(out[0], x)[0], 12.0)
        assert x.grad is None                       # d2s.grad does not accumulate
        assert d2s.grad(x * 2, [x, z], allow_unused=True)[1] is None
        with pytest.raises(RuntimeError):
            d2s.grad(x * 2, [x, z])
        v = d2s.tensor([2.0, 3.0], requires_grad=True)
        close(d2s.grad(v * 2, v, grad_outputs=d2s.tensor([1.0, 0.0]))[0], [2.0, 0.0])

    def test_d2s_grad_runs_only_the_needed_part(self):
        x = d2s.tensor(2.0, requires_grad=True)
        a = d2s.tensor(3.0, requires_grad=True)
        seen = []
        a.register_hook(lambda g: seen.append(g))
        d2s.grad(x * a, x)
        assert seen == []

    def test_hooks_and_retain_grad(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g * 10)
        (x * 2).sum().backward()
        close(x.grad, [20.0, 20.0])
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: seen.append(g.numpy().copy()))
        (y * 3).sum().backward()
        close(y.grad, [3.0, 3.0])
        close(seen[0], [3.0, 3.0])
        close(x.grad, [6.0, 6.0])

    def test_grad_modes(self):
        x = d2s.tensor([1.0], requires_grad=True)
        with d2s.no_grad():
            assert not d2s.is_grad_enabled()
            assert not (x * 2).requires_grad
            with d2s.enable_grad():
                assert (x * 2).requires_grad
        assert d2s.is_grad_enabled()

        @d2s.no_grad()
        def f(v):
            return v * 2

        @d2s.enable_grad()
        def g(v):
            return v * 2
        assert not f(x).requires_grad
        with d2s.no_grad():
            assert g(x).requires_grad

    def test_grad_modes_as_bare_decorators(self):
        # torch.no_grad / torch.enable_grad work without parentheses too (PyTorch >= 2.0).
        @d2s.no_grad
        def f(v):
            return v * 2

        @d2s.enable_grad
        def g(v):
            return v * 2
        x = d2s.tensor([1.0], requires_grad=True)
        assert not f(x).requires_grad
        with d2s.no_grad():
            assert g(x).requires_grad

    def test_functional(self):
        from d2s.autograd import functional as AF
        x = d2s.tensor([1.0, 2.0])
        close(AF.jacobian(lambda v: v * v, x), np.diag([2.0, 4.0]))
        close(AF.hessian(lambda v: (v ** 3).sum(), x), np.diag([6.0, 12.0]))
        out, vjp = AF.vjp(lambda v: v * v, x, d2s.tensor([1.0, 1.0]))
        close(out, [1.0, 4.0])
        close(vjp, [2.0, 4.0])
        out, jvp = AF.jvp(lambda v: v * v, x, d2s.tensor([1.0, 0.0]))
        close(jvp, [2.0, 0.0])

    def test_gradcheck(self):
        x = d2s.tensor([0.3, 1.2], dtype="float64", requires_grad=True)
        assert d2s.autograd.gradcheck(lambda v: (v.sin() * v).sum(), (x,), eps=1e-6, atol=1e-5) is True

    def test_func_transforms_over_pytrees(self):
        g = d2s.func.grad(lambda p: (p["a"] ** 2).sum() + p["b"][0].sum())(
            {"a": d2s.tensor([1.0, 2.0]), "b": [d2s.tensor([3.0])]})
        close(g["a"], [2.0, 4.0])
        close(g["b"][0], [1.0])
        ga, gb = d2s.func.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(d2s.tensor([1.0, 2.0]), d2s.tensor([3.0, 4.0]))
        close(ga, [3.0, 4.0])
        close(gb, [1.0, 2.0])
        g, aux = d2s.func.grad(lambda a: ((a * a).sum(), 7), has_aux=True)(d2s.tensor([1.0, 2.0]))
        close(g, [2.0, 4.0])
        assert aux == 7
        v, g = d2s.func.value_and_grad(lambda a: (a * a).sum())(d2s.tensor([1.0, 2.0]))
        close(v, 5.0)
        close(d2s.func.jacrev(lambda a: a * a)(d2s.tensor([1.0, 2.0])), np.diag([2.0, 4.0]))
        close(d2s.func.jacfwd(lambda a: a * a)(d2s.tensor([1.0, 2.0])), np.diag([2.0, 4.0]))
        close(d2s.func.hessian(lambda a: (a ** 3).sum())(d2s.tensor([1.0, 2.0])), np.diag([6.0, 12.0]))

    def test_checkpoint(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        d2s.utils.checkpoint(lambda v: v.sin() * v, x).sum().backward()
        xn = np.array([1.0, 2.0])
        close(x.grad, np.sin(xn) + xn * np.cos(xn))

    def test_make_dot_source(self):
        x = d2s.tensor([1.0, 2.0], requires_grad=True)
        dot = d2s.viz.make_dot((x * 2).sum(), params={"x": x})
        assert dot.source.lstrip().startswith(("digraph", "strict digraph")) and callable(dot.render)
        assert "MulBackward0" in dot.source and "SumBackward0" in dot.source


# ====================================================================== §3 nn, optim, data
class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.w = nn.Parameter(d2s.ones(4))
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, x):
        h = self.act(self.l1(x))
        for b in self.blocks:
            h = b(h)
        return h * self.w


class TestNN:
    def test_module_registration_and_state(self):
        m = _Net()
        names = sorted(n for n, _ in m.named_parameters())
        assert names == sorted(["w", "l1.weight", "l1.bias", "blocks.0.weight", "blocks.0.bias",
                                "blocks.1.weight", "blocks.1.bias"])
        assert len(list(m.parameters())) == 7
        assert [type(c).__name__ for c in m.children()] == ["Linear", "ReLU", "ModuleList"]
        assert sorted(m.state_dict()) == names
        assert m.training and m.eval() is m and not m.training and not m.blocks[0].training
        m.train()
        assert m.blocks[1].training
        m2 = _Net()
        m2.load_state_dict(m.state_dict())
        x = d2s.randn(2, 3)
        close(m2(x), m(x).numpy())
        assert m(x.numpy()).shape == (2, 4)

    def test_layers_shapes_and_values(self):
        lin = nn.Linear(3, 4)
        assert lin.weight.shape == (4, 3) and lin.bias.shape == (4,)
        x = d2s.randn(5, 3)
        close(lin(x), x.numpy() @ lin.weight.numpy().T + lin.bias.numpy(), atol=1e-5)
        close(F.linear(x, lin.weight, lin.bias), lin(x).numpy())
        seq = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        assert seq(x).shape == (5, 1) and len(seq) == 3 and isinstance(seq[1], nn.Tanh)
        v = np.array([-1.0, 0.0, 2.0], np.float32)
        close(nn.Sigmoid()(v), 1 / (1 + np.exp(-v)))
        close(nn.GELU()(v), [-0.158655, 0.0, 1.954500], atol=2e-3)  # erf- or tanh-GELU
        assert nn.Dropout(0.5).eval()(d2s.ones(4)).numpy().tolist() == [1.0] * 4
        d2s.manual_seed(0)
        dv = nn.Dropout(0.5)(d2s.ones(2000)).numpy()
        assert set(np.unique(dv)) <= {0.0, 2.0} and 0.4 < (dv == 0).mean() < 0.6
        h = RNG.standard_normal((2, 5)).astype(np.float32)
        ref = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
        close(nn.LayerNorm(5)(h), ref, atol=1e-5)
        emb = nn.Embedding(10, 3)
        close(emb(d2s.tensor([[1, 2], [3, 4]])), emb.weight.numpy()[[[1, 2], [3, 4]]])
        conv = nn.Conv2d(3, 8, 3, stride=1, padding=1)
        assert conv.weight.shape == (8, 3, 3, 3) and conv(d2s.randn(2, 3, 8, 8)).shape == (2, 8, 8, 8)
        img = RNG.standard_normal((1, 1, 4, 4)).astype(np.float32)
        close(nn.MaxPool2d(2)(img), img.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5)))
        assert nn.Flatten()(d2s.randn(2, 3, 4)).shape == (2, 12)
        assert nn.RNNCell(3, 5)(d2s.randn(2, 3), d2s.zeros(2, 5)).shape == (2, 5)
        assert nn.GRUCell(3, 5)(d2s.randn(2, 3), d2s.zeros(2, 5)).shape == (2, 5)

    def test_conv2d_matches_direct_formula(self):
        x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
        w = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
        ref = np.zeros((1, 3, 3, 3), np.float32)
        for o in range(3):
            for i in range(3):
                for j in range(3):
                    ref[0, o, i, j] = (x[0, :, i:i + 3, j:j + 3] * w[o]).sum()
        close(F.conv2d(x, w), ref, rtol=1e-4, atol=1e-4)

    def test_losses(self):
        assert nn.MSELoss()(d2s.tensor([1.0, 2.0]), d2s.tensor([0.0, 0.0])).item() == pytest.approx(2.5)
        assert F.mse_loss(d2s.tensor([1.0, 2.0]), d2s.tensor([0.0, 0.0])).item() == pytest.approx(2.5)
        logits = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]], np.float32)
        y = np.array([2, 0])
        ref = np.mean(np.log(np.exp(logits).sum(1)) - logits[[0, 1], y])
        assert nn.CrossEntropyLoss()(d2s.tensor(logits), d2s.tensor(y)).item() == pytest.approx(ref, rel=1e-5)
        assert F.cross_entropy(d2s.tensor(logits), d2s.tensor(y)).item() == pytest.approx(ref, rel=1e-5)

    def test_functional_forms_exist(self):
        for name in ("linear", "relu", "tanh", "sigmoid", "gelu", "dropout", "layer_norm", "embedding",
                     "conv2d", "max_pool2d", "flatten", "mse_loss", "cross_entropy"):
            assert callable(getattr(F, name)), name


class TestOptim:
    def test_sgd_momentum_matches_torch(self):
        p = nn.Parameter(d2s.tensor([1.0]))
        o = optim.SGD([p], lr=0.1, momentum=0.9)
        for _ in range(2):
            o.zero_grad()
            (p * p).sum().backward()
            o.step()
        close(p, [0.46])   # torch: v1=2, p=0.8; g=1.6, v2=3.4, p=0.46
        assert "state" in o.state_dict() or o.state_dict()

    def test_adam_first_steps_match_torch(self):
        p = nn.Parameter(d2s.tensor([1.0, -2.0]))
        o = optim.Adam([p], lr=0.1)
        for _ in range(2):
            o.zero_grad()
            (p * p).sum().backward()
            o.step()
        w, m, v = np.array([1.0, -2.0]), 0.0, 0.0
        for t in (1, 2):  # torch.optim.Adam, written out
            g = 2 * w
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            w = w - 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        close(p, w, atol=1e-6)
        o.zero_grad()
        assert p.grad is None or np.all(p.grad.numpy() == 0)
        assert isinstance(o.state_dict(), dict)
        optim.Adam(nn.Linear(2, 2).parameters(), lr=1e-2, betas=(0.8, 0.9), eps=1e-6)


class TestData:
    def test_dataloader(self):
        data = [(np.full(2, i, np.float32), i) for i in range(10)]
        batches = list(d2s.data.DataLoader(data, batch_size=4))
        assert len(batches) == 3
        x0, y0 = batches[0]
        assert isinstance(x0, d2s.Tensor) and x0.shape == (4, 2) and y0.tolist() == [0, 1, 2, 3]
        assert batches[-1][0].shape == (2, 2)
        shuffled = list(d2s.data.DataLoader(data, batch_size=5, shuffle=True, prefetch=1))
        assert sorted(v for b in shuffled for v in b[1].tolist()) == list(range(10))


# ====================================================================== §4 d2s.jit
# to_static converts source: the functions it converts live at module level in this file.
def branchy(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


def looping(x, n):
    s = x * 0.0
    i = 0
    while s.sum() < 10.0 and i < 5:
        s = s + x.abs() + 0.5
        i += 1
    for k in range(n):
        if s.mean() > 3.0:
            break
        s = s * 1.5
    return s


def scaled(x, scale=2.0, flag=True):
    if flag:
        return x * scale
    return x


def nested_outputs(x):
    return x * 2.0, {"s": x.sum(), "l": [x + 1.0, 3]}


def functional_cond(x):
    return d2s.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)


def functional_while(x):
    i, s = d2s.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2.0), (d2s.tensor(0), x))
    return s


def functional_scan(xs):
    return d2s.scan(lambda c, e: (c + e, c * e), d2s.zeros_like(xs[0]), xs)


@d2s.jit.not_to_static
def _left_alone(x):
    return x * 3.0


def calls_left_alone(x):
    return _left_alone(x) + 1.0


class LoopNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 4)
        self.l2 = nn.Linear(4, 2)

    def forward(self, x, steps=2):
        h = self.l1(x)
        i = 0
        while h.sum() > 0 and i < steps:
            h = d2s.tanh(h) * 0.5
            i += 1
        if self.training:
            h = h * 2.0
        return self.l2(h)


X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)


def _grads(fn, *args):
    xs = [d2s.tensor(np.asarray(a, np.float64), requires_grad=True) for a in args]
    out = fn(*xs)
    out.sum().backward()
    return out.numpy(), [x.grad.numpy() for x in xs]


class TestToStatic:
    def test_decorator_forms(self):
        assert d2s.to_static is d2s.jit.to_static
        for sf in (d2s.jit.to_static(branchy), d2s.jit.to_static()(branchy),
                   d2s.jit.to_static(input_spec=[d2s.jit.InputSpec([None, 3])])(branchy)):
            assert isinstance(sf, d2s.jit.StaticFunction)
            for v in (X, -X):
                close(sf(d2s.tensor(v)), branchy(d2s.tensor(v)).numpy())

    def test_static_function_attributes(self):
        sf = d2s.jit.to_static(branchy)
        assert sf.eager is branchy
        assert isinstance(sf.code, str) and "def branchy" in sf.code
        sf(d2s.tensor(X))
        assert len(sf.programs) == 1 and all(isinstance(p, d2s.static.Program) if hasattr(d2s.static, "Program")
                                             else hasattr(p, "global_block") for p in sf.programs)
        prog = sf.get_program(d2s.jit.InputSpec([None, 3]))
        assert "cond" in [op.type for op in prog.global_block().ops]
        assert len(prog.blocks) >= 3  # the cond op holds its two branches as sub-blocks
        assert hasattr(sf.get_program(d2s.tensor(X)), "global_block")

    def test_one_program_per_signature(self):
        sf = d2s.jit.to_static(branchy)
        sf(d2s.tensor(X))
        sf(d2s.tensor(-X))                          # same signature: cached
        assert len(sf.programs) == 1
        sf(d2s.ones(4, 3))                          # new shape
        sf(d2s.ones(4, 3, dtype="float64"))         # new dtype
        assert len(sf.programs) == 3
        ss = d2s.jit.to_static(scaled)
        close(ss(d2s.tensor(X), scale=3.0), X * 3)
        close(ss(d2s.tensor(X), flag=False), X)
        ss(d2s.tensor(X), scale=3.0)
        assert len(ss.programs) == 2                # Python argument values are part of the key

    def test_input_spec_dynamic_dims_share_one_program(self):
        for dim in (None, -1):
            sf = d2s.jit.to_static(branchy, input_spec=[d2s.jit.InputSpec([dim, 3])])
            for n in (2, 5):
                v = RNG.standard_normal((n, 3)).astype(np.float32)
                close(sf(d2s.tensor(v)), branchy(d2s.tensor(v)).numpy())
            assert len(sf.programs) == 1
        spec = d2s.jit.InputSpec([None, 3], "float64", name="x")
        assert spec.dtype == "float64" and spec.name == "x"
        assert d2s.jit.InputSpec([2]).dtype == "float32"

    @pytest.mark.parametrize("n", [0, 1, 3])
    def test_loops_values_and_gradients_match_eager(self, n):
        sf = d2s.jit.to_static(looping)
        for v in (X, -X * 0.1, X * 4):
            want, gw = _grads(lambda x: looping(x, d2s.tensor(n)), v)
            got, gg = _grads(lambda x: sf(x, d2s.tensor(n)), v)
            close(got, want)
            close(gg[0], gw[0])

    def test_outputs_keep_their_structure(self):
        a, d = d2s.jit.to_static(nested_outputs)(d2s.tensor(X))
        assert isinstance(a, d2s.Tensor) and set(d) == {"s", "l"}
        assert isinstance(d["l"], list) and d["l"][1] == 3
        close(d["s"], X.sum())

    def test_outputs_are_differentiable(self):
        x = d2s.tensor(X, requires_grad=True)
        out = d2s.jit.to_static(branchy)(x)
        assert out.requires_grad and out.grad_fn is not None
        assert not d2s.jit.to_static(branchy)(d2s.tensor(X)).requires_grad

    def test_module(self):
        d2s.manual_seed(0)
        net, ref = LoopNet(), LoopNet()
        ref.load_state_dict(net.state_dict())
        assert d2s.jit.to_static(net) is net
        assert isinstance(net.forward, d2s.jit.StaticFunction)
        x = d2s.randn(5, 3)
        close(net(x), ref(x).numpy(), atol=1e-6)
        assert len(net.forward.programs) >= 1
        # parameters are read at every call: optimizer steps change what the program computes
        for m in (net, ref):
            o = optim.SGD(m.parameters(), lr=0.5)
            o.zero_grad()
            (m(x) ** 2).sum().backward()
            for p in m.parameters():
                assert p.grad is not None
            o.step()
        for p, q in zip(net.parameters(), ref.parameters()):
            close(p, q.numpy(), atol=1e-5)
        close(net(x), ref(x).numpy(), atol=1e-5)
        net.eval()
        ref.eval()
        close(net(x), ref(x).numpy(), atol=1e-5)        # the training flag is part of the key
        close(net(x, steps=0), ref(x, steps=0).numpy(), atol=1e-5)

    def test_bound_method(self):
        net = LoopNet()
        sf = d2s.jit.to_static(net.forward)
        close(sf(d2s.tensor(X)), LoopNet.forward(net, d2s.tensor(X)).numpy(), atol=1e-6)

    def test_not_to_static_and_enable_to_static(self):
        close(d2s.jit.to_static(calls_left_alone)(d2s.tensor(X)), X * 3 + 1)
        d2s.jit.enable_to_static(False)
        try:
            sf = d2s.jit.to_static(branchy)
            close(sf(d2s.tensor(X)), X * 2)
            assert len(sf.programs) == 0
        finally:
            d2s.jit.enable_to_static(True)


class TestFunctionalControlFlow:
    def test_cond(self):
        x = d2s.tensor(X)
        close(d2s.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x), X * 2)
        close(d2s.cond(x.sum() < 0, lambda v: v * 2.0, lambda v: v - 1.0, x), X - 1)
        close(d2s.cond(d2s.tensor(True), lambda: d2s.tensor(1.0), lambda: d2s.tensor(2.0)), 1.0)
        v = d2s.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
        d2s.cond(v.sum() > 0, lambda a: a * a, lambda a: a, v).sum().backward()
        close(v.grad, [2.0, 4.0])

    def test_while_loop(self):
        i, s = d2s.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (d2s.tensor(0), d2s.tensor(0)))
        assert i.item() == 5 and s.item() == 10
        v = d2s.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
        _, s = d2s.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * s), (d2s.tensor(0), v))
        s.sum().backward()
        close(v.grad, 8 * np.array([1.0, 2.0]) ** 7)

    def test_scan(self):
        carry, ys = d2s.scan(lambda c, e: (c + e, c * e), d2s.tensor(0.0), d2s.tensor([1.0, 2.0, 3.0]))
        close(carry, 6.0)
        close(ys, [0.0, 2.0, 9.0])

    @pytest.mark.parametrize("fn, op", [(functional_cond, "cond"), (functional_while, "while"),
                                        (functional_scan, "scan")])
    def test_inside_programs(self, fn, op):
        x = d2s.tensor(X)
        prog = d2s.static.build_program(fn, x)
        assert op in [o.type for o in prog.global_block().ops]
        want = fn(x)
        got = d2s.jit.to_static(fn)(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            close(g, w.numpy())


class TestTrace:
    def test_warns_with_user_line_and_guards(self):
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            traced = d2s.jit.trace(branchy, (d2s.tensor(X),))
        tw = [w for w in caught if issubclass(w.category, d2s.jit.TracerWarning)]
        assert tw and os.path.basename(tw[0].filename) == os.path.basename(__file__)
        assert tw[0].lineno == branchy.__code__.co_firstlineno + 1
        assert hasattr(traced.program, "global_block")
        close(traced(d2s.tensor(X * 2)), X * 4)
        with pytest.raises(d2s.jit.TraceGuardError):
            traced(d2s.tensor(-X))

    def test_guards_off_returns_the_baked_path(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = d2s.jit.trace(branchy, (d2s.tensor(X),), guards=False)
        close(traced(d2s.tensor(-X)), -X * 2)

    def test_item_warns(self):
        import warnings

        def f(v):
            return v * v.sum().item()
        with pytest.warns(d2s.jit.TracerWarning):
            d2s.jit.trace(f, (d2s.tensor(X),))


class TestSaveLoad:
    def test_save_load_and_runtime(self, tmp_path):
        d2s.manual_seed(0)
        net = LoopNet().eval()
        path = str(tmp_path / "net")
        d2s.jit.save(d2s.jit.to_static(net), path, input_spec=[d2s.jit.InputSpec([None, 3])])
        assert os.path.isdir(path)
        x = d2s.randn(4, 3)
        loaded = d2s.jit.load(path)
        close(loaded(x), net(x).numpy(), atol=1e-6)
        import d2s_runtime
        out = d2s_runtime.load(path)(x.numpy())
        out = out[0] if isinstance(out, (list, tuple)) else out
        assert isinstance(out, np.ndarray)
        close(out, net(x).numpy(), atol=1e-6)

    def test_saved_control_flow_runs_without_d2s(self, tmp_path):
        path = str(tmp_path / "fn")
        d2s.jit.save(branchy, path, input_spec=[d2s.jit.InputSpec([None, 3])])
        for v in (X, -X):
            close(d2s.jit.load(path)(d2s.tensor(v)), branchy(d2s.tensor(v)).numpy())
        code = ("import sys; sys.modules['d2s'] = None\n"
                "import numpy as np, d2s_runtime\n"
                f"m = d2s_runtime.load({path!r})\n"
                "o = m(-np.ones((2, 3), np.float32))\n"
                "o = o[0] if isinstance(o, (list, tuple)) else o\n"
                "print(float(o.sum()))")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert float(r.stdout.strip()) == pytest.approx(-12.0)

    def test_onnx_export(self, tmp_path):
        path = str(tmp_path / "m.onnx")
        d2s.onnx.export(branchy, path, input_spec=[d2s.jit.InputSpec([None, 3])])
        assert os.path.getsize(path) > 0
        onnx = pytest.importorskip("onnx")
        model = onnx.load(path)
        onnx.checker.check_model(model)
        assert "If" in [n.op_type for n in model.graph.node]


# ====================================================================== §5 programs
class TestPrograms:
    def prog(self):
        return d2s.static.build_program(lambda x, w: d2s.tanh(x @ w).sum(axis=1),
                                        d2s.jit.InputSpec([None, 3]), d2s.jit.InputSpec([3, 2]))

    def test_program_structure(self):
        p = self.prog()
        gb = p.global_block()
        assert gb is p.blocks[0]
        assert [op.type for op in gb.ops] == ["matmul", "tanh", "reduce_sum"] or len(gb.ops) == 3
        assert len(p.inputs) == 2 and len(p.outputs) == 1 and list(p.params) == []
        op = gb.ops[0]
        assert list(op.inputs) == list(p.inputs) and len(op.outputs) == 1 and isinstance(op.attrs, dict)
        assert isinstance(gb.vars, dict) and set(p.inputs) <= set(gb.vars)
        text = str(p)
        assert "matmul" in text and "tanh" in text
        assert p.to_dot().lstrip().startswith("digraph")
        p.verify()
        q = p.clone()
        assert str(q) == text
        q.global_block().ops.pop()
        assert len(p.global_block().ops) == 3

    def test_build_program_accepts_tensors_and_specs(self):
        f = lambda x: x * 2.0  # noqa: E731
        for arg in (d2s.ones(2, 3), d2s.jit.InputSpec([2, 3])):
            assert len(d2s.static.build_program(f, arg).global_block().ops) >= 1

    def test_build_program_refuses_python_control_flow_on_tensors(self):
        with pytest.raises(Exception, match="(?i)cond|while|symbolic|concrete"):
            d2s.static.build_program(branchy, d2s.jit.InputSpec([None, 3]))

    def test_verify_raises_on_a_malformed_program(self):
        p = self.prog()
        q = p.clone()
        op = q.global_block().ops[1]
        op.inputs[0] = "no_such_var"
        with pytest.raises(Exception):
            q.verify()

    def test_optimize(self):
        p = d2s.static.build_program(lambda a: (a * 1.0 + 0.0) * (a * 1.0 + 0.0), d2s.jit.InputSpec([None, 3]))
        n = len(p.global_block().ops)
        q = d2s.passes.optimize(p)
        assert len(q.global_block().ops) < n and len(p.global_block().ops) == n
        import d2s_runtime
        a = RNG.standard_normal((4, 3)).astype(np.float32)
        close(d2s_runtime.Executor(q).run(a)[0], a * a)
        assert len(d2s.passes.optimize(p, passes=["dce"]).global_block().ops) <= n

    def test_executor(self):
        import d2s_runtime
        p = self.prog()
        ex = d2s_runtime.Executor(p, device="cpu", parallel=False)
        for n in (1, 4):
            x = RNG.standard_normal((n, 3)).astype(np.float32)
            w = RNG.standard_normal((3, 2)).astype(np.float32)
            close(ex.run(x, w)[0], np.tanh(x @ w).sum(1), rtol=1e-5)
        close(d2s_runtime.Executor(p, parallel=True).run(x, w)[0], np.tanh(x @ w).sum(1), rtol=1e-5)


# ====================================================================== §6 command line
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "d2s", *args], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(__file__))


class TestCLI:
    def test_help(self):
        r = _cli("--help")
        assert r.returncode == 0
        for cmd in ("convert", "graph", "compare", "run", "demo"):
            assert cmd in r.stdout

    def test_convert_graph_run(self, tmp_path):
        src = tmp_path / "model.py"
        src.write_text(textwrap.dedent("""
            import d2s

            def f(x):
                if x.sum() > 0:
                    return x * 2.0
                return x - 1.0
        """))
        r = _cli("convert", f"{src}::f")
        assert r.returncode == 0 and "def f" in r.stdout
        r = _cli("graph", f"{src}::f", "--spec", "float32[?,3]")
        assert r.returncode == 0 and "cond" in r.stdout
        out_dir = str(tmp_path / "saved")
        d2s.jit.save(branchy, out_dir, input_spec=[d2s.jit.InputSpec([None, 3])])
        np.save(tmp_path / "x.npy", X)
        r = _cli("run", out_dir, "--input", f"x={tmp_path / 'x.npy'}")
        assert r.returncode == 0, r.stderr
        assert "6." in r.stdout and "-2." in r.stdout  # branchy(X) = 2 X = [[2, 4, 6], [-2, 1, 4]]
