"""Shared checks for the converter's pattern tests: converted vs eager, on concrete tensors
and through a built program run by the runtime executor."""
import numpy as np

import d2s
import d2s_runtime
from d2s.static.builder import ProgramBuilder
from d2s.static import InputSpec
from d2s.transformers import convert_function


def _leaves(obj):
    if isinstance(obj, (list, tuple)):
        return [x for o in obj for x in _leaves(o)]
    if isinstance(obj, dict):
        return [x for k in obj for x in _leaves(obj[k])]
    return [obj]


def _value(x):
    if isinstance(x, d2s.Tensor):
        return x.numpy()
    if x is None or isinstance(x, str):
        return x
    return np.asarray(x)


def _same(g, e, atol, msg):
    if e is None or isinstance(e, str):
        assert g == e, msg
    else:
        np.testing.assert_allclose(g, e, atol=atol, err_msg=msg)


def build(fn, *args):
    """(program, symbolic result) of ``fn`` on symbolic versions of the tensor ``args``."""
    b = ProgramBuilder()
    with b:
        sym = []
        for a in args:
            if isinstance(a, InputSpec):
                sym.append(b.add_input(a.shape, str(a.dtype)))
            elif isinstance(a, d2s.Tensor):
                sym.append(b.add_input(a.shape, str(a.dtype)))
            else:
                sym.append(a)
        out = fn(*sym)
        tensors = [t for t in _leaves(out) if isinstance(t, d2s.Tensor)]
        b.program.outputs = [b.var_of(t) for t in tensors]
    b.program.block.outputs = list(b.program.outputs)
    b.program.verify()
    b.program._test_params = {n: t.numpy() for n, t in b.param_tensors.items()}
    return b.program, out


def run_static(fn, *args, specs=None):
    """Values of ``fn(*args)`` computed by a built program (leaves in order, Python leaves as is)."""
    conv = convert_function(fn).fn
    program, out = build(conv, *(specs or args))
    arrays = [a.numpy() for a in args if isinstance(a, d2s.Tensor)]
    results = iter(d2s_runtime.Executor(program).run(*arrays, params=program._test_params))
    return [next(results) if isinstance(leaf, d2s.Tensor) else leaf for leaf in _leaves(out)]


def check(fn, *input_sets, dynamic=False, static=True, atol=1e-5):
    """Assert converted ``fn`` equals eager ``fn`` on every input set, run eagerly on concrete
    tensors and as a program (``dynamic``: tensor inputs get unknown dims)."""
    conv = convert_function(fn).fn
    for args in input_sets:
        if not isinstance(args, tuple):
            args = (args,)
        expected = [_value(v) for v in _leaves(fn(*args))]
        got = [_value(v) for v in _leaves(conv(*args))]
        assert len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _same(g, e, atol, f"converted (eager) on {args}")
        if not static:
            continue
        specs = None
        if dynamic:
            specs = [InputSpec([None] * a.ndim, a.dtype) if isinstance(a, d2s.Tensor) else a for a in args]
        got = [_value(v) for v in run_static(fn, *args, specs=specs)]
        assert len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _same(g, e, atol, f"program on {args}")


def t(*values, dtype=None):
    """A tensor from values (a float list unless dtype says otherwise)."""
    return d2s.tensor(values[0] if len(values) == 1 else list(values), dtype=dtype)


def program_of(fn, *args):
    return build(convert_function(fn).fn, *args)[0]


def transformed(source, *transformers):
    """The code of function ``source`` after running only ``transformers`` (classes) over it,
    re-analyzing names before each, as the pipeline does."""
    import ast
    import textwrap

    import gast

    from d2s.transformers import analysis
    from d2s.transformers.base import Context
    from d2s.transformers.naming import Namer

    module = gast.parse(textwrap.dedent(source))
    func = module.body[0]
    ctx = Context("<test>", Namer(module), func)
    for cls in transformers:
        analysis.analyze(module)
        cls(ctx).transform(func)
    return ast.unparse(gast.gast_to_ast(func)).strip()


def same_code(got, expected):
    import textwrap
    norm = lambda s: "\n".join(line.rstrip() for line in textwrap.dedent(s).strip().splitlines() if line.strip())  # noqa: E731
    assert norm(got) == norm(expected), f"got:\n{got}"


def assert_exactly_eager(got, want, atol=0.0, float_rtol=0.0):
    """``got`` (a converted call's result) is what eager code returned: the same Python types
    all the way down, tensors of the same dtype and shape and (to rtol 1e-6) values."""
    assert type(got) is type(want), (got, want)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_exactly_eager(g, w, atol, float_rtol)
    elif isinstance(want, d2s.Tensor):
        assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape), (got, want)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=atol)
    elif isinstance(want, float) and float_rtol:
        assert abs(got - want) <= float_rtol * max(1.0, abs(want)), (got, want)
    else:
        assert got == want, (got, want)


def check_exact(fn, inputs, **tolerances):
    """``to_static(fn)`` returns exactly what ``fn`` returns on each argument tuple of ``inputs``."""
    static = d2s.jit.to_static(fn)
    for args in inputs:
        assert_exactly_eager(static(*args), fn(*args), **tolerances)
    return static


def assert_same_outcome(fn, static, *args):
    """``static(*args)`` (a converted ``fn``) ends as eager ``fn(*args)`` does: the same result
    exactly (Python types all the way down, dicts included; floats and tensor values bit for
    bit), or an error of the same type whose message starts with eager's."""
    try:
        want = fn(*args)
    except Exception as e:
        try:
            got = static(*args)
        except type(e) as g:
            assert str(g).startswith(str(e)), (g, e)
            return
        raise AssertionError(f"eager raised {e!r}, the converted call returned {got!r}")
    _exactly(static(*args), want)


def _exactly(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _exactly(g, w)
    elif isinstance(want, dict):
        assert list(got) == list(want), (got, want)
        for k in want:
            _exactly(got[k], want[k])
    elif isinstance(want, d2s.Tensor):
        assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape), (got, want)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    elif isinstance(want, float) and want != want:
        assert got != got, (got, want)
    else:
        assert got == want, (got, want)
