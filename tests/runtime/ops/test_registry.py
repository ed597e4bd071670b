"""The op registry (d2s_runtime.ops): every op is documented, its traits have the declared
types, each trait holds for the op's kernel on sample inputs, and no runtime module keeps its
own table of op names (the consumers read the traits)."""
import ast
import inspect
import operator
import os

import numpy as np
import pytest

import d2s_runtime
from d2s_runtime.ops import OPS, RNG, TRAITS, ShapeError, TensorType, deflowering, defop, ops_with

PYTHON_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
                    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<": operator.lt,
                    "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}


def _arity(opdef):
    """The number of array inputs of the kernel (positional parameters without a default, xp
    excluded); None for a variadic kernel."""
    params = list(inspect.signature(opdef.kernel).parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty)


def _array(rng, dtype, shape=(3, 4)):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("int"):
        return rng.integers(1, 9, size=shape).astype(dtype)
    return (rng.random(shape) + 0.5).astype(dtype)  # positive: log, sqrt, pow stay real


# Sample calls ``(inputs, attrs)`` of the ops that are not plain element-wise ones; an op given
# a trait these tests check needs one (the test says so).
SAMPLES = {
    "reduce_sum": lambda r: ([_array(r, "float64")], {"axes": [1], "keepdims": False}),
    "reduce_mean": lambda r: ([_array(r, "float64")], {"axes": [0], "keepdims": True}),
    "reduce_max": lambda r: ([_array(r, "float64")], {"axes": None, "keepdims": False}),
    "reduce_min": lambda r: ([_array(r, "float64")], {"axes": [1], "keepdims": False}),
    "reduce_prod": lambda r: ([_array(r, "float64")], {"axes": [0], "keepdims": False}),
    "cumprod": lambda r: ([_array(r, "float64")], {"axis": 1}),
    "logcumsumexp": lambda r: ([_array(r, "float64")], {"axis": 0}),
    "max_dim": lambda r: ([_array(r, "float64")], {"axis": 1}),
    "min_dim": lambda r: ([_array(r, "float64")], {"axis": 0, "keepdims": True}),
    "argsort": lambda r: ([_array(r, "float64")], {"axis": 1, "descending": True}),
    "sort": lambda r: ([_array(r, "float64")], {"axis": 0}),
    "topk": lambda r: ([_array(r, "float64")], {"k": 2, "axis": 1}),
    "kthvalue": lambda r: ([_array(r, "float64")], {"axis": 1, "k": 1}),
    "mode": lambda r: ([_array(r, "int64")], {"axis": 1}),
    "matmul": lambda r: ([_array(r, "float64", (3, 4)), _array(r, "float64", (4, 2))], {}),
    "concat": lambda r: ([_array(r, "float64"), _array(r, "float64", (2, 4))], {"axis": 0}),
    "stack": lambda r: ([_array(r, "float64"), _array(r, "float64")], {"axis": 1}),
    "full": lambda r: ([], {"shape": [2, 3], "value": 1.5, "dtype": "float32"}),
    "full_like": lambda r: ([_array(r, "float32")], {"value": 2.0}),
    "reshape": lambda r: ([_array(r, "float64")], {"shape": [2, 6]}),
    "transpose": lambda r: ([_array(r, "float64", (2, 3, 4))], {"perm": [2, 0, 1]}),
    "broadcast_to": lambda r: ([_array(r, "float64", (1, 4))], {"shape": [3, 4]}),
    "expand_dims": lambda r: ([_array(r, "float64")], {"axis": 1}),
    "squeeze": lambda r: ([_array(r, "float64", (3, 1, 4))], {"axes": [1]}),
    "stop_gradient": lambda r: ([_array(r, "float64")], {}),
    "setitem": lambda r: ([_array(r, "float64"), _array(r, "float64", (4,))], {"index": [["i", 1]]}),
    "index_add": lambda r: ([_array(r, "float64"), _array(r, "float64", (2, 4))], {"index": [["s", 0, 2, None]]}),
    "rand": lambda r: ([], {"shape": [64]}),
    "randn": lambda r: ([], {"shape": [64]}),
    "randint": lambda r: ([], {"shape": [64], "low": 0, "high": 1000}),
    "randint_dyn": lambda r: ([np.asarray(0), np.asarray(1000)], {"shape": [64]}),
    "dropout_mask": lambda r: ([_array(r, "float32", (64,))], {"p": 0.5}),
    "randperm": lambda r: ([], {"n": 64}),
    "randperm_dyn": lambda r: ([np.asarray(64)], {}),
    "multinomial": lambda r: ([_array(r, "float64", (4, 16))], {"num_samples": 8}),
    "bernoulli": lambda r: ([np.full(64, 0.5)], {}),
    "normal": lambda r: ([_array(r, "float64", (64,)), _array(r, "float64", (64,))], {}),
    "random_like": lambda r: ([_array(r, "float32", (64,))], {"dist": "uniform"}),
    "repeat_index": lambda r: ([np.array([2, 0, 3], dtype="int64")], {}),
    "nonzero": lambda r: ([_array(r, "bool")], {}),
    "bincount": lambda r: ([_array(r, "int64", (8,))], {"minlength": 2}),
    "bincount_weighted": lambda r: ([_array(r, "int64", (8,)), _array(r, "float64", (8,))], {}),
    "histc": lambda r: ([_array(r, "float64")], {"bins": 5}),
    "cummax": lambda r: ([_array(r, "float64")], {"axis": 1}),
    "cummin": lambda r: ([_array(r, "float64")], {"axis": 0}),
    "linalg_inv": lambda r: ([_array(r, "float64", (3, 3)) + 3 * np.eye(3)], {}),
    "linalg_cholesky": lambda r: ([np.eye(3) * 3 + 0.1], {}),
    "linalg_det": lambda r: ([_array(r, "float64", (2, 3, 3)) + 3 * np.eye(3)], {}),
    "linalg_slogdet": lambda r: ([_array(r, "float64", (3, 3)) + 3 * np.eye(3)], {}),
    "linalg_solve": lambda r: ([_array(r, "float64", (3, 3)) + 3 * np.eye(3), _array(r, "float64", (3, 2))], {}),
    # (the _ex forms: a batch holding a singular / not positive-definite matrix, their fallback)
    "linalg_inv_ex": lambda r: ([np.stack([_array(r, "float64", (3, 3)) + 3 * np.eye(3), np.ones((3, 3))])], {}),
    "linalg_solve_ex": lambda r: ([np.stack([_array(r, "float64", (3, 3)) + 3 * np.eye(3), np.ones((3, 3))]),
                                   _array(r, "float64", (2, 3, 2))], {"trans": True}),
    "linalg_cholesky_ex": lambda r: ([np.stack([np.eye(3) * 3 + 0.1, np.ones((3, 3)) - 2 * np.eye(3)])], {}),
    "frexp": lambda r: ([_array(r, "float64") * 100], {}),
    "index_add_dim": lambda r: ([_array(r, "float64"), np.array([2, 0]), _array(r, "float64", (3, 2))], {"axis": 1}),
    "index_copy_dim": lambda r: ([_array(r, "float64"), np.array([2, 0]), _array(r, "float64", (3, 2))], {"axis": 1}),
    "masked_scatter": lambda r: ([_array(r, "float64"), np.array([True, False, True, False]), _array(r, "float64", (9,))],
                                 {}),
    "masked_scatter_grad": lambda r: ([_array(r, "float64"), np.array([True, False, True, False]),
                                       _array(r, "float64", (9,))], {}),
    "pixel_shuffle": lambda r: ([_array(r, "float64", (2, 8, 3, 2))], {"upscale_factor": 2}),
    "pixel_unshuffle": lambda r: ([_array(r, "float64", (2, 2, 4, 6))], {"downscale_factor": 2}),
    "clamp": lambda r: ([_array(r, "float64"), _array(r, "float64", (4,)), _array(r, "float64", (3, 1)) + 0.5],
                        {"which": "both"}),
    "einsum": lambda r: ([_array(r, "float64", (2, 3, 4)), _array(r, "float64", (2, 4, 5))],
                         {"equation": "bij,bjk->bik"}),
    "tril": lambda r: ([_array(r, "float64")], {"diagonal": -1}),
    "triu": lambda r: ([_array(r, "float64", (2, 3, 4))], {"diagonal": 1}),
    "diagonal": lambda r: ([_array(r, "float64", (3, 4, 3))], {"offset": 1, "dim1": 2, "dim2": 0}),
    "unfold": lambda r: ([_array(r, "float64", (3, 5))], {"axis": 1, "size": 2, "step": 2}),
    "linalg_svd": lambda r: ([_array(r, "float64", (4, 3))], {"full_matrices": True}),
    "linalg_eigh": lambda r: ([_array(r, "float64", (3, 3)) + 3 * np.eye(3)], {"UPLO": "L"}),
    "linalg_qr": lambda r: ([_array(r, "float64", (4, 3))], {"mode": "reduced"}),
    "linalg_lu": lambda r: ([_array(r, "float64", (4, 3))], {}),
    "lu_pivots": lambda r: ([np.eye(4)[[2, 0, 3, 1]].T.copy()], {"k": 3}),
    "linalg_matrix_exp": lambda r: ([_array(r, "float64", (3, 3))], {}),
    "linalg_pinv": lambda r: ([_array(r, "float64", (4, 3))], {}),
    "linalg_matrix_rank": lambda r: ([_array(r, "float64", (4, 3))], {}),
    "gcd": lambda r: ([_array(r, "int64"), _array(r, "int32")], {}),
    "lcm": lambda r: ([_array(r, "int64"), _array(r, "int32")], {}),
    "diagonal_scatter": lambda r: ([_array(r, "float64"), _array(r, "float64", (3,))], {"offset": 1}),
    "diag_embed": lambda r: ([_array(r, "float64", (2, 3))], {"offset": -1, "dim1": 0, "dim2": 2}),
}


def _elementwise_sample(opdef, rng):
    """Inputs of one dtype (the first of float64, int64, bool the op accepts) for an
    element-wise op; ``where`` gets a bool condition."""
    n = _arity(opdef)
    for dtype in ("float64", "int64", "bool"):
        arrays = [_array(rng, dtype) for _ in range(n)]
        if opdef.promotes not in ((), None):  # promoted positions only (where: the condition is bool)
            arrays = [a if i in opdef.promotes else _array(rng, "bool") for i, a in enumerate(arrays)]
        try:
            opdef.infer(*[TensorType(a.shape, a.dtype.name) for a in arrays])
        except ShapeError:
            continue
        return arrays, {}
    raise AssertionError(f"op {opdef.name!r}: no float64, int64 or bool inputs its shape rule accepts")


def sample(name, seed=0):
    opdef = OPS[name]
    rng = np.random.default_rng(seed)
    if name in SAMPLES:
        return SAMPLES[name](rng)
    if opdef.elementwise:
        return _elementwise_sample(opdef, rng)
    raise AssertionError(f"op {name!r} declares traits the registry tests check: give it a sample call in "
                         f"tests/runtime/ops/test_registry.py SAMPLES")


def run(name, inputs, attrs):
    return OPS[name].kernel(np, *inputs, **attrs)


def infer(name, inputs, attrs):
    return OPS[name].infer(*[TensorType(np.shape(a), np.asarray(a).dtype.name) for a in inputs], **attrs)


def names_with(trait, value=True):
    return sorted(ops_with(trait, value))


def names_where(pred):
    return sorted(n for n, d in OPS.items() if pred(d))


# ------------------------------------------------------------------ documentation and types
@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_has_a_docstring_line(name):
    doc = OPS[name].doc
    assert doc and doc.splitlines()[0].strip(), f"op {name!r} has no docstring: give its kernel one (or defop doc=)"


def _check_trait_type(opdef, trait, value):
    where = f"op {opdef.name!r} trait {trait}={value!r}"
    if trait == "ufunc":
        assert value is None or isinstance(getattr(np, value, None), np.ufunc), where
    elif trait == "infix":
        assert value is None or value in PYTHON_OPERATORS, where
    elif trait == "identity":
        assert value is None or type(value) in (int, float), where
    elif trait == "promotes":
        assert value is None or (isinstance(value, tuple) and all(type(i) is int and i >= 0 for i in value)), where
    elif trait == "method":
        assert value is None or (isinstance(value, tuple) and len(value) == 2 and hasattr(np.ndarray, value[0])
                                 and set(value[1]) <= set("fiub")), where
    else:
        assert type(value) is bool, where


@pytest.mark.parametrize("name", sorted(OPS))
def test_traits_have_their_declared_types(name):
    opdef = OPS[name]
    for trait in TRAITS:
        _check_trait_type(opdef, trait, getattr(opdef, trait))
    assert opdef.n_out is None or (type(opdef.n_out) is int and opdef.n_out >= 0)
    assert all(isinstance(k, str) and callable(f) for k, f in opdef.lowerings.items())
    if opdef.random:
        assert opdef.effect, f"op {name!r} draws random numbers but is not an effect"


def test_unknown_traits_and_double_registration_are_refused():
    with pytest.raises(TypeError, match="unknown traits"):
        defop("test_registry_bad_trait", lambda x: x, elementwize=True)(lambda xp, x: x)
    assert "test_registry_bad_trait" not in OPS
    with pytest.raises(ValueError, match="registered twice"):
        defop("add", lambda a, b: a)(lambda xp, a, b: a)
    with pytest.raises(ValueError, match="already has a lowering"):
        deflowering("neg", "python_scalar")(lambda x: x)


# ------------------------------------------------------------------ traits against the kernels
@pytest.mark.parametrize("name", names_with("out_ok"))
def test_out_ok_ops_are_ufuncs(name):
    assert OPS[name].ufunc is not None, f"op {name!r} may write through out= but names no ufunc"


@pytest.mark.parametrize("name", names_where(lambda d: d.ufunc is not None))
def test_ufunc_ops_equal_their_ufunc(name):
    for seed in range(3):
        inputs, attrs = sample(name, seed)
        assert len({a.dtype for a in inputs}) == 1
        np.testing.assert_array_equal(run(name, inputs, attrs), getattr(np, OPS[name].ufunc)(*inputs))


@pytest.mark.parametrize("name", names_where(lambda d: d.infix is not None))
def test_infix_symbol_computes_the_ufunc_on_numpy_scalars(name):
    # generated code computes these with the Python operator on numpy scalars (codegen.py)
    opdef = OPS[name]
    assert opdef.ufunc is not None and _arity(opdef) == 2
    for dtype in ("float32", "float64", "int64", "int32"):
        a, b = np.asarray(7, dtype)[()], np.asarray(3, dtype)[()]
        got = PYTHON_OPERATORS[opdef.infix](a, b)
        want = getattr(np, opdef.ufunc)(a, b)
        assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, (name, dtype)


@pytest.mark.parametrize("name", names_where(lambda d: d.lowerings.get("python_scalar")))
def test_python_scalar_lowerings_compute_the_ufunc(name):
    opdef = OPS[name]
    n = _arity(opdef)
    def takes(dtype):
        try:
            opdef.infer(*[TensorType((), dtype)] * n)
            return True
        except ShapeError:
            return False

    # the dtypes the op takes: floats and integers, or (bitwise ops) integers and bools
    dtypes = [d for d in ("float32", "float64", "int64") if takes(d)] + ([] if takes("float32") else ["bool"])
    checked = 0
    for dtype in dtypes:
        checked += 1
        args = [np.asarray(k + 2 if dtype != "bool" else k % 2 == 0, dtype)[()] for k in range(n)]
        expr = opdef.lowering("python_scalar")(*[f"a{k}" for k in range(n)])
        got = eval(expr, {}, {f"a{k}": a for k, a in enumerate(args)})  # noqa: S307 - the runtime's own text
        want = run(name, args, {})
        assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, (name, dtype)
    assert checked >= 2, name


@pytest.mark.parametrize("name", names_with("comparison"))
def test_comparisons_return_bool(name):
    inputs, attrs = sample(name)
    assert infer(name, inputs, attrs).dtype == "bool"
    assert run(name, inputs, attrs).dtype == np.bool_


@pytest.mark.parametrize("name", names_with("commutative"))
def test_commutative_ops_ignore_operand_order(name):
    assert _arity(OPS[name]) == 2
    for seed in range(3):
        (a, b), attrs = sample(name, seed)
        np.testing.assert_array_equal(run(name, [a, b], attrs), run(name, [b, a], attrs))


@pytest.mark.parametrize("name", names_with("associative"))
def test_associative_ops_regroup(name):
    rng = np.random.default_rng(0)
    a, b, c = (rng.integers(1, 5, size=(3, 4)) for _ in range(3))  # small integers: exact
    np.testing.assert_array_equal(run(name, [run(name, [a, b], {}), c], {}), run(name, [a, run(name, [b, c], {})], {}))


@pytest.mark.parametrize("name", names_where(lambda d: d.identity is not None))
def test_identity_elements(name):
    opdef = OPS[name]
    x = np.random.default_rng(0).standard_normal((3, 4))
    e = np.full_like(x, opdef.identity)
    np.testing.assert_array_equal(run(name, [x, e], {}), x)
    if opdef.commutative:
        np.testing.assert_array_equal(run(name, [e, x], {}), x)
    else:  # declaring only a right identity must be because the left one fails
        assert not np.array_equal(run(name, [e, x], {}), x)


@pytest.mark.parametrize("name", names_with("fresh"))
def test_fresh_ops_never_return_an_input_buffer(name):
    inputs, attrs = sample(name)
    out = run(name, inputs, attrs)
    for o in out if isinstance(out, tuple) else (out,):  # (an op of several outputs: each of them)
        for a in inputs:
            assert not np.shares_memory(o, a), f"op {name!r} is declared fresh but its output shares an input's memory"


@pytest.mark.parametrize("name", names_with("movement"))
def test_movement_ops_only_move_elements(name):
    (x,), attrs = sample(name)
    out = np.asarray(run(name, [x], attrs))
    assert out.dtype == x.dtype
    if out.size == x.size:
        np.testing.assert_array_equal(np.sort(out, axis=None), np.sort(x, axis=None))
    else:  # a broadcast repeats elements: every one of them is one of the input's
        assert np.isin(out, x).all()


@pytest.mark.parametrize("name", names_with("writes_input"))
def test_indexed_writes_return_a_written_copy_of_input_0(name):
    inputs, attrs = sample(name)
    before = inputs[0].copy()
    out = run(name, inputs, attrs)
    np.testing.assert_array_equal(inputs[0], before)  # the input itself is never written
    assert out.shape == before.shape and out.dtype == before.dtype and not np.shares_memory(out, inputs[0])
    assert not np.array_equal(out, before)


@pytest.mark.parametrize("name", names_where(lambda d: d.method is not None))
def test_method_reductions_equal_the_array_method(name):
    method, kinds = OPS[name].method
    rng = np.random.default_rng(0)
    for dtype in {"f": "float32", "i": "int64", "u": "uint8", "b": "bool"}.keys() & set(kinds):
        x = _array(rng, {"f": "float32", "i": "int64", "u": "int64", "b": "bool"}[dtype])
        want = run(name, [x], {"axes": None, "keepdims": False})
        got = getattr(x, method)()
        assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, (name, x.dtype)


@pytest.mark.parametrize("name", names_with("float_inputs"))
def test_float_input_ops_compute_integers_in_float(name):
    opdef = OPS[name]
    n = _arity(opdef) or 1
    ints = [np.arange(1, 13, dtype="int64").reshape(3, 4) for _ in range(n)]
    assert infer(name, ints, {}).dtype == "float32"
    assert run(name, ints, {}).dtype == np.float32


@pytest.mark.parametrize("name", names_where(lambda d: d.promotes != ()))
def test_promoted_inputs_follow_the_shape_rule(name):
    # the kernel promotes mixed dtypes by itself, to the dtype the shape rule gives
    inputs, attrs = sample(name)
    positions = range(len(inputs)) if OPS[name].promotes is None else OPS[name].promotes
    k = list(positions)[-1]
    inputs = list(inputs)
    inputs[k] = (inputs[k] * 4 + 1).astype("int32") if inputs[k].dtype.kind == "f" else inputs[k].astype("float32")
    assert np.asarray(run(name, inputs, attrs)).dtype.name == infer(name, inputs, attrs).dtype


@pytest.mark.parametrize("name", names_with("random"))
def test_random_ops_draw_from_the_shared_generator(name):
    inputs, attrs = sample(name)
    RNG.seed(5)
    first = run(name, inputs, attrs)
    second = run(name, inputs, attrs)
    RNG.seed(5)
    again = run(name, inputs, attrs)
    np.testing.assert_array_equal(first, again)  # the seed decides the draws
    assert not np.array_equal(first, second)     # and each call draws anew


# ------------------------------------------------------------------ no op tables elsewhere
RUNTIME_DIR = os.path.dirname(d2s_runtime.__file__)
REGISTRY_DIR = os.path.join(RUNTIME_DIR, "ops")


def _module_level_op_tables(path):
    """``(line, name, ops)`` of each module-level set/tuple/list/dict literal (also wrapped in a
    call such as ``frozenset({...})``) naming two or more registered ops."""
    found = []
    for node in ast.parse(open(path, encoding="utf-8").read()).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        value = node.value
        if isinstance(value, ast.Call) and value.args:
            value = value.args[0]
        elts = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", [])
        ops = {e.value for e in elts if isinstance(e, ast.Constant) and e.value in OPS}
        if len(ops) >= 2:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found.append((node.lineno, getattr(target, "id", "?"), sorted(ops)))
    return found


def test_no_runtime_module_keeps_a_table_of_op_names():
    tables = []
    for d, _, files in os.walk(RUNTIME_DIR):
        if os.path.commonpath([d, REGISTRY_DIR]) == REGISTRY_DIR:
            continue  # the registry itself: ops declare their traits where they are registered
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                tables += [f"{os.path.relpath(path, RUNTIME_DIR)}:{line} {name} {ops}"
                           for line, name, ops in _module_level_op_tables(path)]
    assert not tables, "op facts belong in the registry (a trait in ops/registry.TRAITS): " + "; ".join(tables)


def test_the_table_finder_finds_a_table(tmp_path):
    # the check above must be able to fail
    path = tmp_path / "consumer.py"
    path.write_text('FAST = {"add", "mul"}\nPAIR = dict(x=1)\nONE = ("add",)\nKINDS = frozenset(["neg", "exp"])\n')
    assert [(name, ops) for _, name, ops in _module_level_op_tables(str(path))] == [
        ("FAST", ["add", "mul"]), ("KINDS", ["exp", "neg"])]


def test_shape_errors_are_caught_as_pytorch_code_catches_them():
    # PyTorch raises RuntimeError for inputs an op cannot take; code written for it catches that
    import d2s
    for bad in (lambda: d2s.ones(2) + d2s.ones(3), lambda: -d2s.tensor([True]),
                lambda: d2s.ones(2, 3) @ d2s.ones(2, 3),
                lambda: OPS["add"].infer(TensorType((2,), "float32"), TensorType((3,), "float32"))):
        with pytest.raises(RuntimeError) as err:
            bad()
        assert isinstance(err.value, ShapeError) and isinstance(err.value, ValueError)
