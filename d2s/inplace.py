"""PyTorch's in-place tensor surface: ``add_ sub_ mul_ div_ zero_ fill_ copy_ clamp_``, the
augmented operators ``+= -= *= /=`` and ``.data``.

Eagerly, an in-place op writes its result into the tensor's own array, so every tensor
sharing that array (``t.data``, ``t.detach()``) sees it, and bumps the tensor's version
counter (and that of the tensor it was detached from): a backward that needs the old value
then raises instead of computing a wrong gradient. When autograd records the op (the tensor or
the other operand requires grad), the tensor takes the op's node as its ``grad_fn``, as in
PyTorch; a leaf that requires grad refuses in-place ops outside ``no_grad()``. (``.data`` and
the version-sharing ``detach()`` are Tensor's own.)

Every in-place update goes through :func:`write` (the methods here, ``x[idx] = v``, and those
other modules add to ``RESULTS``): it computes the new value out of place and puts it in place.
On a **view** (``y[0]``, ``y.t()``, ``y.view(-1)``, a ``split`` piece) the write goes to the
view's base with PyTorch's autograd semantics, eagerly and in programs alike: see
``d2s/views.py``, which documents the design (a view records its root and replayable steps;
the new value is written back through the steps' inverses, the root taking that history).

In a program being built (``to_static``, ``build_program``) or under a tracer, the tensor
object is rebound to the out-of-place result (a traced one keeps its array, which takes the
values), and the converter rebinds the name (see
``d2s/transformers/inplace_calls.py``). Inside a tensor ``if`` or loop the object itself is
carried out of the ``cond``/``while`` op (``ProgramBuilder.note_inplace``), so every alias of it
(another name, a list holding it) sees the update, as in eager code. Writing in
place to a parameter, a buffer or any tensor living outside the program is refused there with
an error naming what to write instead; to_static copies an argument updated in place back into
the caller's tensor after each call, as eager code writes into it, and module buffers updated
as ``self.buf += v`` or ``self.buf.add_(v)`` statements become attribute writes, which to_static
writes back after each call. A buffer updated any other way (``self.buf[0] = v``, through a
view, through another name) names a var of the program from then on
(``ProgramBuilder.symbolize``), and its final value is written back after each call.
"""
import operator
import weakref

import numpy as np
from d2s_runtime.dtypes import checked_fill

from ._state import STATE
from . import ops as _ops
from .ops import random as _random, selection as _selection
from .ops import broadcast_to, cast, full_like, where
from .ops import indexing as _indexing
from . import views
from .autograd.grad_mode import no_grad
from .tensor import Tensor, tensor_method
from .user_errors import at_user_line


# -------------------------------------------------------------- the out-of-place results
def _full_mask(s):
    return full_like(s, True, dtype="bool")


def _replaced(s, value):
    """``value`` (broadcast, in s's dtype) in place of s; recorded as a ``where`` so that the
    gradient reaching s is zero and a tensor ``value`` gets its share."""
    if not isinstance(value, Tensor):
        value = checked_fill(value, str(s.dtype))  # (uint8's -1 is 255, as PyTorch's)
    if isinstance(value, Tensor):
        if value.dtype != s.dtype:
            value = cast(value, s.dtype)
    elif not _recording(s, ()) and not s.is_symbolic and not STATE.hooked:
        return full_like(s, value)
    if _recording(s, (value,)) or s.is_symbolic or STATE.hooked:
        out = where(_full_mask(s), value, s)
        return out if out.dtype == s.dtype else cast(out, s.dtype)
    return broadcast_to(value, s.shape)


def _draws(s, dist, a, b, generator):
    return _random._drawn_like(s, dist, a, b, generator)


def _scaled(other, alpha):
    return other if alpha == 1 else other * alpha


RESULTS = {
    "add_": lambda s, other, alpha=1: s + _scaled(other, alpha),
    "sub_": lambda s, other, alpha=1: s - _scaled(other, alpha),
    "mul_": lambda s, other: s * other,
    "div_": lambda s, other, rounding_mode=None: s / other if rounding_mode is None else _ops.div(
        s, other, rounding_mode=rounding_mode),
    "relu_": lambda s: _ops.relu(s),
    "zero_": lambda s: _replaced(s, 0),
    "fill_": lambda s, value: _replaced(s, value),
    "copy_": lambda s, src: _replaced(s, src),
    "clamp_": lambda s, min=None, max=None: s.clip(min, max),
    # indexing and random fills (d2s.ops.indexing, d2s.ops.random)
    "masked_fill_": lambda s, mask, value: _ops.masked_fill(s, mask, value),
    "masked_scatter_": lambda s, mask, source: _ops.masked_scatter(s, mask, source),
    "index_copy_": lambda s, dim, index, source: _ops.index_copy(s, dim, index, source),
    "index_add_": lambda s, dim, index, source, alpha=1: _ops.index_add(s, dim, index, source, alpha=alpha),
    "index_fill_": lambda s, dim, index, value: _ops.index_fill(s, dim, index, value),
    "index_put_": lambda s, indices, values, accumulate=False: _ops.index_put(s, indices, values, accumulate),
    "renorm_": lambda s, p, dim, maxnorm: _ops.renorm(s, p, dim, maxnorm),
    "ldexp_": lambda s, other: _ops.ldexp(s, other),
    "put_": lambda s, index, source, accumulate=False: _ops.put(s, index, source, accumulate),
    "index_reduce_": lambda s, dim, index, source, reduce, include_self=True: _ops.index_reduce(
        s, dim, index, source, reduce, include_self=include_self),
    "nextafter_": lambda s, other: _ops.nextafter(s, other),
    "scatter_": lambda s, dim, index, src=None, value=None, reduce=None: _ops.scatter(s, dim, index, src, value,
                                                                                      reduce=reduce),
    "scatter_add_": lambda s, dim, index, src: _ops.scatter_add(s, dim, index, src),
    "scatter_reduce_": lambda s, dim, index, src, reduce, include_self=True: _ops.scatter_reduce(
        s, dim, index, src, reduce, include_self=include_self),
    "fill_diagonal_": lambda s, fill_value, wrap=False: _selection._fill_diagonal_values(s, fill_value, wrap),
    "uniform_": lambda s, a=0.0, b=1.0, generator=None: _draws(s, "uniform", float(a), float(b), generator),
    "normal_": lambda s, mean=0.0, std=1.0, generator=None: _draws(s, "normal", float(mean), float(std), generator),
    "exponential_": lambda s, lambd=1.0, generator=None: _draws(s, "exponential", float(lambd), 0.0, generator),
    "geometric_": lambda s, p, generator=None: _draws(s, "geometric", float(p), 0.0, generator),
    "cauchy_": lambda s, median=0.0, sigma=1.0, generator=None: _draws(s, "cauchy", float(median), float(sigma),
                                                                        generator),
    "log_normal_": lambda s, mean=1.0, std=2.0, generator=None: _draws(s, "log_normal", float(mean), float(std),
                                                                        generator),
    "bernoulli_": lambda s, p=0.5, generator=None: _random._bernoulli_values(s, p, generator),
    "random_": lambda s, *bounds, generator=None, **kw: _random._random_values(s, *bounds, generator=generator, **kw),
    # element-wise math and triangles (d2s/ops/elementwise.py, pointwise.py, linalg.py)
    **{f"{_name}_": (lambda name: lambda s, *args, **kwargs: getattr(s, name)(*args, **kwargs))(_name)
       for _name in ("clamp_min", "clamp_max", "clip", "abs", "absolute", "neg", "negative", "sign", "square",
                     "reciprocal", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
                     "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                     "arcsin", "arccos", "arctan", "sigmoid", "erf", "erfc", "erfinv", "floor", "ceil", "round",
                     "trunc", "frac", "fix", "nan_to_num", "pow", "float_power", "remainder", "fmod", "floor_divide",
                     "true_divide", "multiply", "divide", "subtract", "atan2", "arctan2", "hypot", "lerp",
                     "addcmul", "addcdiv", "logical_and", "logical_or", "logical_xor", "logical_not",
                     "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                     "bitwise_right_shift", "tril", "triu", "addmm", "addmv",
                     "addbmm", "baddbmm", "addr", "fmax", "fmin", "maximum", "minimum")},
    # element-wise functions added with d2s.ops.special, running sums, and comparisons (the bool
    # result written as 0/1 in the tensor's own dtype, as PyTorch's ge_ ... do)
    **{f"{_name}_": (lambda name: lambda s, *args, **kwargs: getattr(s, name)(*args, **kwargs))(_name)
       for _name in ("sgn", "copysign", "deg2rad", "rad2deg", "logit", "xlogy", "heaviside", "sinc", "lgamma",
                     "digamma", "polygamma", "gcd", "lcm", "mvlgamma", "arccosh", "arcsinh", "arctanh")},
    "cumsum_": lambda s, dim, *, dtype=None: s.cumsum(dim, dtype=dtype),
    "cumprod_": lambda s, dim, *, dtype=None: s.cumprod(dim, dtype=dtype),
    **{f"{_name}_": (lambda name: lambda s, other: getattr(s, name)(other).cast(s.dtype))(_name)
       for _name in ("eq", "ne", "ge", "gt", "le", "lt", "greater", "greater_equal", "less", "less_equal",
                     "not_equal")},
    "__iadd__": lambda s, other: s + other,
    "__isub__": lambda s, other: s - other,
    "__imul__": lambda s, other: s * other,
    "__itruediv__": lambda s, other: s / other,
    # (without these, Python would run `x //= 2` as `x = x // 2`: a new tensor, where PyTorch
    # writes x, so another name for x, or a view of it, saw no change)
    "__ifloordiv__": lambda s, other: s // other,
    "__imod__": lambda s, other: s % other,
    "__ipow__": lambda s, other: s ** other,
    "__iand__": lambda s, other: s & other,
    "__ior__": lambda s, other: s | other,
    "__ixor__": lambda s, other: s ^ other,
    "__ilshift__": lambda s, other: s << other,
    "__irshift__": lambda s, other: s >> other,
}
INPLACE_METHODS = frozenset(RESULTS)


def out_of_place(t, name, *args, **kwargs):
    """What ``t.<name>(*args)`` computes, as a new tensor (``t`` untouched)."""
    return RESULTS[name](t, *args, **kwargs)


# -------------------------------------------------------------- the in-place update
def _recording(t, others):
    if not STATE.grad_enabled:
        return False
    if t.requires_grad:
        return True
    return any(isinstance(o, Tensor) and o.requires_grad for o in others)


def bump(t):
    """Count a write into t (and into the tensors it shares elements with)."""
    t._version += 1
    base = getattr(t, "_base", None)
    while base is not None:  # t.detach() shares its version with t, as in PyTorch
        base._version += 1
        base = getattr(base, "_base", None)


def _update(t, name, args, kwargs):
    if name in _AUG and getattr(type(t), "_d2s_stands_for_number", False):
        # a loop counter or Python number carried by converted code: `i += 1` rebinds the
        # name as it does for the Python int it stands for, never mutating a shared object
        return RESULTS[name](t, *args, **kwargs)
    what = f"{name.strip('_')}_()" if not name.startswith("__") else _AUG.get(name, name)
    return write(t, what, lambda s: RESULTS[name](s, *args, **kwargs), tuple(args) + tuple(kwargs.values()))


def _input_write_in_branch(t):
    """Whether ``t`` is an input of a to_static program written inside a tensor branch or loop
    body: eager code writes into the caller's tensor (and refuses one requiring grad) only on
    inputs that run that block, so the refusal waits for the call (``_InputWrite`` refuses a
    write that changes such a tensor) instead of failing every input at the build."""
    b = STATE.builder
    if not t.is_symbolic or b is None or not getattr(b, "to_static_enabled", False) or b.block is b.program.block:
        return False
    return t._var.name in b.program.inputs


def write(t, what, compute, others=(), needs_old=True):
    """Update ``t`` in place to ``compute(t)`` (an out-of-place computation of its new value),
    with PyTorch's semantics: eagerly into t's array (and so its base's, for a view), recording
    autograd where t or one of ``others`` takes part in it; in a program (or a trace) by
    re-pointing t, or for a view its root (d2s/views.py). ``needs_old``: whether the autograd
    node of ``compute`` reads t's old value (a copy is saved for it then)."""
    view = t._view
    if view is not None:
        views.fresh(t)
    if STATE.grad_enabled and t.requires_grad and t.grad_fn is None and not _input_write_in_branch(t):
        raise RuntimeError(
            f"{what}: a leaf tensor that requires grad is being used in an in-place operation; "
            "update it under `with d2s.no_grad():` (as an optimizer step does) or work on a copy "
            "(t = t.clone())")
    if view is not None:
        views.check_writable(t, what, STATE.grad_enabled and (view.root.requires_grad or _recording(t, others)))
    if t.is_symbolic or STATE.hooked:
        return _rebind(t, what, compute)
    if not _recording(t, others):
        out = compute(t)
        if view is not None and not views.writeable(t._data):
            _write_through_root(t, out, what)  # a read-only view (a diagonal): through its root
        else:
            _write(t, out, what)
        bump(t)
        return t
    if view is not None and view.refusal is not None:
        views.refuse_untracked(t, what)
    # The node may save the old value: give it a copy, since t's own array is overwritten below.
    src = views.alias(t)
    if needs_old:
        src._data = t._data.copy()
    out = _as_target_dtype(t, compute(src), what)
    if view is None:
        _write(t, out, what)
        bump(t)
        views.take_history(t, out)
        return t
    _check_shape(t, out, what)
    root = view.root
    new_root = views.written_back(views.alias(root), view.steps, out)
    _write(root, new_root, what)  # the values reach t (and every other view) through the root's array
    bump(t)
    views.take_history(root, new_root)
    views.take_history(t, out)
    view.version = root._version
    return t


def _write_through_root(t, out, what):
    """Untracked write of ``out`` into view ``t`` whose own array is read-only: the root takes
    the value written back, and ``t`` shows it through the shared memory."""
    view = t._view
    if view.refusal is not None:
        views.refuse_untracked(t, what)
    _check_shape(t, out, what)
    with no_grad():
        new_root = views.written_back(views.alias(view.root), view.steps, _as_target_dtype(t, out, what))
    _write(view.root, new_root, what)


def _can_cast(src, dst):
    """PyTorch's rule for writing a result into a tensor in place (``canCast``): any dtype to any
    other, but not a float to an integer or bool, a complex to a real, or a number to bool; so
    int32 into uint8 wraps, where NumPy's "same_kind" refuses signed into unsigned."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src.kind == "c" and dst.kind != "c":
        return False
    if src.kind == "f" and dst.kind in "iub":
        return False
    return not (dst.kind == "b" and src.kind != "b")


def _as_target_dtype(t, out, what):
    if out.dtype == t.dtype:
        return out
    if not _can_cast(np.dtype(str(out.dtype)), np.dtype(str(t.dtype))):
        raise RuntimeError(f"{what}: result type {out.dtype} can't be cast to the desired output type "
                           f"{t.dtype} of the tensor updated in place; use the out-of-place form (x = x + y) "
                           "or cast first")
    return out.cast(t.dtype)


def _check_shape(t, out, what):
    ts, os_ = _static_shape(t), _static_shape(out)
    if len(ts) != len(os_) or any(a is not None and c is not None and a != c for a, c in zip(ts, os_)):
        raise RuntimeError(f"{what}: the result has shape {os_}, which does not match the shape {ts} "
                           "of the tensor updated in place (an in-place op cannot grow its target); use the "
                           "out-of-place form (x = x + y)")


def _write(t, out, what):
    """Write ``out``'s values into ``t``'s array, with PyTorch's shape and dtype rules."""
    arr = out._data
    dst = t._data
    if tuple(arr.shape) != tuple(dst.shape):
        raise RuntimeError(
            f"{what}: the result has shape {tuple(arr.shape)}, which does not match the shape "
            f"{tuple(dst.shape)} of the tensor updated in place (an in-place op cannot grow its target); "
            "use the out-of-place form (x = x + y)")
    if arr.dtype != dst.dtype and not _can_cast(arr.dtype, dst.dtype):
        raise RuntimeError(
            f"{what}: result type {arr.dtype} can't be cast to the desired output type {dst.dtype} "
            f"of the tensor updated in place; use the out-of-place form (x = x + y) or cast first")
    try:
        dst[...] = arr
    except ValueError as e:  # a read-only array: a broadcast view
        if t._view is None and getattr(t, "_base", None) is None:
            # its own read-only array (a kernel's broadcast result): nothing else shows its
            # elements, so it may take a new array of the values
            t._data = arr.astype(dst.dtype, copy=True)
            return
        raise RuntimeError(
            f"{what}: this tensor's memory cannot be written to ({e}); it is a broadcast view that "
            "shares elements: update a copy (t = t.clone()) instead") from None


def _rebind(t, what, compute):
    """In a program being built (or traced): the tensor object takes the out-of-place result;
    for a view, its root takes the result written back (d2s/views.py)."""
    view = t._view
    target = t if view is None else view.root
    if view is not None and view.refusal is not None:
        views.refuse_untracked(t, what)
    b = STATE.builder
    if b is not None:
        _refuse_outside_values(b, target, what)
        if not target.is_symbolic and (view is not None or _is_state(b, target)):
            # a module buffer (or, through a view, a tensor made while building) names a var from
            # now on, and to_static writes a buffer's final value back after each call
            b.symbolize(target)
    elif STATE.tracer is not None and not target.is_symbolic:
        _refuse_traced_inputs(STATE.tracer, target, what)
    # a tracer sees the old value under its own object
    src = views.alias(t) if not t.is_symbolic else t
    out = _as_target_dtype(t, compute(src), what)
    _check_shape(t, out, what)
    if view is not None:
        new_root = views.written_back(views.alias(target), view.steps, out)
        _repoint(b, target, new_root)
        _repoint(b, t, out, whole_chain=False)
        view.version = target._version
        return t
    if b is not None and not t.is_symbolic:
        # a concrete tensor made while building (a literal, a loop counter being probed) may
        # be shared by both branches of a tensor `if`: it keeps its value, the name is rebound
        return out
    _repoint(b, t, out)
    return t


def _is_state(b, t):
    """A module buffer or tensor attribute (not a parameter being trained) of a program being
    built."""
    return not t.requires_grad and (getattr(t, "_d2s_parameter", False) or b.state_tensors.get(id(t)) is t)


def _repoint(b, t, out, whole_chain=True):
    """Tensor object ``t`` takes value ``out`` (and its history) in a program or a trace."""
    if b is not None:
        # a tensor from an enclosing block (a value captured by a branch or a loop body) takes
        # the update while the block is built; the control-flow op then carries it out, so
        # every name and container holding the object sees it (see ProgramBuilder.note_inplace)
        b.note_inplace(t)
    tracer = STATE.tracer if b is None else None
    if b is not None and t._view is None and out._var is not None:
        # an in-place update keeps the tensor's own memory, so its layout (d2s/layouts.py)
        views.keep_layout(b, t, out)
    if tracer is not None and t._data is not None and out._data is not None:
        # traced: the values go into t's own array, as eagerly (its layout, and so what a later
        # reshape of it shares, stays eager's), which the trace now reads as out's var
        name = tracer.vars.get(id(out._data))
        _write(t, out, "an in-place update")
        if name is not None:
            tracer._bind(t._data, name)
    else:
        t._data, t._var = out._data, out._var
    if whole_chain:
        bump(t)
    else:
        t._version += 1
    views.take_history(t, out)
    if b is not None:
        b.after_inplace(t)


def _static_shape(t):
    return tuple(t._data.shape) if not t.is_symbolic else tuple(t._var.type.shape)


def _refuse_traced_inputs(tracer, t, what):
    name = tracer.vars.get(id(t._data))
    is_input = name is not None and name in tracer.program.inputs
    if is_input or t.requires_grad or getattr(t, "_d2s_parameter", False):
        kind = "an input" if is_input else "a parameter or buffer"
        raise RuntimeError(
            f"{what} under d2s.jit.trace: in-place update of {kind} of the traced function; the "
            "traced program cannot write into the caller's tensors. Assign a new value instead "
            "(x = x + v) and return it if the caller needs it")


def _refuse_outside_values(b, t, what):
    # the refusal names the user's line (converted code runs under the user's file name)
    if not t.is_symbolic:
        if not (t.requires_grad or getattr(t, "_d2s_parameter", False)):
            return  # a concrete tensor made while building (d2s.tensor(...), a loop counter)
        if not t.requires_grad and getattr(b, "to_static_enabled", False):
            return  # a module buffer: to_static writes its final value back after each call
        kind = "a parameter" if t.requires_grad else "a buffer"
        raise at_user_line(
            f"{what} inside to_static: in-place update of {kind} (shape {tuple(t.shape)}); a program cannot "
            "write into values it reads from outside. Assign the new value instead: for a module buffer "
            "`self.buf = self.buf + v` (written back after each call), for a parameter update it outside "
            "the converted function (an optimizer step)", RuntimeError)
    name = t._var.name
    if id(t) in b.symbolized:
        return  # a module buffer already updated in this program (see ProgramBuilder.symbolize)
    # to_static copies an updated input back into the caller's tensor after each call, as eager
    # code writes into it (d2s.jit.static_function._InputWrite); build_program has no caller
    if (name in b.program.inputs and not getattr(b, "to_static_enabled", False)) or name in b.program.params:
        raise at_user_line(
            f"{what} inside to_static: in-place update of an input of the converted function; the "
            "program cannot write into the caller's tensor. Assign a new value instead (x = x + v), "
            "and return it if the caller needs it", RuntimeError)


# results of in-place updates of module buffers in a program being built: to_static writes
# them into the buffer's own array after each call (the buffer object stays the same)
BUFFER_UPDATES = weakref.WeakValueDictionary()  # id(tensor) -> tensor (tensors compare elementwise)


def call_inplace(obj, name, on_attribute, args, kwargs):
    """What converted code runs for a statement ``<obj>.<name>(*args)`` (and ``obj.a += v``),
    then assigning the result to the same name or attribute: the name is rebound, so the new
    value is carried out of tensor branches and loops. A module buffer reached as an attribute
    (``self.buf.add_(v)``) gets the out-of-place result, so the write becomes an attribute
    write, which to_static writes back after each call."""
    if isinstance(obj, Tensor) and name in RESULTS and on_attribute and STATE.builder is not None \
            and not obj.is_symbolic and getattr(obj, "_d2s_parameter", False) and not obj.requires_grad:
        out = out_of_place(obj, name, *args, **kwargs)
        BUFFER_UPDATES[id(out)] = out
        return out
    if name in _AUG_OPERATORS:  # obj.a += v: Python's own augmented assignment (ints too)
        return _AUG_OPERATORS[name](obj, *args)
    result = getattr(obj, name)(*args, **kwargs)
    return result if isinstance(obj, Tensor) and isinstance(result, Tensor) else obj


_AUG = {"__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=", "__ifloordiv__": "//=",
        "__imod__": "%=", "__ipow__": "**=", "__iand__": "&=", "__ior__": "|=", "__ixor__": "^=",
        "__ilshift__": "<<=", "__irshift__": ">>="}
_AUG_OPERATORS = {"__iadd__": operator.iadd, "__isub__": operator.isub, "__imul__": operator.imul,
                  "__itruediv__": operator.itruediv, "__ifloordiv__": operator.ifloordiv, "__imod__": operator.imod,
                  "__ipow__": operator.ipow, "__iand__": operator.iand, "__ior__": operator.ior,
                  "__ixor__": operator.ixor, "__ilshift__": operator.ilshift, "__irshift__": operator.irshift}


def _method(name):
    def method(self, *args, **kwargs):
        return _update(self, name, args, kwargs)
    method.__name__ = name
    method.__doc__ = f"In-place ``{name}``: writes into this tensor and returns it (PyTorch semantics)."
    return method


# -------------------------------------------------------------- in-place shape methods
SHAPE_METHODS = ("squeeze_", "unsqueeze_", "t_", "transpose_", "swapdims_", "swapaxes_")


def _shape_method(name):
    """``t.squeeze_()`` and the like: ``t`` itself takes the new shape of the same elements (a
    view of what it showed), as PyTorch's in-place shape methods do."""
    def method(self, *args, **kwargs):
        what = f"{name}()"
        op = getattr(Tensor, name[:-1])
        if STATE.grad_enabled and self.requires_grad and self.grad_fn is None:
            raise RuntimeError(f"{what}: a leaf Variable that requires grad is being used in an in-place operation")
        if self.is_symbolic or STATE.hooked:
            b = STATE.builder
            if b is not None:
                _refuse_outside_values(b, self, what)
            seen = op(self, *args, **kwargs) if self._view is not None else None
            _repoint(b, self, op(views.alias(self), *args, **kwargs))
            if seen is not None:  # still a view of its root, one step further
                self._view = seen._view
            return self
        # the history comes from an alias (a node saving its input keeps the old shape), the
        # view record from t itself (its root and steps, one step longer)
        out = op(views.alias(self), *args, **kwargs)
        seen = op(self, *args, **kwargs) if self._view is not None else None
        self._data = out._data
        if seen is not None:
            self._view = seen._view
        bump(self)
        if self.requires_grad:
            views.take_history(self, out)
        return self
    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: this tensor takes the new shape (PyTorch semantics) and is returned."
    return method


for _name in SHAPE_METHODS:
    tensor_method(_name)(_shape_method(_name))


for _name in RESULTS:  # Tensor's in-place methods (see the end of d2s/tensor.py)
    tensor_method(_name)(_method(_name))


_indexing._INPLACE.update(write=write, bump=bump)  # x[idx] = v (d2s.ops.indexing.setitem) writes through write()


# ``torch.relu_(x)`` and the other functional in-place forms PyTorch has at its top level: the
# method of that name, called on the first argument (model code written as torch.sigmoid_(h))
FUNCTIONAL_FORMS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
    "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_",
    "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_",
    "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_")


def _functional_form(name):
    def form(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    form.__name__ = form.__qualname__ = name
    form.__doc__ = f"``input.{name}(...)`` (:meth:`Tensor.{name}`), as ``torch.{name}``: ``input`` written in place."
    return form


FUNCTIONS = {name: _functional_form(name) for name in FUNCTIONAL_FORMS}

