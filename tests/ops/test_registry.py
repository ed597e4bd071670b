"""Every runtime op is complete on the d2s side: traits, a gradient rule (or a reason it has
none), an ONNX form (or a reason), a float64 gradcheck (or a reason) and a documented public
wrapper (or a reason it has none). Adding an op without these fails here."""
import numpy as np
import pytest

import d2s
import d2s.onnx  # noqa: F401  (registers the control-flow converters)
import d2s.static  # noqa: F401  (registers the control-flow gradient rules)
from d2s import ops
from d2s.autograd import gradcheck
from d2s.autograd.registry import GRAD_RULES, NONDIFF, SAMPLES
from d2s.dispatch import apply
from d2s.onnx.registry import CONSTANTS, CONTROL_FLOW, CONVERTERS, UNSUPPORTED
from d2s_runtime.ops import OPS, OpDef
from d2s_runtime.ops.registry import TRAITS

R = np.random.default_rng(0)


def randn(*shape):
    return R.standard_normal(shape)


_FIXED = {}


def fixed(*shape):
    """The same random weights on every call (a case's function runs many times)."""
    if shape not in _FIXED:
        _FIXED[shape] = randn(*shape)
    return _FIXED[shape]


def positive(*shape):
    return R.uniform(0.5, 2.0, shape)


def spread(*shape):
    """Distinct values far from each other (no ties for max/min, no kinks near finite steps)."""
    n = int(np.prod(shape))
    return (R.permutation(n) * 0.37 - n * 0.15).reshape(shape) + 0.05


_W46 = fixed(4, 6)  # (drawn here: converted code refuses numpy draws, which a program would freeze)


def _reshape_to_symbolic_dims(x):
    # a dynamic batch dim makes x.shape[0] symbolic: the reshape is a reshape_dims op, and
    # backward runs its rule in the static backward program
    return d2s.reshape(x, [x.shape[0], -1]) * _W46


_reshape_dims_static = d2s.jit.to_static(_reshape_to_symbolic_dims,
                                         input_spec=[d2s.jit.InputSpec([None, 2, 3], "float64")])


# ------------------------------------------------------------------ test data, one row per op
# op -> (public wrapper or a reason it has none, gradcheck case (fn, inputs) or a reason)
_INTERNAL = "internal op, emitted by other ops' wrappers or rules; no public wrapper"
_LISTS = ("a tensor-list op of converted loops (symbolic only); its rule is checked against eager gradients by "
          "tests/test_convert_lists.py and tests/test_control_flow.py::test_tensor_array_gradients_eager_and_static")
_ND = "not differentiable"

CASES = {
    "add": (ops.add, (ops.add, [randn(3, 1), randn(1, 4)])),
    "sub": (ops.sub, (ops.sub, [randn(3, 4), randn(4)])),
    "mul": (ops.mul, (ops.mul, [randn(3, 4), randn(3, 1)])),
    "div": (ops.div, (ops.div, [randn(3, 4), positive(4)])),
    "pow": (ops.pow, (ops.pow, [positive(3, 4), randn(4)])),
    "mod": (ops.mod, (ops.mod, [positive(3, 4) * 3, np.full(4, 0.7)])),
    "floordiv": (ops.floordiv, _ND),
    "maximum": (ops.maximum, (ops.maximum, [spread(3, 4), spread(3, 4) + 0.11])),
    "minimum": (ops.minimum, (ops.minimum, [spread(3, 4), spread(3, 4) + 0.11])),
    "neg": (ops.neg, (ops.neg, [randn(5)])),
    "exp": (ops.exp, (ops.exp, [randn(5)])),
    "log": (ops.log, (ops.log, [positive(5)])),
    "sqrt": (ops.sqrt, (ops.sqrt, [positive(5)])),
    "sin": (ops.sin, (ops.sin, [randn(5)])),
    "cos": (ops.cos, (ops.cos, [randn(5)])),
    "tanh": (ops.tanh, (ops.tanh, [randn(5)])),
    "sigmoid": (ops.sigmoid, (ops.sigmoid, [randn(5)])),
    "relu": (ops.relu, (ops.relu, [spread(6)])),
    "abs": (ops.abs, (ops.abs, [spread(6)])),
    "sign": (ops.sign, _ND),
    "floor": (ops.floor, _ND),
    "clip": (ops.clip, (lambda x: ops.clip(x, -0.5, 0.5), [spread(8) * 0.1])),
    "where": (ops.where, (lambda a, b: ops.where(np.array([True, False, True]), a, b), [randn(2, 3), randn(3)])),
    "cast": (ops.cast, (lambda x: ops.cast(x * 1.0, "float64"), [randn(4)])),
    "eq": (ops.eq, _ND), "ne": (ops.ne, _ND), "lt": (ops.lt, _ND), "le": (ops.le, _ND), "gt": (ops.gt, _ND),
    "ge": (ops.ge, _ND),
    "bitwise_and": (ops.logical_and, _ND), "bitwise_or": (ops.logical_or, _ND),
    "bitwise_xor": (ops.logical_xor, _ND), "logical_not": (ops.logical_not, _ND),
    "matmul": (ops.matmul, (ops.matmul, [randn(2, 3, 4), randn(4, 2)])),
    "reduce_sum": (ops.sum, (lambda x: ops.sum(x, 1), [randn(3, 4)])),
    "reduce_mean": (ops.mean, (lambda x: ops.mean(x, [0, 2], keepdims=True), [randn(2, 3, 4)])),
    "reduce_max": (ops.max, (lambda x: ops.max(x, 0), [spread(3, 4)])),
    "reduce_min": (ops.min, (lambda x: ops.min(x), [spread(3, 4)])),
    "reduce_prod": (ops.prod, (lambda x: ops.prod(x, 1), [positive(3, 4)])),
    "reduce_any": (ops.any, _ND), "reduce_all": (ops.all, _ND),
    "argmax": (ops.argmax, _ND), "argmin": (ops.argmin, _ND),
    "reshape": (ops.reshape, (lambda x: ops.reshape(x, [4, 3]) * np.arange(12.0).reshape(4, 3), [randn(3, 4)])),
    "reshape_like": (_INTERNAL, (lambda x, y: apply("reshape_like", x, y) * np.arange(6.0).reshape(3, 2),
                                 [randn(2, 3), randn(3, 2)])),
    "reshape_dims": (_INTERNAL, (_reshape_dims_static, [randn(4, 2, 3)])),
    "transpose": (ops.transpose, (lambda x: ops.transpose(x, [2, 0, 1]) * fixed(4, 2, 3), [randn(2, 3, 4)])),
    "expand_dims": (ops.unsqueeze, (lambda x: ops.unsqueeze(x, 1) * fixed(3, 1, 4), [randn(3, 4)])),
    "squeeze": (ops.squeeze, (lambda x: ops.squeeze(x, 1) * fixed(3, 4), [randn(3, 1, 4)])),
    "broadcast_to": (ops.broadcast_to, (lambda x: ops.broadcast_to(x, [2, 3, 4]) * fixed(2, 3, 4), [randn(3, 1)])),
    "concat": (ops.concat, (lambda a, b: ops.concat([a, b], 1) * fixed(2, 5), [randn(2, 2), randn(2, 3)])),
    "split_like": (_INTERNAL, (lambda g, a, b: apply("split_like", g, a, b, axis=0)[1] * fixed(3, 2),
                               [randn(5, 2), randn(2, 2), randn(3, 2)])),
    "stack": (ops.stack, (lambda a, b: ops.stack([a, b], 1) * fixed(3, 2), [randn(3), randn(3)])),
    "split": (ops.split, (lambda x: ops.split(x, [1, 3], 1)[1] * fixed(2, 3), [randn(2, 4)])),
    "getitem": (ops.getitem, (lambda x: x[np.array([0, 2, 0]), 1:], [randn(3, 4)])),
    "setitem": (ops.setitem, (lambda x, v: apply("setitem", x, v, np.array([0, 2]), index=[["t", 0]]) * fixed(3, 4),
                              [randn(3, 4), randn(4)])),
    "index_add": (_INTERNAL, (lambda x, v: apply("index_add", x, v, np.array([0, 2, 0]), index=[["t", 0]]),
                              [randn(3, 4), randn(3, 4)])),
    "pad": (ops.pad, (lambda x: ops.pad(x, [1, 2], mode="reflect") * fixed(2, 6), [randn(2, 3)])),
    "pad_grad": (_INTERNAL, (lambda g: apply("pad_grad", g, pads=[[0, 0], [1, 2]], mode="reflect"), [randn(2, 6)])),
    "identity": (ops.identity, (ops.identity, [randn(4)])),
    "stop_gradient": (ops.stop_gradient, "it exists to stop gradients"),
    "to_device": (ops.to_device, (lambda x: ops.to_device(x, "cpu"), [randn(4)])),
    "shape": (ops.shape, _ND), "dim": (_INTERNAL, _ND), "constant": (_INTERNAL, _ND),
    "full": (ops.full, _ND), "full_like": (ops.full_like, _ND), "full_dims": (_INTERNAL, _ND),
    "arange": (ops.arange, _ND), "arange_dyn": (_INTERNAL, _ND), "linspace": (ops.linspace, _ND),
    "eye": (ops.eye, _ND), "rand": (ops.rand, _ND), "randn": (ops.randn, _ND), "randint": (ops.randint, _ND),
    "randint_dyn": (_INTERNAL, _ND), "rand_dims": (_INTERNAL, _ND), "randn_dims": (_INTERNAL, _ND),
    "softmax": (ops.softmax, (lambda x: ops.softmax(x, 1) * fixed(3, 4), [randn(3, 4)])),
    "log_softmax": (ops.log_softmax, (lambda x: ops.log_softmax(x, 0) * fixed(3, 4), [randn(3, 4)])),
    "logsumexp": (ops.logsumexp, (lambda x: ops.logsumexp(x, 1), [randn(3, 4)])),
    "cumsum": (ops.cumsum, (lambda x: ops.cumsum(x, 1) * fixed(3, 4), [randn(3, 4)])),
    "gather": (ops.gather, (lambda x: ops.gather(x, 1, np.array([[0, 2], [1, 1], [3, 0]])), [randn(3, 4)])),
    "scatter_add": (ops.scatter_add, (lambda x, s: ops.scatter_add(x, 1, np.array([[0, 2], [1, 1], [3, 0]]), s),
                                      [randn(3, 4), randn(3, 2)])),
    "one_hot": (ops.one_hot, _ND),
    "conv2d": (ops.conv2d, (lambda x, w: ops.conv2d(x, w, stride=2, padding=1), [randn(1, 2, 5, 5), randn(3, 2, 3, 3)])),
    "conv2d_grad_input": (_INTERNAL, (lambda g, w, x: apply("conv2d_grad_input", g, w, x, stride=2, padding=1),
                                      [randn(1, 3, 3, 3), randn(3, 2, 3, 3), randn(1, 2, 5, 5)])),
    "conv2d_grad_weight": (_INTERNAL, (lambda g, x, w: apply("conv2d_grad_weight", g, x, w, stride=2, padding=1),
                                       [randn(1, 3, 3, 3), randn(1, 2, 5, 5), randn(3, 2, 3, 3)])),
    "max_pool2d": (ops.max_pool2d, (lambda x: ops.max_pool2d(x, 2), [spread(1, 2, 4, 4)])),
    "max_pool2d_grad": (_INTERNAL, "its rule refuses (second derivatives of max_pool2d are not supported)"),
    "dropout_mask": (ops.dropout, _ND),
    "print": (ops.print, _ND), "assert": ("the assert statement of converted code", _ND),
    "guard": ("d2s.jit.trace's guards", _ND),
    "list_new": (_INTERNAL, _ND), "list_len": (_INTERNAL, _ND), "list_index_check": (_INTERNAL, _ND),
    "list_push": (_INTERNAL, _LISTS), "list_pop": (_INTERNAL, _LISTS), "list_get": (_INTERNAL, _LISTS),
    "list_stack": (_INTERNAL, _LISTS),
    "stack_new": (_INTERNAL, _ND), "stack_push": (_INTERNAL, _ND), "stack_pop": (_INTERNAL, _ND),
    "stack_rows": (_INTERNAL, _ND),
}


# ops declared with an example call (sample_call, next to the op) need no row above
for _name, (_wrapper, _shapes) in SAMPLES.items():
    CASES.setdefault(_name, (_wrapper, (_wrapper, [randn(*s) for s in _shapes])))


def test_every_op_has_a_row():
    assert sorted(set(OPS) - set(CASES)) == [], "ops without a row in CASES or a sample_call declaration"
    assert sorted(set(CASES) - set(OPS)) == [], "rows of CASES for ops that no longer exist"


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_is_complete(name):
    op = OPS[name]
    assert isinstance(op, OpDef) and all(hasattr(op, t) for t in TRAITS), f"{name}: not a registered OpDef"
    differentiable = name in GRAD_RULES
    assert differentiable or NONDIFF.get(name), \
        f"{name}: no gradient rule and no non_differentiable(...) declaration with a reason"
    assert not (differentiable and name in NONDIFF), f"{name}: both a gradient rule and a non-differentiable mark"
    assert (name in CONVERTERS or UNSUPPORTED.get(name) or name in CONSTANTS or name in CONTROL_FLOW), \
        f"{name}: no ONNX converter and no onnx_unsupported(...) reason"
    wrapper, check = CASES[name]
    if callable(wrapper):
        doc = (wrapper.__doc__ or "").strip()
        assert doc, f"{name}: its public wrapper d2s.{wrapper.__name__} has no docstring"
    else:
        assert wrapper, f"{name}: no public wrapper and no reason"
    if differentiable:
        assert check is not _ND, f"{name}: has a gradient rule, so it needs a gradcheck case (or a reason)"
    if isinstance(check, tuple):
        fn, inputs = check
        assert gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)
    else:
        assert isinstance(check, str) and check


def test_reshape_dims_case_builds_the_op():
    from d2s.static import build_program
    program = build_program(_reshape_to_symbolic_dims, d2s.jit.InputSpec([None, 2, 3], "float64"))
    assert "reshape_dims" in [op.type for op in program.block.ops]


def test_gradchecks_fail_on_a_wrong_rule():
    """The check above can fail: a rule made wrong on purpose is caught."""
    rule = GRAD_RULES["sin"]
    GRAD_RULES["sin"] = lambda ctx, g: (g * ops.sin(ctx.inputs[0]),)
    try:
        with pytest.raises(AssertionError):
            gradcheck(ops.sin, [randn(4)])
    finally:
        GRAD_RULES["sin"] = rule


def test_every_public_function_has_a_docstring():
    missing = [n for n in ops.__all__ if not (getattr(ops, n).__doc__ or "").strip()]
    assert missing == []


def test_declarations_name_registered_ops():
    for table in (GRAD_RULES, NONDIFF, CONVERTERS, UNSUPPORTED):
        unknown = set(table) - set(OPS) - {"cond", "while", "scan"}
        assert unknown == set(), f"declared for ops the runtime does not have: {sorted(unknown)}"


def test_view_ops_link_their_input():
    """Autograd's view tracking reads the registry's ``view`` trait (no table of its own)."""
    w = d2s.tensor(randn(3, 4), requires_grad=True)
    for name in sorted(n for n, o in OPS.items() if o.view):
        y = {"transpose": lambda: w.T, "reshape": lambda: w.reshape(4, 3), "expand_dims": lambda: w.unsqueeze(0),
             "squeeze": lambda: w.unsqueeze(0).squeeze(0), "broadcast_to": lambda: w.broadcast_to([2, 3, 4]),
             "getitem": lambda: w[1:]}[name]()
        assert y._base is not None, name
