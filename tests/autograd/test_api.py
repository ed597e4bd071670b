"""The public contract of API.md §2 (autograd, d2s.func, checkpoint, make_dot), checked the way a
user would use it, against hand-derived values and PyTorch semantics."""
import numpy as np
import pytest

import d2s

from api_helpers import close


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
