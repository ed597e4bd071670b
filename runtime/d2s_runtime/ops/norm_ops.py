"""The normalization primitive behind BatchNorm, LayerNorm, GroupNorm and InstanceNorm:
``normalize`` (zero mean, unit variance over some axes; it also returns the mean and the biased
variance, which BatchNorm's running statistics need) and its gradient ``normalize_grad``.

Each layer is ``normalize`` over its axes (after a reshape for GroupNorm) followed by its
per-channel or per-element scale and shift, so one kernel and one backward formula serve all
four, with two passes over the data for the statistics instead of one op per step of the
formula.
"""
import numpy as np

from .registry import ShapeError, TensorType, deflowering, defop
from .rules import fmt_shape


def _mean_kept(xp, x, ax, count=None):
    """``xp.mean(x, axis=ax, keepdims=True)``. For float32/float64 numpy arrays it runs the two
    ufunc calls np.mean itself makes: the sum, then its division by the count, without np.mean's
    Python-level argument handling (a decode step normalizes a few hundred elements, where that
    handling costs more than the arithmetic). np.mean divides by the count as an intp, in
    float64, then rounds to the array's dtype; ``count`` is the count in that dtype where it is
    exact (below 2**24), whose division in the dtype gives the same values (a float32 quotient
    of float32 operands rounded from float64 is the correctly rounded one: 53 >= 2 * 24 + 2)."""
    if xp is np and type(x) is np.ndarray and x.dtype.char in "fd" and x.size:
        s = np.add.reduce(x, axis=ax, keepdims=True)
        if count is not None:
            s /= count
            return s
        n = 1
        for a in ax:
            n *= x.shape[a]
        return np.true_divide(s, np.intp(n), out=s, casting="unsafe")
    return xp.mean(x, axis=ax, keepdims=True)


def _exact_count(x, ax):
    """The number of elements per statistic as a scalar of ``x``'s float dtype where that is
    exact (see ``_mean_kept``), else None."""
    if type(x) is not np.ndarray or x.dtype.char not in "fd":
        return None
    n = 1
    for a in ax:
        n *= x.shape[a]
    return x.dtype.type(n) if 0 < n < 2 ** 24 else None


_AXES = {}  # (op, axes, ndim) -> the checked axes (a layer normalizes over the same ones each call)


def _norm_axes(op, axes, ndim):
    key = (op, tuple(axes) if isinstance(axes, (list, tuple)) else axes, ndim)
    try:
        return _AXES[key]
    except (KeyError, TypeError):
        pass
    out = _check_axes(op, axes, ndim)
    if len(_AXES) < 1024:
        try:
            _AXES[key] = out
        except TypeError:  # (unhashable axes)
            pass
    return out


def _check_axes(op, axes, ndim):
    if not axes:
        raise ShapeError(f"{op}: needs at least one axis to normalize over")
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ShapeError(f"{op}: axis {a} is out of range for a tensor with {ndim} dims")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {list(axes)}")
    return tuple(sorted(out))


def _stat_shape(shape, axes):
    return tuple(1 if a in axes else d for a, d in enumerate(shape))


def _normalize_infer(x, axes, eps=1e-5):
    ax = _norm_axes("normalize", axes, x.ndim)
    if not x.dtype.startswith("float"):
        raise ShapeError(f"normalize: needs a floating tensor, got {x.dtype} {fmt_shape(x.shape)}")
    stat = TensorType(_stat_shape(x.shape, ax), x.dtype)
    return TensorType(x.shape, x.dtype), stat, stat


@defop("normalize", _normalize_infer, n_out=3)
def _normalize(xp, x, axes, eps=1e-5):
    """``(x - mean) / sqrt(var + eps)`` over ``axes``, with the mean and the biased variance
    (keepdims shapes): (y, mean, var). Two passes: the mean, then the centred squares."""
    ax = _norm_axes("normalize", axes, x.ndim)
    count = _exact_count(x, ax) if xp is np else None
    if count is not None and x.size:  # (_mean_kept's steps for a float numpy array, inline)
        mean = np.add.reduce(x, axis=ax, keepdims=True)
        mean /= count
        d = x - mean
        var = np.add.reduce(d * d, axis=ax, keepdims=True)
        var /= count
        inv = 1.0 / np.sqrt(var + x.dtype.type(eps))
        d *= inv
        return d, mean, var
    mean = _mean_kept(xp, x, ax, count)
    d = x - mean
    var = _mean_kept(xp, d * d, ax, count)
    inv = 1.0 / xp.sqrt(var + x.dtype.type(eps))
    d *= inv
    return d, mean, var


def _normalize_grad_infer(g, y, var, gmean, gvar, axes, eps=1e-5):
    _norm_axes("normalize_grad", axes, y.ndim)
    return TensorType(y.shape, g.dtype)


@defop("normalize_grad", _normalize_grad_infer)
def _normalize_grad(xp, g, y, var, gmean, gvar, axes, eps=1e-5):
    """d normalize / d x given the gradients of its three outputs: ``g`` of ``y``, ``gmean`` of
    the mean and ``gvar`` of the variance (``var`` is its variance output). With s = 1/sqrt(var
    + eps) and n the count per statistic: ``s * (g - mean(g) - y * mean(g * y)) + gmean / n +
    y * 2 * gvar / (n * s)``, every per-statistic factor folded before touching full tensors."""
    ax = _norm_axes("normalize_grad", axes, y.ndim)
    n = 1
    for a in ax:
        n *= y.shape[a]
    root = xp.sqrt(var + var.dtype.type(eps))
    s = 1.0 / root
    shift = gmean / n - s * xp.mean(g, axis=ax, keepdims=True)
    slope = gvar * (2.0 / n) * root - s * xp.mean(g * y, axis=ax, keepdims=True)
    out = y * slope
    out += g * s
    out += shift
    return out.astype(g.dtype, copy=False)


# ------------------------------------------------------------------ native lowerings
# One loop nest per statistic group, the sums in float64 (at least as accurate as numpy's
# pairwise sums of the kernels above). The normalized axes must be one contiguous range of dims
# (LayerNorm, GroupNorm, InstanceNorm: the input viewed as (outer, n, inner), statistics over the
# middle) or the complement of one (BatchNorm: (N, C, H*W) viewed as (outer, C, inner), statistics
# over outer and inner); anything else is left to the Python backend.
def _layout(e, x, axes):
    """('mid' | 'outer_inner', (start, stop)) of the dims that form the contiguous range."""
    nd = x.ndim
    ax = sorted({e.int(a, "axis") % nd for a in axes}) if nd else []
    if not ax or len(ax) != len(axes):
        e.unsupported("bad axes")
    if ax == list(range(ax[0], ax[-1] + 1)):
        return "mid", (ax[0], ax[-1] + 1)
    keep = [d for d in range(nd) if d not in ax]
    if keep == list(range(keep[0], keep[-1] + 1)):
        return "outer_inner", (keep[0], keep[-1] + 1)
    e.unsupported("the normalized axes are neither one contiguous range of dims nor the complement of one")


def _prod(name, dims):
    return " * ".join(f"{name}.shape[{j}]" for j in dims) or "1"


def _view3(e, v, start, stop):
    """``v`` (contiguous) as (outer, middle, inner) around dims [start, stop)."""
    v = e.contiguous(e.array(v))
    r = e.fresh()
    e.emit(e.indent, f"{r} = {v.name}.reshape(({_prod(v.name, range(start))}, {_prod(v.name, range(start, stop))}, "
           f"{_prod(v.name, range(stop, v.ndim))}))")
    return v, r


def _stat3(e, v):
    """A statistic (keepdims shape) as (groups, 1, 1), in the groups' order."""
    v = e.contiguous(e.array(v))
    r = e.fresh()
    e.emit(e.indent, f"{r} = {v.name}.reshape((-1, 1, 1))")
    return r


def _groups(e, mode, ref, ind):
    """Open the loops over the statistic groups; returns (indent, index of one element given
    the reduced loop's index names, the reduced loops' headers, the count expression, the
    statistic's index)."""
    if mode == "mid":
        o, i = e.fresh(), e.fresh()
        e.emit(ind, f"for {o} in range({ref}.shape[0]):")
        e.emit(ind + 1, f"for {i} in range({ref}.shape[2]):")
        k = e.fresh()
        return (ind + 2, lambda: f"{o}, {k}, {i}", [f"for {k} in range({ref}.shape[1]):"], f"{ref}.shape[1]",
                f"{o}, 0, {i}")
    c = e.fresh()
    e.emit(ind, f"for {c} in range({ref}.shape[1]):")
    o, i = e.fresh(), e.fresh()
    return (ind + 1, lambda: f"{o}, {c}, {i}", [f"for {o} in range({ref}.shape[0]):",
                                                f"for {i} in range({ref}.shape[2]):"],
            f"({ref}.shape[0] * {ref}.shape[2])", f"0, {c}, 0")


def _reduced_loop(e, ind, headers, body):
    for h_ in headers:
        e.emit(ind, h_)
        ind += 1
    for line in body:
        e.emit(ind, line)


def _stat_shape_expr(x_name, x, start, stop, mode):
    """The keepdims shape of the statistics as a tuple expression."""
    red = range(start, stop) if mode == "mid" else [d for d in range(x.ndim) if not start <= d < stop]
    dims = ["1" if d in red else f"{x_name}.shape[{d}]" for d in range(x.ndim)]
    return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"


def _lower_normalize(e, x, axes, eps=1e-5):
    """(y, mean, var) of ``normalize`` as one loop nest per group: a pass for the mean, one for
    the centred squares, one writing y (the Python kernel's formula)."""
    dt = e.out.dtype
    if dt not in ("float32", "float64") or x.dtype != dt or x.ndim == 0:
        e.unsupported("normalize of a non-float or 0-d tensor")
    mode, (start, stop) = _layout(e, x, axes)
    x, xr = _view3(e, x, start, stop)
    ind = e.indent
    T = e.np_type(dt)
    y, mu, va = e.fresh(), e.fresh(), e.fresh()
    stat3 = f"({xr}.shape[0], 1, {xr}.shape[2])" if mode == "mid" else f"(1, {xr}.shape[1], 1)"
    e.emit(ind, f"{y} = np.empty_like({xr})")
    e.emit(ind, f"{mu} = np.empty({stat3}, {T})")
    e.emit(ind, f"{va} = np.empty({stat3}, {T})")
    k_eps = e.const(eps, dt)
    b, at, headers, count, sat = _groups(e, mode, xr, ind)
    s, m, d, v, inv = (e.fresh() for _ in range(5))
    e.emit(b, f"{s} = 0.0")
    _reduced_loop(e, b, headers, [f"{s} = {s} + np.float64({xr}[{at()}])"])
    e.emit(b, f"{m} = {T}({s} / {count})")
    s2 = e.fresh()
    e.emit(b, f"{s2} = 0.0")
    _reduced_loop(e, b, headers, [f"{d} = np.float64({xr}[{at()}] - {m})", f"{s2} = {s2} + {d} * {d}"])
    e.emit(b, f"{v} = {T}({s2} / {count})")
    e.emit(b, f"{inv} = {T}(1.0) / np.sqrt({v} + {k_eps})")
    _reduced_loop(e, b, headers, [f"{y}[{at()}] = ({xr}[{at()}] - {m}) * {inv}"])
    e.emit(b, f"{mu}[{sat}] = {m}")
    e.emit(b, f"{va}[{sat}] = {v}")
    shape = _stat_shape_expr(x.name, x, start, stop, mode)
    ry, rm, rv = e.fresh(), e.fresh(), e.fresh()
    e.emit(ind, f"{ry} = {y}.reshape({x.name}.shape)")
    e.emit(ind, f"{rm} = {mu}.reshape({shape})")
    e.emit(ind, f"{rv} = {va}.reshape({shape})")
    y_t, m_t, v_t = e.out_types
    return (e.new_array(ry, dt, tuple(y_t.shape)), e.new_array(rm, dt, tuple(m_t.shape)),
            e.new_array(rv, dt, tuple(v_t.shape)))


def _lower_normalize_grad(e, g, y, var, gmean, gvar, axes, eps=1e-5):
    """``normalize_grad`` as one loop nest per group: a pass for the sums of g and g*y, one
    writing ``y * slope + g * s + shift`` (the Python kernel's formula and order)."""
    dt = e.out.dtype
    if dt not in ("float32", "float64") or any(t.dtype != dt for t in (g, y, var, gmean, gvar)) or y.ndim == 0:
        e.unsupported("normalize_grad of non-float or mixed-dtype operands")
    mode, (start, stop) = _layout(e, y, axes)
    y, yr = _view3(e, y, start, stop)
    g, gr = _view3(e, g, start, stop)
    vr, gmr, gvr = (_stat3(e, t) for t in (var, gmean, gvar))
    ind = e.indent
    T = e.np_type(dt)
    out = e.fresh()
    e.emit(ind, f"{out} = np.empty_like({yr})")
    k_eps = e.const(eps, dt)
    b, at, headers, count, _ = _groups(e, mode, yr, ind)
    # the statistic's flat index: (outer * inner) groups in 'mid' mode, the channel otherwise
    gidx = at().split(", ")
    flat = f"{gidx[0]} * {yr}.shape[2] + {gidx[2]}" if mode == "mid" else gidx[1]
    sg, sgy, n, root, s, shift, slope = (e.fresh() for _ in range(7))
    e.emit(b, f"{sg} = 0.0")
    e.emit(b, f"{sgy} = 0.0")
    _reduced_loop(e, b, headers, [f"{sg} = {sg} + np.float64({gr}[{at()}])",
                                  f"{sgy} = {sgy} + np.float64({gr}[{at()}] * {yr}[{at()}])"])
    e.emit(b, f"{n} = {count}")
    e.emit(b, f"{root} = np.sqrt({vr}[{flat}, 0, 0] + {k_eps})")
    e.emit(b, f"{s} = {T}(1.0) / {root}")
    e.emit(b, f"{shift} = {T}({gmr}[{flat}, 0, 0] / {n}) - {s} * {T}({sg} / {n})")
    e.emit(b, f"{slope} = {gvr}[{flat}, 0, 0] * {T}(2.0 / {n}) * {root} - {s} * {T}({sgy} / {n})")
    _reduced_loop(e, b, headers, [f"{out}[{at()}] = {yr}[{at()}] * {slope} + {gr}[{at()}] * {s} + {shift}"])
    res = e.fresh()
    e.emit(ind, f"{res} = {out}.reshape({y.name}.shape)")
    return e.new_array(res, dt, tuple(e.out.shape))


@deflowering("normalize", "native")
def _normalize_native(e, x, axes, eps=1e-5):
    return _lower_normalize(e, x, axes, eps)


@deflowering("normalize_grad", "native")
def _normalize_grad_native(e, g, y, var, gmean, gvar, axes, eps=1e-5):
    return _lower_normalize_grad(e, g, y, var, gmean, gvar, axes, eps)
