"""Views: tensors that show their base's elements, as PyTorch's views do.

A view op (``x[0]``, ``x[:, 1:3]``, ``x.view(-1)``, ``x.t()``, ``x.squeeze()``, the pieces of
``split``/``chunk``/``unbind``...: the ops with the ``view`` trait) gives a tensor that, eagerly,
shares its input's array, exactly when numpy's result does (which is when PyTorch's does: basic
indexing, transposes, and a reshape that needs no copy; not advanced indexing, nor indexing with
a tensor). Such a tensor carries a :class:`ViewInfo`: its *root* (the tensor that owns the
elements, never a view itself) and the *steps* that make it from the root, each a replayable op
call (``getitem`` with its index, ``reshape``, ``transpose``, ...).

**An in-place op on a view** (``v.mul_(3)``, ``y[:, 1].zero_()``, ``v[0] = 5``) writes the
root, with PyTorch's autograd semantics (its ``CopySlices``), computed from ops d2s already
differentiates: the view's new value ``new = op(view)`` is written back through the steps,
innermost first, each by its inverse (a ``setitem`` for an index, ``reshape_like`` for a
reshape, the inverse permutation for a transpose), giving the root's new value; the root takes
that value and its history, so the root's gradient sees the write; the view takes ``new`` and
its history. Eagerly the values go into the root's own array (every view of it sees them); in a
program being built (``to_static``) the root object is re-pointed to the new value, which
tensor ``if``s and loops carry out like any in-place update (``ProgramBuilder.note_inplace``),
and a module buffer written through a view is written back after each call
(``ProgramBuilder.symbolize``). Without autograd (nothing requires grad, or ``no_grad``) an
eager write goes straight into the shared array.

**Other views of the same root** then show the new values (eagerly through the shared array)
and must take the new history too: a view remembers the root's version from when its history
was last derived, and a view whose root changed since (``stale``) is *refreshed* before it is
used (as an op input, in ``backward``/``d2s.grad``, in a program's outputs): its history (and,
in a program, its value) is replayed from the root. This is PyTorch's regeneration of a view's
``grad_fn`` after its base's version changed.

Refused as PyTorch refuses: an in-place op on a view of a leaf that requires grad (outside
``no_grad``), an in-place op that autograd would record on a view made under ``no_grad``, and
one on an ``expand``ed tensor (several elements share one memory location). (PyTorch also
refuses to record one on a piece of ``split``/``chunk``/``unbind``; d2s writes it back.) Views
made by a gradient rule while backward runs without ``create_graph`` are not marked: nothing
writes them back, and marking costs time on every backward. A view made by an op
with no inverse here (a ``view`` op added later) is written eagerly without autograd only; with
autograd or in a program it is refused with an error saying to clone it.

Versions: a view's ``_base`` is the tensor it was made from, so a write into a view bumps the
versions up to its root, and a saved view notices a write into its root (see
``d2s.autograd.node.version_of``): a backward that needs an overwritten value raises.
"""
import numpy as np
from d2s_runtime.ops import OPS as _OPS

from ._state import STATE
from . import layouts as _layouts
from .user_errors import at_user_line

# d2s.dispatch calls this module on every view op (so it imports it), and hands it Tensor and
# its ``apply`` when it loads (see bind): replays and write-backs are op calls
Tensor = _apply = None


def bind(tensor_class, apply):
    """Called by d2s.dispatch once both exist."""
    global Tensor, _apply
    Tensor, _apply = tensor_class, apply

_UNKNOWN_DIM = _layouts.UNKNOWN_DIM
_fake_root = _layouts.fake_root
_RESHAPES = frozenset({"reshape", "reshape_like", "reshape_dims", "squeeze", "expand_dims"})


class ViewInfo:
    """What makes a tensor a view: ``root`` (the tensor owning the elements), ``steps`` (``(op,
    extra inputs, attrs)`` calls replaying it from ``root``), ``version`` (the root's version
    when the view's history was last derived from it), ``no_grad`` (made under ``no_grad`` from
    a root requiring grad), ``refusal`` (why an in-place op cannot write through it, or None)
    and ``fake`` (for a symbolic view: a memoryless numpy array with its strides, deciding as
    numpy would whether a further reshape is a view)."""

    __slots__ = ("root", "steps", "version", "no_grad", "refusal", "fake")

    def __init__(self, root, steps, no_grad, refusal, fake):
        self.root, self.steps, self.version = root, steps, root._version
        self.no_grad, self.refusal, self.fake = no_grad, refusal, fake


# ------------------------------------------------------------------ making views
def note(opdef, inputs, attrs, results):
    """Called by dispatch after an op with the ``view`` trait: mark each result that is a
    view of ``inputs[0]`` (shares its elements) as one."""
    x = inputs[0]
    if type(x) is not Tensor and not isinstance(x, Tensor):
        return
    grad_on = STATE.grad_enabled
    if not grad_on and STATE.in_backward:
        return  # a gradient rule's temporaries (no graph is being made): nothing writes them back
    name = opdef.name
    xd = x._data
    info = x._view
    if info is None:
        root, steps, no_grad, refusal = x, (), False, None
    else:
        root, steps, no_grad, refusal = info.root, info.steps, info.no_grad, info.refusal
    no_grad = no_grad or not grad_on
    for k, out in enumerate(results):
        od = out._data
        if od is not None:
            if xd is None or not _shares(xd, od):
                continue
            step = (name, inputs[1:], attrs) if name != "split" else _split_step(attrs, k, x)
            fake = None
        else:
            step = _step(name, inputs, attrs, k, x)
            fake = _fake_view(x, step)
            if fake is None:
                continue  # numpy would copy here (advanced indexing, a reshape of a strided layout)
            if fake is _layouts.UNKNOWN and name in _LAYOUT_DEPENDENT:
                layout_unknown(out, x, name)
                continue
        out._view = ViewInfo(root, steps + (step,), no_grad, refusal if refusal is not None or name in _WRITABLE
                             else _refusal(step, x, out), fake)
        out._base = x


_WRITABLE = frozenset({"getitem", "transpose"}) | _RESHAPES  # views written back without conditions
_LAYOUT_UNKNOWN = ("eagerly it shares that value's elements or is a copy of them depending on its layout, which the "
                   "program cannot tell here (it depends on sizes unknown while building, on which branch a tensor "
                   "`if` took, or on an op whose result's layout the program does not model). Bind a copy "
                   "(v = x.reshape(...).clone())")
# view ops whose result is a view or a copy depending on the input's layout (as in numpy and PyTorch)
_LAYOUT_DEPENDENT = frozenset({"reshape", "reshape_like", "reshape_dims"})
# view ops written back by an op of their own: {view op: the op writing a value into its view}
# (checked by name: the pair is registered by another family module, when it is)
_SCATTERS = {"diagonal": "diagonal_scatter"}


def _step(name, inputs, attrs, k, x):
    """The replayable call making output ``k`` of op ``name`` (attrs: the call's own keyword
    dict, inputs[1:] its extra inputs)."""
    if name == "split":
        return _split_step(attrs, k, x)
    return (name, inputs[1:], attrs)


def _split_step(attrs, k, x):
    """A split's piece ``k`` is the getitem of its slice (so its write-back is a setitem)."""
    axis = attrs.get("axis", 0) % max(x.ndim, 1)
    start = sum(attrs["sections"][:k])
    spec = [["s", None, None, None]] * axis + [["s", start, start + attrs["sections"][k], None]]
    return ("getitem", (), {"index": spec})


def _refusal(step, parent, out):
    name = step[0]
    if name == "broadcast_to":
        if tuple(_static_shape(parent)) != tuple(_static_shape(out)) or None in _static_shape(out):
            return ("unsupported operation: more than one element of the written-to tensor refers to a single "
                    "memory location (it is an expand()ed or broadcast view). Please clone() the tensor before "
                    "performing the operation")
        return None
    if name == "getitem" or name == "transpose" or name in _RESHAPES or name in _SCATTERS:
        return None
    return (f"in-place update of a view made by {name!r}, which d2s cannot write back into its base with "
            "autograd or in a program; clone() it first (v = v.clone()) and write the result where it belongs")


def shares_elements(out, x):
    """Whether ``out``, a reshape of ``x``, shows ``x``'s elements (is a view of it), eagerly or
    in a program; an empty tensor counts as shared (PyTorch views one of any layout)."""
    if getattr(out, "_base", None) is x:
        return True
    shape = _static_shape(x)
    return None not in shape and int(np.prod(shape, dtype=np.int64)) == 0


def writeable(a):
    """Whether array ``a`` may be written (numpy's diagonals and broadcasts may not; cupy's may)."""
    return getattr(getattr(a, "flags", None), "writeable", True)


def contiguous_layout(t):
    """Whether tensor ``t``'s elements lie row-major without gaps (PyTorch's ``is_contiguous``):
    from its array's layout eagerly, from its modelled layout in a program (None where the
    program cannot tell, see d2s/layouts.py)."""
    d = t._data
    if d is not None:
        return bool(getattr(getattr(d, "flags", None), "c_contiguous", True))
    fake = layout_of(t)
    if fake is _layouts.UNKNOWN:
        return None
    return fake is None or bool(fake.flags.c_contiguous)


def _shares(a, b):
    if type(a) is np.ndarray:
        if type(b) is not np.ndarray:
            return False
        base = b.base
        if base is None:
            return b is a
        return base is a or (base is a.base and base is not None) or np.may_share_memory(a, b)
    return getattr(b, "base", None) is not None


def _static_shape(t):
    return tuple(t._data.shape) if t._data is not None else tuple(t._var.type.shape)


# ------------------------------------------------------------------ detach in a program
_DETACH = "stop_gradient"


def detached(x, out):
    """Mark ``out``, ``x.detach()`` (or ``x.data``) of a symbolic ``x`` made in a program, as a
    view showing all of ``x``: eagerly the two share one array, so a write through either shows
    in the other (``y.detach().zero_()``, ``y.data[0] = 5``), and the program must do the same.
    A write through ``out`` re-points ``x`` to the new value and leaves ``x``'s history alone, as
    PyTorch's autograd does not see it either (``detached_write``). Returns ``out``."""
    info = x._view
    root, steps, fake = (x, (), None) if info is None else (info.root, info.steps, info.fake)
    out._view = ViewInfo(root, steps + ((_DETACH, (), {}),), False, None if info is None else info.refusal,
                         fake if fake is not None else _fake_of(x))
    out._base = x
    return out


# ------------------------------------------------------------------ symbolic layouts
def _fake_of(t):
    """``t``'s layout: its view's, else the one eager code gives its value (see
    d2s/layouts.py; ``layouts.UNKNOWN`` where the program cannot tell), else row-major."""
    f = layout_of(t)
    return f if f is not None else _fake_root(_static_shape(t))


def keep_layout(b, t, out):
    """In ``ProgramBuilder`` ``b``: ``t``, about to name ``out``'s var (an in-place update of
    ``t``), keeps its own layout, as its memory is written in place eagerly."""
    lay = layout_of(t)
    if lay is None or _layouts.is_row_major(lay):
        b.layouts.pop(out._var.name, None)
    else:
        b.layouts[out._var.name] = lay


def row_major(t):
    """Symbolic ``t`` (a copy made row-major) laid out row-major in the program; returns ``t``."""
    b = STATE.builder
    if b is not None and t._var is not None:
        b.layouts.pop(t._var.name, None)
    return t


def layout_of(t):
    """``t``'s layout as a fake array, ``layouts.UNKNOWN``, or None where it is row-major (the
    layout a fresh array has)."""
    info = t._view
    if info is not None and info.fake is not None:
        return info.fake
    d = t._data
    if d is not None:
        return _layouts.fake_of_array(d)
    b = STATE.builder
    return b.layouts.get(t._var.name) if b is not None else None


def _fake_view(x, step):
    """The layout of ``step`` applied to symbolic ``x``, or None where numpy (so eager code)
    would copy instead of making a view."""
    fake = _fake_of(x)
    name, extra, attrs = step
    if fake is _layouts.UNKNOWN:
        # a view whatever the layout (indexing, transposes), of a layout unknown too; a reshape
        # is a view or a copy depending on it: the program cannot follow it (see note)
        return _layouts.UNKNOWN
    try:
        if name == "getitem":
            key = []
            for e in attrs["index"]:
                kind = e[0]
                if kind == "i":
                    key.append(e[1])
                elif kind == "s":
                    key.append(slice(e[1], e[2], e[3]))
                elif kind == "n":
                    key.append(None)
                elif kind == "e":
                    key.append(Ellipsis)
                else:
                    j = extra[e[1]]
                    # a loop counter standing for a Python int indexes as the int would (a view);
                    # a tensor index copies, in PyTorch as in numpy
                    if not (getattr(type(j), "_d2s_weak", False) and getattr(j, "ndim", 1) == 0):
                        return None
                    key.append(0)
            # (an Ellipsis already in the key stands for the trailing dims too: numpy refuses a second)
            return fake[tuple(key) + (() if any(k is Ellipsis for k in key) else (Ellipsis,))]
        if name == "transpose":
            return np.transpose(fake, attrs.get("perm"))
        if name == "expand_dims":
            return np.expand_dims(fake, attrs["axis"])
        if name == "squeeze":
            axes = attrs.get("axes")
            return np.squeeze(fake, None if axes is None else tuple(axes))
        if name == "broadcast_to":
            return np.broadcast_to(fake, tuple(_UNKNOWN_DIM if d is None else d for d in attrs["shape"]))
        if name == "reshape":
            if None not in attrs["shape"] and None not in _static_shape(x):
                try:  # every size known: numpy's own rule decides
                    return np.reshape(fake, tuple(attrs["shape"]), copy=False)
                except ValueError:
                    return None  # a copy
            return np.reshape(fake, tuple(attrs["shape"]), copy=False)
        if name == "diagonal":
            return np.diagonal(fake, attrs.get("offset", 0), attrs.get("dim1", 0), attrs.get("dim2", 1))
        if name == "unfold":  # (its kernel is numpy's strided windows: run on the layout alone)
            return _OPS["unfold"].kernel(np, fake, **attrs)
    except (ValueError, IndexError, TypeError):
        pass
    if name in _RESHAPES:
        # a reshape to dims known only when the program runs: numpy makes a view of a
        # contiguous layout, and of some others (splitting the last dim of a slice), which the
        # program cannot tell here
        if not fake.flags.c_contiguous:
            return _layouts.UNKNOWN
        return _fake_root(_out_shape_hint(fake, name, attrs))
    return None


def _out_shape_hint(fake, name, attrs):
    shape = attrs.get("shape")
    if shape is None or any(d is None for d in shape):
        return (fake.size,)
    return tuple(fake.size if d == -1 else d for d in shape)


# ------------------------------------------------------------------ replaying and writing back
def replay(root, steps):
    """The view ``steps`` make of ``root`` (op calls, so autograd records them)."""
    apply = _apply
    out = root
    for name, extra, attrs in steps:
        if name == _SELECT:
            out = _where(extra[0], replay(out, attrs["steps"][0]), replay(out, attrs["steps"][1]))
        else:
            out = apply(name, out, *extra, **attrs)
    return out


def _where(pred, a, b):
    return _apply("where", pred, a, b)


def _put(step, old, new):
    """``old`` (a step's input) with its view by ``step`` replaced by ``new``."""
    apply = _apply
    name, extra, attrs = step
    if name == _DETACH:
        # every element takes the new value, and the tensor keeps its own history: autograd
        # sees no write through ``.detach()`` / ``.data`` (eagerly, only the values change)
        return apply("detached_write", new, old)
    if name == _SELECT:
        return _where(extra[0], written_back(old, attrs["steps"][0], new), written_back(old, attrs["steps"][1], new))
    if name == "getitem":
        return apply("setitem", old, new, *extra, index=attrs["index"])
    if name in _SCATTERS:
        return apply(_SCATTERS[name], old, new, *extra, **attrs)
    if name == "transpose":
        perm = attrs.get("perm")
        inverse = None if perm is None else [int(i) for i in np.argsort([p % len(perm) for p in perm])]
        return apply("transpose", new, perm=inverse)
    return apply("reshape_like", new, old)  # reshapes, squeeze/unsqueeze, a broadcast adding nothing


def written_back(root, steps, new):
    """The root's value after its view by ``steps`` takes the value ``new``."""
    olds = [root]
    for step in steps[:-1]:
        olds.append(replay(olds[-1], (step,)))
    for step, old in zip(reversed(steps), reversed(olds)):
        new = _put(step, old, new)
    return new


def alias(t):
    """A second Tensor object with t's current value and history (autograd nodes built on it
    are not touched when ``t`` itself is re-pointed afterwards)."""
    a = Tensor._make(t._data, t._var)
    a.requires_grad, a.grad_fn, a._out_idx = t.requires_grad, t.grad_fn, t._out_idx
    return a


# a view that a tensor `if` chose between two views of one root: ("select", (pred,), {"steps":
# (the true branch's steps, the false branch's)}), replayed and written back by a `where`
_SELECT = "select"


def join_branches(b, per_block, outs, pred):
    """After a tensor ``if`` (``ProgramBuilder`` ``b``, the branches' results ``per_block``, the
    op's ``outs``): an output that each branch gives as a view of one same root (``v = y[1]``,
    then ``v = y[2]`` in one branch) is a view of that root after the op too, its steps chosen
    by ``pred``, so an in-place update of it writes the root as eager code does."""
    if len(per_block) != 2 or any(p is None or len(p) < len(outs) for p in per_block):
        return
    for o, t, e in zip(outs, *per_block):
        if not (isinstance(o, Tensor) and isinstance(t, Tensor) and isinstance(e, Tensor)) or o is t or o is e:
            continue
        if o.is_symbolic:
            _join_layouts(b, o, layout_of(t), layout_of(e))
        ti, ei = _followed(b, t._view), _followed(b, e._view)
        if (ti is None and ei is None) or o._view is not None or not o.is_symbolic:
            continue
        if ti is None or ei is None or ti.root is not ei.root or _static_shape(t) != _static_shape(e) \
                or not (_visible_steps(b, ti.steps) and _visible_steps(b, ei.steps)):
            _unfollowed(o, ti or ei, "a tensor `if` binds to a view of another in one branch (v = y[0] if c else "
                                     "z), or to views of different tensors")
            continue
        fake = None if ti.fake is None and ei.fake is None else _same_layout(ti.fake, ei.fake)
        root = ti.root
        step = (_SELECT, (pred,), {"steps": (ti.steps, ei.steps)})
        o._view = ViewInfo(root, (step,), ti.no_grad or ei.no_grad, ti.refusal or ei.refusal,
                           fake if fake is not None else _fake_root(_static_shape(o)))
        o._base = root


def _same_layout(a, b):
    """The layout of a value that is ``a`` on some runs and ``b`` on others (None: row-major)."""
    if a is None and b is None:
        return None
    if a is not None and b is not None and a is not _layouts.UNKNOWN and b is not _layouts.UNKNOWN \
            and a.strides == b.strides:
        return a
    if _layouts.is_row_major(a) and _layouts.is_row_major(b):
        return None
    return _layouts.UNKNOWN


def _join_layouts(b, o, a, c):
    """Symbolic ``o`` is (a copy of) a value laid out as ``a`` on some runs and as ``c`` on the
    others: its layout in the program (see d2s/layouts.py)."""
    lay = _same_layout(a, c)
    if lay is not None and not _layouts.is_row_major(lay):
        b.layouts[o._var.name] = lay


# a tensor a tensor loop or `if` binds to a view on some runs only, or to a view that depends on
# the iterations (``v = y[i]`` in a loop body): the program cannot follow which elements of which
# tensor it shows, so writing through it, or reading it once that tensor changed, is refused
# (its one step, _UNFOLLOWED, cannot be replayed)
_UNFOLLOWED = "unfollowed"


_DATA_DEPENDENT = ("which elements it shows depends on the data, which the program does not follow. Write into "
                   "the base directly (y[i].add_(...)), or bind a copy (v = y[i].clone())")


def layout_unknown(out, x, name):
    """Mark ``out``, op ``name``'s result from ``x`` (whose layout the program cannot tell), as a
    tensor that may share ``x``'s elements eagerly or not: writes through it, or reads of it
    after ``x`` changed, are refused (see _unfollowed). Returns ``out``."""
    info = x._view if x._view is not None else ViewInfo(x, (), False, None, None)
    _unfollowed(out, info, f"is a {name} of a value whose memory layout the program cannot tell", _LAYOUT_UNKNOWN)
    out._base = x
    return out


def _unfollowed(t, info, how, why=_DATA_DEPENDENT):
    t._view = ViewInfo(info.root, ((_UNFOLLOWED, (), {"how": how, "why": why}),), info.no_grad,
                       f"in-place update of a tensor that {how}: {why}", None)


def loop_results(results, body_out):
    """After a tensor ``while``: a result that the body gives as a view (and that is not the
    object the loop started from) is marked as a view the program cannot follow."""
    b = STATE.builder
    for r, o in zip(results, body_out):
        if isinstance(r, Tensor) and isinstance(o, Tensor) and _followed(b, o._view) is not None \
                and r._view is None and r is not o:
            _unfollowed(r, o._view, "a tensor loop binds to a view of another (v = y[i] in the loop body)")


def _followed(b, info):
    """``info``, or None for a view that ``detach`` alone made of a tensor the block just closed
    made (``h = f(h).detach()`` in a loop body): a write through it reaches nothing the program
    can still read, so after the block it is a plain tensor."""
    if info is None or b is None or any(step[0] != _DETACH for step in info.steps):
        return info
    root = info.root
    if root._data is not None or b._visible(b.defined_in.get(root._var.name)):
        return info
    return None


def _visible_steps(b, steps):
    for _, extra, attrs in steps:
        for x in extra:
            if isinstance(x, Tensor) and x.is_symbolic and not b._visible(b.defined_in.get(x._var.name)):
                return False
        if "steps" in attrs and not all(_visible_steps(b, s) for s in attrs["steps"]):
            return False
    return True


# ------------------------------------------------------------------ refreshing stale views
def fresh(t):
    """Bring view ``t``'s history (and, in a program or trace, its value) up to date with its
    root, when the root was written in place since; returns ``t``."""
    info = t._view
    if info is None or info.version == info.root._version:
        return t
    root = info.root
    if info.steps[0][0] == _UNFOLLOWED:
        raise at_user_line(
            f"a tensor that {info.steps[0][2]['how']} is read after that other tensor was updated in place: "
            f"{info.steps[0][2]['why']}", RuntimeError)
    hooked = root._data is None or STATE.hooked
    if hooked or root.requires_grad:
        b = STATE.builder
        prev, STATE.grad_enabled = STATE.grad_enabled, True  # (PyTorch regenerates a view's history in any mode)
        try:
            r = replay(alias(root), info.steps)
        finally:
            STATE.grad_enabled = prev
        if t._data is None and b is not None:
            b.note_inplace(t)  # re-pointed inside a branch or loop body: carried out of it
        t._data, t._var = r._data, r._var
        take_history(t, r)
    else:
        t.grad_fn, t.requires_grad = None, False
    info.version = root._version
    return t


def take_history(t, out):
    """t continues out's autograd history: its node's output is t, at t's current version."""
    t.grad_fn, t.requires_grad, t._out_idx = out.grad_fn, out.requires_grad, out._out_idx
    node = out.grad_fn
    if node is not None and node.outputs is not None:
        node.outputs = tuple(t if o is out else o for o in node.outputs)
        node.out_versions = tuple(o._version for o in node.outputs)


# ------------------------------------------------------------------ checks before a write
def check_writable(t, what, recording):
    """Raise as PyTorch does before an in-place op on view ``t`` that cannot be written
    (``recording``: whether autograd records the op)."""
    info = t._view
    root = info.root
    # (a view through ``.detach()`` / ``.data`` is cut from autograd: PyTorch lets it be written,
    # and the leaf keeps its history, see detached)
    if STATE.grad_enabled and root.requires_grad and root.grad_fn is None \
            and not any(step[0] == _DETACH for step in info.steps):
        raise RuntimeError(
            f"{what}: a view of a leaf tensor that requires grad (W.T, W[0], W.reshape(...)) is being "
            "used in an in-place operation; update the leaf itself under `with d2s.no_grad():`")
    if info.no_grad and recording:
        raise RuntimeError(
            f"{what}: a view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled; move both the view and the in-place op inside the no_grad block (if the update must "
            "not be tracked) or both outside it")
    if info.refusal is not None and info.refusal.startswith("unsupported"):
        raise RuntimeError(f"{what}: {info.refusal}")


def refuse_untracked(t, what):
    """A view with no write-back here (``ViewInfo.refusal``) in a program or under autograd."""
    raise at_user_line(f"{what}: {t._view.refusal}", RuntimeError)
