"""StaticFunction: calling convention, outputs, attributes, binding, switches and errors."""
import traceback
import warnings

import numpy as np
import pytest

import d2s
import torch_parity
from d2s.jit import InputSpec, StaticFunction, not_to_static, to_static
from torch_parity import Case

from jit_helpers import check


def affine(x, w, b):
    return x @ w + b


def test_straight_line_values_and_grads():
    d2s.manual_seed(0)
    for n in (1, 3, 5):
        check(affine, d2s.randn(n, 4), d2s.randn(4, 2), d2s.randn(2))


def pytree_out(x, y):
    s = x + y
    return {"sum": s, "parts": [x * 2.0, (y - 1.0, "tag")], "n": 3, "none": None}


def test_outputs_keep_pytree_structure_and_python_values():
    d2s.manual_seed(1)
    sf = check(pytree_out, d2s.randn(3), d2s.randn(3))
    out = sf(d2s.ones(3), d2s.ones(3))
    assert set(out) == {"sum", "parts", "n", "none"}
    assert out["n"] == 3 and out["none"] is None and out["parts"][1][1] == "tag"
    assert isinstance(out["parts"], list) and isinstance(out["parts"][1], tuple)


def test_decorator_bare_and_with_arguments():
    @to_static
    def f(x):
        return x * 3.0

    @to_static(input_spec=[InputSpec([None, 2])])
    def g(x):
        return x.sum(axis=1)

    assert isinstance(f, StaticFunction) and isinstance(g, StaticFunction)
    np.testing.assert_allclose(f(d2s.ones(2)).numpy(), [3.0, 3.0])
    np.testing.assert_allclose(g(d2s.ones(5, 2)).numpy(), np.full(5, 2.0))
    assert d2s.to_static is to_static


def test_output_grad_fn_is_one_run_program_node():
    x = d2s.randn(3, requires_grad=True)
    w = d2s.randn(3, requires_grad=True)
    def f(a, b):
        return (a * b).exp().sum(), a - b

    sf = to_static(f)
    loss, diff = sf(x, w)
    assert loss.grad_fn.name() == "RunProgramBackward0"
    assert loss.grad_fn is diff.grad_fn
    nexts = [n.name() for n, _ in loss.grad_fn.next_functions]
    assert nexts == ["AccumulateGrad", "AccumulateGrad"]
    # the node connects to the inputs' own grad nodes when they have history
    y = x * 2.0
    out = sf(y, w)[0]
    assert out.grad_fn.next_functions[0][0] is y.grad_fn


def test_no_grad_or_no_requires_grad_gives_plain_outputs():
    def f(a):
        return a.tanh()

    sf = to_static(f)
    assert sf(d2s.randn(3)).grad_fn is None
    with d2s.no_grad():
        out = sf(d2s.randn(3, requires_grad=True))
    assert out.grad_fn is None and not out.requires_grad


def test_integer_outputs_carry_no_gradient():
    def f(a):
        return a.sum(), a.argmax(), a > 0

    sf = to_static(f)
    s, i, m = sf(d2s.tensor([1.0, 3.0, -2.0], requires_grad=True))
    assert s.requires_grad and not i.requires_grad and not m.requires_grad
    assert i.item() == 1 and m.tolist() == [True, True, False]
    s.backward()


def test_keyword_and_python_arguments():
    def f(x, scale=1.0, *, shift=0.0, mode="mul"):
        if mode == "mul":
            return x * scale + shift
        return x + scale + shift

    sf = to_static(f)
    x = d2s.tensor([1.0, 2.0])
    np.testing.assert_allclose(sf(x, 2.0, shift=1.0).numpy(), [3.0, 5.0])
    np.testing.assert_allclose(sf(x, scale=3.0).numpy(), [3.0, 6.0])
    np.testing.assert_allclose(sf(x, 2.0, mode="add").numpy(), [3.0, 4.0])
    assert len(sf.programs) == 3


def test_numpy_array_arguments_are_program_inputs():
    def f(x):
        return x * 2.0

    sf = to_static(f)
    a = np.arange(3, dtype=np.float32)
    out = sf(a)
    assert isinstance(out, d2s.Tensor)
    np.testing.assert_allclose(out.numpy(), a * 2)
    assert len(sf.programs[0].inputs) == 1


def test_eager_code_and_get_program_attributes():
    sf = to_static(affine)
    assert sf.eager is affine
    assert "def affine" in sf.code
    prog = sf.get_program(InputSpec([None, 4]), InputSpec([4, 2]), InputSpec([2]))
    assert prog.block.lookup(prog.inputs[0]).type.shape == (None, 4)
    prog.verify()
    assert sf.programs == [prog]
    assert "matmul" in str(prog)


def test_get_program_with_input_spec_of_to_static():
    sf = to_static(affine, input_spec=[InputSpec([None, 4]), InputSpec([4, 3]), InputSpec([3])])
    prog = sf.get_program()
    assert [prog.block.lookup(n).type.shape for n in prog.inputs] == [(None, 4), (4, 3), (3,)]


def test_bound_method_and_class_decorator():
    class Scaler:
        def __init__(self, k):
            self.k = k

        @to_static
        def apply(self, x):
            return x * self.k

        def plain(self, x):
            return x + self.k

    a, b = Scaler(2.0), Scaler(5.0)
    x = d2s.ones(2)
    np.testing.assert_allclose(a.apply(x).numpy(), [2.0, 2.0])
    np.testing.assert_allclose(b.apply(x).numpy(), [5.0, 5.0])
    assert a.apply is a.apply  # one bound StaticFunction (and cache) per instance
    assert len(a.apply.programs) == 1
    sp = to_static(a.plain)
    np.testing.assert_allclose(sp(x).numpy(), [3.0, 3.0])
    assert sp.eager.__self__ is a


def test_nested_static_function_is_inlined_into_the_caller():
    def exp(x):
        return x.exp()

    inner = to_static(exp)

    @to_static
    def outer(x):
        return inner(x) + 1.0

    x = d2s.randn(3)
    np.testing.assert_allclose(outer(x).numpy(), np.exp(x.numpy()) + 1, rtol=1e-6)
    assert len(inner.programs) == 0  # ran inside outer's program
    assert "exp" in str(outer.programs[0])


def test_enable_to_static_false_runs_eagerly():
    def f(x):
        return x + 1.0

    sf = to_static(f)
    d2s.jit.enable_to_static(False)
    try:
        out = sf(d2s.ones(2))
        assert len(sf.programs) == 0
    finally:
        d2s.jit.enable_to_static(True)
    np.testing.assert_allclose(out.numpy(), [2.0, 2.0])
    sf(d2s.ones(2))
    assert len(sf.programs) == 1


def test_not_to_static_leaves_function_alone():
    @not_to_static
    def helper(x):
        return x * 2.0

    assert helper.__d2s_not_to_static__ is True
    assert to_static(helper) is helper

    @to_static
    def f(x):
        return helper(x) + 1.0

    np.testing.assert_allclose(f(d2s.ones(2)).numpy(), [3.0, 3.0])


def test_to_static_rejects_non_callables():
    with pytest.raises(TypeError, match="to_static"):
        to_static(42)


def test_source_unavailable_warns_and_runs_eagerly():
    ns = {}
    exec("def f(x):\n    return x * 4.0\n", {}, ns)
    sf = to_static(ns["f"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = sf(d2s.ones(2))
    np.testing.assert_allclose(out.numpy(), [4.0, 4.0])
    assert any("source" in str(w.message) for w in caught)
    assert sf.programs == []


def _raises_in_build(x):
    y = x * 2.0
    raise ValueError("boom from user code")  # the line the error must point at


def test_errors_while_building_point_at_user_source():
    sf = to_static(_raises_in_build)
    with pytest.raises(ValueError, match="boom") as info:
        sf(d2s.ones(2))
    text = "".join(traceback.format_exception(info.value))
    lineno = _raises_in_build.__code__.co_firstlineno + 2
    assert __file__ in text and f"line {lineno}" in text


def _uses_python_bool_of_tensor_outside_conversion(x):
    return x.numpy()


def test_symbolic_value_errors_name_the_user_line():
    sf = to_static(_uses_python_bool_of_tensor_outside_conversion)
    with pytest.raises(Exception) as info:
        sf(d2s.ones(2))
    assert "return x.numpy()" in str(info.value) or "return x.numpy()" in "".join(
        traceback.format_exception(info.value))


_GLOBAL_W = d2s.tensor(np.array([1.0, 2.0]), requires_grad=True)


def _global_loss(x):
    return ((x * _GLOBAL_W).sum() - 3.0) ** 2


def test_rebinding_a_global_or_closure_tensor_is_seen_by_the_next_call():
    # regression: programs kept reading the tensor a global / closure variable held at build
    # time, so `w = w - lr * w.grad` training loops silently stopped learning
    global _GLOBAL_W
    saved = _GLOBAL_W
    try:
        f = to_static(_global_loss)
        x = d2s.tensor(np.array([1.0, 0.5]))
        for _ in range(3):
            loss = f(x)
            loss.backward()
            np.testing.assert_allclose(loss.numpy(), _global_loss(x).numpy())
            with d2s.no_grad():
                _GLOBAL_W = (_GLOBAL_W - 0.1 * _GLOBAL_W.grad).requires_grad_()
        assert len(f.programs) == 1
        _GLOBAL_W = d2s.tensor(np.array([1.0, 2.0, 3.0]))  # another type: built again
        np.testing.assert_allclose(f(d2s.ones(3, dtype="float64")).numpy(), 9.0)
    finally:
        _GLOBAL_W = saved

    v = d2s.tensor(np.array([1.0, 2.0]), requires_grad=True)

    @to_static
    def g(x):
        return (x * v).sum()

    x = d2s.tensor(np.array([1.0, 1.0]))
    assert g(x).item() == 3.0
    v = (v * 2).detach().requires_grad_()
    assert g(x).item() == 6.0


# ------------------------------------------------------------------ requires_grad and grad mode inside
# A program is built in the caller's grad mode with its inputs and params requiring grad as the
# caller's do, so code reading them takes eager's path (it read False before, silently).
def grad_dependent_branch(t, x):
    if x.requires_grad:
        return x * 2
    return x * 3


def detached_unless_it_requires_grad(t, x):
    y = x.detach() if not x.requires_grad else x
    return (y * y).sum()


def intermediate_requires_grad(t, x):
    y = x * 2
    with t.no_grad():
        z = x * 3
    return y * (2 if y.requires_grad else 5) + z * (7 if z.requires_grad else 11)


def reads_grad_mode(t, x):
    return x * 2 if t.is_grad_enabled() else x * 3


_RG = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -2.0]])
# (the dynamic, saved and ONNX forms are fed tensors that do not require grad: they take the
# other path, checked by the _no_grad cases)
_FED_PLAIN = "its inputs do not require grad in this form (the _no_grad case checks that path)"
TORCH_CASES = [Case(f.__name__ + suffix, f, arg, grad=grad, **({} if not grad else
                                                                 dict(dynamic=_FED_PLAIN, saved=_FED_PLAIN,
                                                                      onnx=_FED_PLAIN)))
               for f in (grad_dependent_branch, detached_unless_it_requires_grad, intermediate_requires_grad,
                         reads_grad_mode)
               for suffix, arg, grad in (("", _RG, True), ("_no_grad", _RG, False), ("_row", _RG[:1], True))]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def flags(x, w):
    y = x * w
    return y * 1.0, (x.requires_grad, w.requires_grad, y.requires_grad, d2s.is_grad_enabled())


def test_requires_grad_and_grad_mode_read_inside_equal_eager_in_every_mode(monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "cache_size_limit", None)
    sf = to_static(flags)
    for mode in (d2s.enable_grad, d2s.no_grad, d2s.inference_mode):
        for gx, gw in ((True, False), (False, True), (False, False), (True, True)):
            x, w = d2s.tensor(_RG, requires_grad=gx), d2s.tensor(_RG[0], requires_grad=gw)
            with mode():
                got, want = sf(x, w), flags(x, w)
            assert got[1] == want[1], (mode.__name__, gx, gw)
            assert got[0].requires_grad == want[0].requires_grad
            np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    # one program per grad mode and requires_grad pattern (inference_mode is a no_grad mode of its own)
    assert len(sf.programs) == 12
    with d2s.no_grad():  # cached: no program is built again
        sf(d2s.tensor(_RG, requires_grad=True), d2s.tensor(_RG[0]))
    assert len(sf.programs) == 12


def test_with_dynamic_dims_requires_grad_reads_as_eagerly():
    sf = to_static(grad_dependent_branch, input_spec=[None, InputSpec([None, 3], "float64")])
    for n in (1, 2, 4):
        for rg in (True, False):
            a = np.arange(3.0 * n).reshape(n, 3)
            got = sf(d2s, d2s.tensor(a, requires_grad=rg))
            np.testing.assert_array_equal(got.numpy(), a * (2 if rg else 3))


class _Gated(d2s.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = d2s.nn.Parameter(d2s.tensor([1.0, -2.0, 0.5]))

    def forward(self, x):
        assert x.requires_grad or not self.training
        if self.w.requires_grad:
            return (x * self.w).sum()
        return (x * self.w.detach() * 10).sum()


def test_a_param_frozen_or_unfrozen_between_calls_builds_the_program_again():
    eager, static = _Gated(), to_static(_Gated())
    for frozen in (False, True, False):
        for m in (eager, static):
            m.w.requires_grad_(not frozen)
            m.w.grad = None
        xe, xs = d2s.tensor(_RG, requires_grad=True), d2s.tensor(_RG, requires_grad=True)
        le, ls = eager(xe), static(xs)
        np.testing.assert_allclose(ls.numpy(), le.numpy())
        le.backward()
        ls.backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy())
        assert (static.w.grad is None) == (eager.w.grad is None) == frozen
        if not frozen:
            np.testing.assert_allclose(static.w.grad.numpy(), eager.w.grad.numpy())


def test_an_assert_on_requires_grad_fails_as_eagerly():
    static = to_static(_Gated())
    with pytest.raises(AssertionError):
        static(d2s.tensor(_RG))  # x does not require grad, in training mode: the user's assert fails


def writes_its_input_in_place(x):
    x.mul_(2)
    return x * 1


def test_an_in_place_op_on_an_input_requiring_grad_is_refused_as_eagerly():
    sf = to_static(writes_its_input_in_place)
    for fn in (writes_its_input_in_place, sf):
        with pytest.raises(RuntimeError, match="leaf"):
            fn(d2s.tensor(_RG, requires_grad=True))
    x = d2s.tensor(_RG)
    np.testing.assert_array_equal(sf(x).numpy(), _RG * 2)  # (allowed where nothing requires grad)


def hooks_an_intermediate(x):
    y = x * 2
    y.register_hook(lambda g: g * 10)
    return (y * y).sum()


def test_a_hook_registered_inside_is_refused_not_ignored():
    # eagerly the hook scales the gradient; a program's backward would not call it
    x = d2s.tensor(_RG, requires_grad=True)
    hooks_an_intermediate(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), 80 * _RG)
    with pytest.raises(RuntimeError, match="register_hook") as e:
        to_static(hooks_an_intermediate)(d2s.tensor(_RG, requires_grad=True))
    assert "test_static_function.py" in str(e.value)


# ------------------------------------------------------------------ default values changed after conversion
def _scaled(x, scale=2.0, *, shift=0.0):
    if x.sum() > 0:  # a tensor condition: the defaults reach both branches of one program
        return x * scale + shift
    return x - scale - shift


class _Scaler(d2s.nn.Module):
    def forward(self, x, scale=2.0):
        return x * scale


def test_defaults_set_anew_after_conversion_are_used_as_eagerly():
    # before, the first build's defaults stayed in the program: f.__defaults__ = (5.0,) was ignored
    saved = _scaled.__defaults__, dict(_scaled.__kwdefaults__)
    f = to_static(_scaled)
    try:
        for x in (d2s.ones(3), -d2s.ones(3)):
            np.testing.assert_array_equal(f(x).numpy(), _scaled(x).numpy())
            _scaled.__defaults__ = (5.0,)
            np.testing.assert_array_equal(f(x).numpy(), _scaled(x).numpy())
            _scaled.__kwdefaults__ = {"shift": 1.0}
            np.testing.assert_array_equal(f(x).numpy(), _scaled(x).numpy())
            _scaled.__kwdefaults__["shift"] = 3.0  # in place
            np.testing.assert_array_equal(f(x).numpy(), _scaled(x).numpy())
            _scaled.__defaults__, _scaled.__kwdefaults__ = saved[0], dict(saved[1])
        assert len(f.programs) == 1  # the cache holds the programs of the defaults in force
    finally:
        _scaled.__defaults__, _scaled.__kwdefaults__ = saved[0], dict(saved[1])


def test_a_module_forward_with_new_defaults_builds_again():
    m = _Scaler()
    to_static(m)
    x = d2s.ones(2)
    assert m(x).numpy().tolist() == [2.0, 2.0]
    _Scaler.forward.__defaults__ = (3.0,)
    try:
        assert m(x).numpy().tolist() == [3.0, 3.0]
    finally:
        _Scaler.forward.__defaults__ = (2.0,)
    assert m(x).numpy().tolist() == [2.0, 2.0]
