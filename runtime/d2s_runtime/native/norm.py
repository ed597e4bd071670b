"""Native lowerings of the normalization primitive and its gradient (``normalize``,
``normalize_grad``; see ``ops/norm_ops.py``): one loop nest per statistic group, the sums in
float64 (at least as accurate as numpy's pairwise sums of the Python kernels).

The normalized axes must be one contiguous range of dims (LayerNorm, GroupNorm, InstanceNorm:
the input viewed as (outer, n, inner), statistics over the middle) or the complement of one
(BatchNorm: (N, C, H*W) viewed as (outer, C, inner), statistics over outer and inner); anything
else is left to the Python backend. The hooks get the lowerer's ``Emit`` (``e``) and use the
``Lowerer`` behind it (``e._l``), as the builders of ``lower.py`` do.
"""
import numpy as np

from .values import NP_TYPE, _int


def _layout(e, x, axes):
    """('mid' | 'outer_inner', (start, stop)) of the dims that form the contiguous range."""
    nd = x.ndim
    ax = sorted({_int(a, "axis") % nd for a in axes}) if nd else []
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


def _view3(l, v, start, stop):
    """``v`` (contiguous) as (outer, middle, inner) around dims [start, stop)."""
    v = l.contiguous(l.array(v))
    r = l.fresh()
    l.emit(l.indent, f"{r} = {v.name}.reshape(({_prod(v.name, range(start))}, {_prod(v.name, range(start, stop))}, "
                     f"{_prod(v.name, range(stop, v.ndim))}))")
    return v, r


def _stat3(l, v):
    """A statistic (keepdims shape) as (groups, 1, 1), in the groups' order."""
    v = l.contiguous(l.array(v))
    r = l.fresh()
    l.emit(l.indent, f"{r} = {v.name}.reshape((-1, 1, 1))")
    return r


def _groups(l, mode, ref, ind):
    """Open the loops over the statistic groups; returns (indent, index of one element given
    the reduced loop's index names, the reduced loops' headers, the count expression, the
    statistic's index)."""
    if mode == "mid":
        o, i = l.fresh(), l.fresh()
        l.emit(ind, f"for {o} in range({ref}.shape[0]):")
        l.emit(ind + 1, f"for {i} in range({ref}.shape[2]):")
        k = l.fresh()
        return (ind + 2, lambda: f"{o}, {k}, {i}", [f"for {k} in range({ref}.shape[1]):"], f"{ref}.shape[1]",
                f"{o}, 0, {i}")
    c = l.fresh()
    l.emit(ind, f"for {c} in range({ref}.shape[1]):")
    o, i = l.fresh(), l.fresh()
    return (ind + 1, lambda: f"{o}, {c}, {i}", [f"for {o} in range({ref}.shape[0]):",
                                                f"for {i} in range({ref}.shape[2]):"],
            f"({ref}.shape[0] * {ref}.shape[2])", f"0, {c}, 0")


def _reduced_loop(l, ind, headers, body):
    for h_ in headers:
        l.emit(ind, h_)
        ind += 1
    for line in body:
        l.emit(ind, line)


def _stat_shape(x_name, x, start, stop, mode):
    """The keepdims shape of the statistics as a tuple expression."""
    red = range(start, stop) if mode == "mid" else [d for d in range(x.ndim) if not start <= d < stop]
    dims = ["1" if d in red else f"{x_name}.shape[{d}]" for d in range(x.ndim)]
    return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"


def lower_normalize(e, x, axes, eps=1e-5):
    """(y, mean, var) of ``normalize`` as one loop nest per group: a pass for the mean, one for
    the centred squares, one writing y (the Python kernel's formula)."""
    l = e._l
    dt = e.out.dtype
    if dt not in ("float32", "float64") or x.dtype != dt or x.ndim == 0:
        e.unsupported("normalize of a non-float or 0-d tensor")
    mode, (start, stop) = _layout(e, x, axes)
    x, xr = _view3(l, x, start, stop)
    ind = l.indent
    T = NP_TYPE[dt]
    y, mu, va = l.fresh(), l.fresh(), l.fresh()
    stat3 = f"({xr}.shape[0], 1, {xr}.shape[2])" if mode == "mid" else f"(1, {xr}.shape[1], 1)"
    l.emit(ind, f"{y} = np.empty_like({xr})")
    l.emit(ind, f"{mu} = np.empty({stat3}, {T})")
    l.emit(ind, f"{va} = np.empty({stat3}, {T})")
    k_eps = l.const_arg(np.asarray(eps, dtype=dt)[()])
    b, at, headers, count, sat = _groups(l, mode, xr, ind)
    s, m, d, v, inv = (l.fresh() for _ in range(5))
    l.emit(b, f"{s} = 0.0")
    _reduced_loop(l, b, headers, [f"{s} = {s} + np.float64({xr}[{at()}])"])
    l.emit(b, f"{m} = {T}({s} / {count})")
    s2 = l.fresh()
    l.emit(b, f"{s2} = 0.0")
    _reduced_loop(l, b, headers, [f"{d} = np.float64({xr}[{at()}] - {m})", f"{s2} = {s2} + {d} * {d}"])
    l.emit(b, f"{v} = {T}({s2} / {count})")
    l.emit(b, f"{inv} = {T}(1.0) / np.sqrt({v} + {k_eps})")
    _reduced_loop(l, b, headers, [f"{y}[{at()}] = ({xr}[{at()}] - {m}) * {inv}"])
    l.emit(b, f"{mu}[{sat}] = {m}")
    l.emit(b, f"{va}[{sat}] = {v}")
    shape = _stat_shape(x.name, x, start, stop, mode)
    ry, rm, rv = l.fresh(), l.fresh(), l.fresh()
    l.emit(ind, f"{ry} = {y}.reshape({x.name}.shape)")
    l.emit(ind, f"{rm} = {mu}.reshape({shape})")
    l.emit(ind, f"{rv} = {va}.reshape({shape})")
    y_t, m_t, v_t = e.out_types
    return (l.new_array(ry, dt, tuple(y_t.shape)), l.new_array(rm, dt, tuple(m_t.shape)),
            l.new_array(rv, dt, tuple(v_t.shape)))


def lower_normalize_grad(e, g, y, var, gmean, gvar, axes, eps=1e-5):
    """``normalize_grad`` as one loop nest per group: a pass for the sums of g and g*y, one
    writing ``y * slope + g * s + shift`` (the Python kernel's formula and order)."""
    l = e._l
    dt = e.out.dtype
    if dt not in ("float32", "float64") or any(t.dtype != dt for t in (g, y, var, gmean, gvar)) or y.ndim == 0:
        e.unsupported("normalize_grad of non-float or mixed-dtype operands")
    mode, (start, stop) = _layout(e, y, axes)
    y, yr = _view3(l, y, start, stop)
    g, gr = _view3(l, g, start, stop)
    vr, gmr, gvr = (_stat3(l, t) for t in (var, gmean, gvar))
    ind = l.indent
    T = NP_TYPE[dt]
    out = l.fresh()
    l.emit(ind, f"{out} = np.empty_like({yr})")
    k_eps = l.const_arg(np.asarray(eps, dtype=dt)[()])
    b, at, headers, count, _ = _groups(l, mode, yr, ind)
    # the statistic's flat index: (outer * inner) groups in 'mid' mode, the channel otherwise
    gidx = at().split(", ")
    flat = f"{gidx[0]} * {yr}.shape[2] + {gidx[2]}" if mode == "mid" else gidx[1]
    sg, sgy, n, root, s, shift, slope = (l.fresh() for _ in range(7))
    l.emit(b, f"{sg} = 0.0")
    l.emit(b, f"{sgy} = 0.0")
    _reduced_loop(l, b, headers, [f"{sg} = {sg} + np.float64({gr}[{at()}])",
                                  f"{sgy} = {sgy} + np.float64({gr}[{at()}] * {yr}[{at()}])"])
    l.emit(b, f"{n} = {count}")
    l.emit(b, f"{root} = np.sqrt({vr}[{flat}, 0, 0] + {k_eps})")
    l.emit(b, f"{s} = {T}(1.0) / {root}")
    l.emit(b, f"{shift} = {T}({gmr}[{flat}, 0, 0] / {n}) - {s} * {T}({sg} / {n})")
    l.emit(b, f"{slope} = {gvr}[{flat}, 0, 0] * {T}(2.0 / {n}) * {root} - {s} * {T}({sgy} / {n})")
    _reduced_loop(l, b, headers, [f"{out}[{at()}] = {yr}[{at()}] * {slope} + {gr}[{at()}] * {s} + {shift}"])
    res = l.fresh()
    l.emit(ind, f"{res} = {out}.reshape({y.name}.shape)")
    return l.new_array(res, dt, tuple(e.out.shape))
