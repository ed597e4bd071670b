"""The numba emitter: a prepared Program written as the Python source of ONE numba function
(pure Python: no numba import, no compile; see ``native/__init__.py`` for the contract).

What is computed where, and in which buffer, is decided by the target-independent planner
(``plan.py``: uses, fusion groups, lazy expression trees, in-place donors, carry ownership),
which this module's :class:`Lowerer` extends with numba's text. How each op lowers is declared
beside the op (``@deflowering(op, "native")``): an element-wise op's hook returns a scalar
expression (:class:`ScalarEmit`), any other op's hook builds its results with :class:`Emit`,
the facade over this emitter's vocabulary, and a structured op's hook (``ops/control_flow.py``)
drives the emitter's block API (``lower_block``, ``loop``, ``loop_carries``, ``branches``, ...).

Op bodies live beside their ops, not here: an op's hook is its whole lowering (softmax,
logsumexp, cumsum in ``ops/nn_ops.py``; argmax/argmin in ``ops/reduce.py``; gather/scatter_add
in ``ops/indexing.py``; normalize in ``ops/norm_ops.py``). This module holds what several ops
share or what only numba has: loop nests over shapes, reductions, products (BLAS, MKL, rows
hoisted out of loops), views and reshapes, basic indexing, literals, and the tensor-stack
format of ``_lib.py``.

The generated function takes the feeds (inputs, params, constants), then the literal values
this module collects (``constant`` ops, typed zeros, ...), as arguments; every other name in it
is generated here. How values are held:

* a 0-d value is a machine scalar (0-d feeds are read once at entry, ``v = f[()]``);
* an element-wise op whose result is read once, by another element-wise op or a reduction of
  the same block, stays *lazy*: its consumer inlines it, so a chain of element-wise ops and the
  reduction reading it become one loop nest with no temporaries;
* everything else is an array made by one loop nest (or a numpy call numba compiles, such as
  ``np.dot``). A fused loop writes into the buffer of an operand it reads at the same index
  when nothing reads that buffer later (a matmul's bias/activation epilogue then runs in place
  in the matmul's output); loop carries are owned by the loop (copied in at entry where they
  alias a caller's array), so a loop body updates them in place.

``cond`` lowers to ``if``/``else``, ``while`` to ``while True`` with the cond block and a
``break``, ``scan`` to a ``for`` over the leading axis writing its ys into preallocated arrays.

SAFETY. A saved model's program is untrusted: no text of it reaches the source. Local names
are generated (``v12``, ``k3``); op types are only looked up in the registry; attrs are read as
Python values, validated (ints, bools, dtype names from ``dtypes.DTYPES``) and either turned into
structure or passed as argument values (literals, fill values), never formatted as text; the
only numbers formatted into the source are validated Python ints (dims, axes).
"""
import contextlib
import hashlib
from itertools import count

from ..dtypes import DTYPES
from ..schedule import topo_order
from .builders import SharedBuilders
from .emit import NP_TYPE, Emit, ScalarEmit, StackPool, cast_expr
from .plan import NativeUnsupported, Planner, V, check_int, where_of
from .stacks import StackFormat

__all__ = ["Lowerer", "NativeUnsupported", "StackPool", "lower", "source_key", "lib_names"]

BACKEND = "native"
# Bumped whenever the generated code changes meaning, so disk caches of older versions are not used.
LOWERING_VERSION = "3"


class Lowerer(Planner, SharedBuilders, StackFormat):
    """The numba emitter (see the module docstring): the planner's decisions written as the
    source of one function."""

    BACKEND = BACKEND

    def __init__(self, program, order=None):
        super().__init__(program, order)
        self.lines = []
        self.stack_sites = {}  # dtype -> stack_new ops of the top block lowered so far (pooled sites)
        self.pools = {}        # dtype -> position of its two StackPools among the extra arguments
        self._loops = []       # the loops being lowered, innermost last (see ``_enter_loop``)
        self._n = count()

    # ---------------------------------------------------------------- what the planner asks
    def check_dtype(self, name, what="dtype"):
        if not isinstance(name, str) or name not in DTYPES:
            raise NativeUnsupported(f"{what} is not one of {', '.join(DTYPES)}")
        if name not in NP_TYPE:  # float16 and the narrow ints run on the Python backend
            raise NativeUnsupported(f"{what} is {name}, which the native backend does not lower "
                                    f"(it lowers {', '.join(NP_TYPE)})")
        return name

    def make_emit(self, op, out_types):
        return Emit(self, op, out_types)

    def scalar_call(self, op, hook, cd, in_dts, out_dt, res_dt, raw):
        e = ScalarEmit(self, op, cd, in_dts, out_dt)
        attrs = dict(op.attrs)

        def call(args):
            expr = hook(e, *args, **attrs)
            # numba widens small ints (int32 + int32 is int64): bring every result back to its dtype
            return expr if res_dt == "bool" or raw else f"{NP_TYPE[res_dt]}({expr})"

        call.check = lambda n: hook(e, *["_"] * n, **attrs)
        return call

    def scalar_result(self, op, call, ins, cd, res_dt, out_dt, raw):
        args = [v.name if raw else cast_expr(v.name, v.dtype, self.arg_dtype(op, i, cd, v)) for i, v in enumerate(ins)]
        expr = cast_expr(call(args), res_dt, out_dt)
        name = self.fresh()
        self.emit(self.indent, f"{name} = {expr}")
        return V("s", name, out_dt, ())

    # ---------------------------------------------------------------- names and lines
    def fresh(self):
        return f"v{next(self._n)}"

    def lib(self, name):
        if name not in lib_names():
            raise NativeUnsupported(f"no native helper {name!r}")
        return f"L.{name}"

    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    def lower(self):
        prog = self.program
        feeds = list(prog.inputs) + list(prog.params) + list(prog.constants)
        args, env, sig = [], {}, []
        self.indent = 1
        entry = []
        for name in feeds:
            t = self.type_of(name)
            dt = self.check_dtype(t.dtype, f"var {name}'s dtype")
            loc = self.fresh()
            args.append(loc)
            sig.append((dt, len(t.shape)))
            if len(t.shape) == 0:
                s = self.fresh()
                entry.append(f"{s} = {loc}[()]")
                v = V("s", s, dt, ())
            else:
                for j, d in enumerate(t.shape):
                    if d is not None:
                        entry.append(f"L.check_dim({loc}.shape[{j}], {check_int(d, 'dim')})")
                v = V("a", loc, dt, t.shape)
            v.var = name
            env[name] = v
        for line in entry:
            self.emit(1, line)
        order = self.order if self.order is not None else topo_order(prog.block)[0]
        outs = self.block(prog.block, env, order, 1, set(prog.outputs), owned=set(), outputs=list(prog.outputs))
        outs = self.stack_outputs(outs)
        rets = []
        for v in outs:
            rets.append(f"np.asarray({v.name})" if v.kind == "s" else v.name)
            # checked by the runtime: what it returns is what the program declares
        self.emit(1, f"return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
        header = f"def program({', '.join(args + self.const_names)}):"
        source = ("import numpy as np\nfrom d2s_runtime.native import _lib as L\n\n\n" + header + "\n"
                  + "\n".join(self.lines) + "\n")
        out_types = [(self.type_of(n).dtype, len(self.type_of(n).shape)) for n in prog.outputs]
        return source, sig, out_types

    def dims(self, shape, leaves, indent):
        """Runtime extents of an iteration space of static ``shape``: literal ints where known,
        else the broadcast of the leaves' runtime dims (checked)."""
        out = []
        n = len(shape)
        for j, d in enumerate(shape):
            if d is not None:
                out.append(str(check_int(d, "dim")))
                continue
            srcs = []
            for v in leaves:
                if v.kind != "a":
                    continue
                k = j - (n - v.ndim)
                if k >= 0 and v.shape[k] != 1:
                    srcs.append(f"{v.name}.shape[{k}]")
            if not srcs:
                raise NativeUnsupported("a dim is unknown and no operand gives it")
            expr = srcs[0]
            for s in srcs[1:]:
                expr = f"L.bdim({expr}, {s})"
            name = self.fresh()
            self.emit(indent, f"{name} = {expr}")
            out.append(name)
        return out

    def index(self, v, shape, idx):
        """Index expression of leaf array ``v`` inside an iteration space of ``shape`` with
        loop variables ``idx`` (broadcasting: size-1 dims read element 0)."""
        n = len(shape)
        parts = []
        for k in range(v.ndim):
            j = k + n - v.ndim
            d = v.shape[k]
            if d == 1 and shape[j] != 1:
                parts.append("0")
            elif d is not None and d == shape[j]:
                parts.append(idx[j])
            else:  # unknown at lowering: size 1 broadcasts at run time
                parts.append(f"min({idx[j]}, {v.name}.shape[{k}] - 1)")
        if not parts:
            return f"{v.name}[()]"
        return f"{v.name}[{', '.join(parts)}]"

    def render(self, tree, shape, idx, indent, memo):
        """Emit the statements computing ``tree`` at index ``idx``; returns the scalar local."""
        key = id(tree)
        if key in memo:
            return memo[key]
        tag = tree[0]
        if tag == "v":
            v = tree[1]
            if v.kind == "s":
                res = v.name
            else:
                res = self.fresh()
                self.emit(indent, f"{res} = {self.index(v, shape, idx)}")
        elif tag == "c":
            inner = self.render(tree[1], shape, idx, indent, memo)
            expr = cast_expr(inner, tree[2], tree[3])
            if expr == inner:
                res = inner
            else:
                res = self.fresh()
                self.emit(indent, f"{res} = {expr}")
        else:
            args = [self.render(k, shape, idx, indent, memo) for k in tree[2]]
            res = self.fresh()
            self.emit(indent, f"{res} = {tree[1](args)}")
        memo[key] = res
        return res

    def loops(self, dims, indent):
        idx = []
        for d in dims:
            i = self.fresh()
            self.emit(indent, f"for {i} in range({d}):")
            idx.append(i)
            indent += 1
        return idx, indent

    def materialize(self, v):
        if v.kind != "l":
            return v
        leaves = self.leaves(v.tree, [])
        ind = self.indent
        dims = self.dims(v.shape, leaves, ind)
        donor = self.donor(v, leaves)
        if donor is not None:  # written in place: the result keeps the donor's local
            out = donor.name
        else:
            out = self.fresh()
            self.emit(ind, f"{out} = np.empty(({', '.join(dims)}{',' if len(dims) == 1 else ''}), {NP_TYPE[v.dtype]})")
        idx, inner = self.loops(dims, ind)
        res = self.render(v.tree, v.shape, idx, inner, {})
        if idx:
            self.emit(inner, f"{out}[{', '.join(idx)}] = {res}")
        else:
            self.emit(inner, f"{out}[()] = {res}")
        self._ctx.fresh.add(out)
        r = V("a", out, v.dtype, v.shape)
        r.var = v.var
        return r

    def array(self, v):
        """``v`` as an array local (0-d scalars become 0-d arrays)."""
        v = self.materialize(v)
        if v.kind == "s":
            name = self.fresh()
            self.emit(self.indent, f"{name} = np.asarray({v.name})")
            return V("a", name, v.dtype, ())
        return v

    def contiguous(self, v):
        v = self.array(v)
        if v.layout == "C":
            return v
        name = self.fresh()
        self.emit(self.indent, f"{name} = np.ascontiguousarray({v.name})")
        self._ctx.fresh.add(name)
        return V("a", name, v.dtype, v.shape)

    def new_array(self, name, dtype, shape, layout="C", fresh=True):
        if fresh:
            self._ctx.fresh.add(name)
        return V("a", name, dtype, shape, layout=layout)

    def copy_of(self, v):
        v = self.materialize(v)
        if v.kind == "s":
            return v
        name = self.fresh()
        self.emit(self.indent, f"{name} = {v.name}.copy()")
        return self.new_array(name, v.dtype, v.shape)

    def alias(self, v):
        """The same value under another var (a new handle: the lowering rebinds its var).
        Where this op is the last reader of a buffer this block made, the new var takes it
        over (a gradient's ``stop_gradient`` before an optimizer update, which may then write
        it in place); otherwise the buffer is pinned."""
        if v.kind == "l":
            return V("l", None, v.dtype, v.shape, tree=v.tree)
        if not (v.kind == "a" and v.name in self._ctx.fresh and self.dies_here(v)):
            self.pin(v)
        return V(v.kind, v.name, v.dtype, v.shape, layout=v.layout)

    def _before_loop(self, loop, lines):
        """Insert ``lines`` just before the header of ``loop`` (a record of ``_enter_loop``): they
        run once per entry into the loop."""
        for line in reversed(lines):
            self.lines.insert(loop["pos"], "    " * loop["indent"] + line)
        loop["pos"] += len(lines)

    def _enter_loop(self, ind, caps):
        """Record a loop whose header is the next line emitted at indent ``ind``; ``caps``: its
        captured values (defined before it, never written in it), whose derived arrays
        ``_transposed`` may compute once before the header."""
        self._loops.append({"pos": len(self.lines), "indent": ind, "hoisted": {}, "rows": {},
                            "caps": {v.name for v in caps if v.kind == "a"}})

    def coerce(self, v, t):
        """``v`` as the expression a carry or branch output of type ``t`` is assigned."""
        if v.dtype != t.dtype:
            if v.kind == "s":
                return cast_expr(v.name, v.dtype, t.dtype)
            return f"{v.name}.astype({NP_TYPE[t.dtype]})"
        return v.name

    def _assign_carries(self, where, carries, res, outs_t, fresh, ind):
        """Emit the loop carries' update from the body's results ``res``: scalars coerced, a
        fresh array of the carry's dtype taken as it is, any other array copied (the loop owns
        its carries and updates them in place)."""
        srcs = []
        for k, (v, c) in enumerate(zip(res, carries)):
            t = outs_t[k]
            if c.kind == "s":
                if v.kind != "s":
                    raise NativeUnsupported(f"{where}: carry {k} changes rank")
                srcs.append(self.coerce(v, t))
            elif k in fresh and v.dtype == t.dtype:
                srcs.append(v.name)
            else:
                srcs.append(f"np.ascontiguousarray({self.coerce(v, t)}).copy()")
        pairs = [(c.name, src) for c, src in zip(carries, srcs) if c.name != src]
        if pairs:
            self.emit(ind, f"{', '.join(p[0] for p in pairs)} = {', '.join(p[1] for p in pairs)}")

    # ---------------------------------------------------------------- structured ops' API
    # (what the ``"native"`` hooks of cond, while, scan, ... call; see ops/control_flow.py)
    def value(self, env, name):
        """The value of var ``name``, computed (a lazy value materialized)."""
        return self.materialize(self.get(env, name))

    def int_literal(self, v, what):
        """``v`` validated as an int, as source text."""
        return str(check_int(v, what))

    def lower_block(self, blk, values, indent, owned=()):
        """Lower sub-block ``blk`` inline at ``indent`` with its inputs bound to ``values``;
        returns its output values. ``owned``: its input names whose buffers it may write."""
        return self.block(blk, self.sub_env(blk, values), topo_order(blk)[0], indent, set(blk.outputs), set(owned),
                          list(blk.outputs))

    @contextlib.contextmanager
    def loop(self, caps):
        """The loop whose header is the next line emitted (at the current indent, yielded);
        ``caps``: the values it captures, which products in it may prepare once before it."""
        self._enter_loop(self.indent, caps)
        try:
            yield self.indent
        finally:
            self._loops.pop()

    def loop_carries(self, op, ins, may_own):
        """The locals a loop's carries live in, set from their initial values ``ins``: a scalar
        coerced, an array the loop may take over (``may_own``, see ``Planner.may_take``) bound
        as it is, any other array copied in (the loop updates its carries in place)."""
        ind = self.indent
        carries = []
        for k, v in enumerate(ins):
            t, name = self.type_of(op.outputs[k]), op.inputs[k]
            loc = self.fresh()
            if v.kind == "s":
                self.emit(ind, f"{loc} = {self.coerce(v, t)}")
                carries.append(V("s", loc, t.dtype, ()))
                continue
            if may_own:
                if len(t.shape) == 0:
                    self.unsupported(op, f"carry {k} changes rank")
                if self.may_take(op, name, v, owned_ok=False) and v.layout == "C" and v.dtype == t.dtype:
                    self.emit(ind, f"{loc} = {v.name}")
                else:  # the loop writes its carries in place: start from a copy of the caller's value
                    src = self.coerce(v, t)
                    self.emit(ind, f"{loc} = np.ascontiguousarray({src}).copy()" if v.layout != "C" or src == v.name
                              else f"{loc} = {src}")
            else:
                self.emit(ind, f"{loc} = np.ascontiguousarray({self.coerce(v, t)}).copy()")
            carries.append(V("a", loc, t.dtype, t.shape))
        self.carry_stacks(where_of(op), [[v.name] for v in ins], [c.name for c in carries])
        return carries

    def update_carries(self, op, carries, res, body, indent):
        """Emit the carries' update at the end of a loop body from the body's results ``res``
        (the carries' new values lead them)."""
        where = where_of(op)
        fresh = self.fresh_results(res, self.owned_carries(body, carries))
        self.carry_stacks(where, [[c.name, v.name] for c, v in zip(carries, res)], [c.name for c in carries])
        outs_t = [self.type_of(o) for o in op.outputs[:len(carries)]]
        self._assign_carries(where, carries, res[:len(carries)], outs_t, fresh, indent)

    def loop_results(self, carries):
        """A loop's final carries as values after it (its array carries are its own buffers)."""
        results = []
        for c in carries:
            if c.kind == "a":
                self.mark_fresh(c.name)
            results.append(V(c.kind, c.name, c.dtype, c.shape))
        return results

    def scan_outputs(self, types, nloc):
        """Preallocate a scan's ys (``types``: their types, ``nloc``: the step count's local);
        returns ``[(local, type, whether its element shape is known only at run time)]``."""
        ys = []
        for t in types:
            yshape = t.shape[1:]
            loc = self.fresh()
            dims = [nloc] + [str(check_int(d, "dim")) if d is not None else "0" for d in yshape]
            self.emit(self.indent, f"{loc} = np.empty(({', '.join(dims)},), {NP_TYPE[t.dtype]})")
            ys.append((loc, t, None in yshape))
        return ys

    def leading_slice(self, x, tloc, indent):
        """``x[t]`` (``tloc``: the step's local) as a value."""
        s = self.fresh()
        self.emit(indent, f"{s} = {x.name}[{tloc}]")
        if x.ndim == 1:
            return V("s", s, x.dtype, ())
        return V("a", s, x.dtype, x.shape[1:], layout="C" if x.layout == "C" else "A")

    def store_scan_outputs(self, ys, res, tloc, nloc, reverse, indent):
        """Store a step's y values ``res`` at index ``tloc`` of the preallocated ys (allocated at
        the first step where their element shape is known only then)."""
        for (loc, t, dyn), v in zip(ys, res):
            if dyn:
                self.emit(indent, f"if {tloc} == {'(' + nloc + ' - 1)' if reverse else '0'}:")
                shp = ", ".join([nloc] + [f"{v.name}.shape[{q}]" for q in range(v.ndim)])
                self.emit(indent + 1, f"{loc} = np.empty(({shp},), {NP_TYPE[t.dtype]})")
            if v.kind == "s":
                self.emit(indent, f"{loc}[{tloc}] = {cast_expr(v.name, v.dtype, t.dtype)}")
            else:
                self.emit(indent, f"{loc}[{tloc}] = {self.coerce(v, t)}")

    def scan_results(self, ys):
        """A scan's stacked ys as values after it."""
        out = []
        for loc, t, _ in ys:
            self.mark_fresh(loc)
            out.append(V("a", loc, t.dtype, t.shape))
        return out

    def branches(self, op, env, blocks):
        """A branch op: ``if``/``elif``/``else`` over ``blocks`` lowered inline, each assigning
        the same output locals, selected by the op's first input: a bool picks the first of two
        blocks when true (``cond``), an integer index picks block ``index`` clamped into range
        (JAX's ``lax.switch``). An input the op may take over (``Planner.may_take``) may be
        written by a block."""
        where = where_of(op)
        sel = self.value(env, op.inputs[0])
        if sel.kind != "s":
            raise NativeUnsupported(f"{where}: predicate is not 0-d")
        ins = [self.value(env, n) for n in op.inputs[1:]]
        outs_t = [self.type_of(o) for o in op.outputs]
        locs = [self.fresh() for _ in op.outputs]
        passed_owned = {k for k, (n, v) in enumerate(zip(op.inputs[1:], ins)) if self.may_take(op, n, v)}
        if len(blocks) == 2 and sel.dtype == "bool":
            heads = [f"if {sel.name}:", "else:"]
        else:
            if sel.dtype not in ("int32", "int64"):
                raise NativeUnsupported(f"{where}: the index is not an integer")
            k = self.fresh()
            last = check_int(len(blocks) - 1, "the last branch")
            self.emit(self.indent, f"{k} = min(max(np.int64({sel.name}), 0), {last})")
            heads = [f"{'if' if j == 0 else 'elif'} {k} == {j}:" for j in range(len(blocks) - 1)] + ["else:"]
        ind = self.indent
        start_line = len(self.lines)
        owned_out, names = [], []
        for head, blk in zip(heads, blocks):
            self.emit(ind, head)
            owned = {name for k, name in enumerate(blk.inputs) if k in passed_owned}
            before = len(self.lines)
            res = self.lower_block(blk, ins, ind + 1, owned)
            owned_out.append(self.fresh_results(res, owned))
            names.append([self.coerce(v, t) for v, t in zip(res, outs_t)])
            for loc, v, t in zip(locs, res, outs_t):
                self.emit(ind + 1, f"{loc} = {self.coerce(v, t)}")
            if len(self.lines) == before:
                self.emit(ind + 1, "pass")
        # an output every branch gives as the same outer local (a buffer updated in place in
        # each branch) needs no assignment: drop them and use that local
        drop = set()
        for j in range(len(locs)):
            a = names[0][j]
            if all(n[j] == a for n in names) and a.isidentifier() and (
                    a in self._ctx.fresh or any(a == iv.name for iv in ins)):
                drop.add(j)
        if drop:
            text = {f"{'    ' * (ind + 1)}{locs[j]} = {names[0][j]}" for j in drop}
            lines = self.lines[start_line:]
            kept = [ln for ln in lines if ln not in text]
            self.lines[start_line:] = self._fix_empty(kept, ind)
            for j in drop:
                locs[j] = names[0][j]
        self.carry_stacks(where, [[n[j] for n in names] for j in range(len(locs))], locs)
        results = []
        for j, (loc, t) in enumerate(zip(locs, outs_t)):
            if len(t.shape) == 0:
                results.append(V("s", loc, t.dtype, ()))
            else:
                v = V("a", loc, t.dtype, t.shape, layout="C")
                if all(j in f for f in owned_out):
                    self.mark_fresh(loc)
                else:
                    v.layout = "A"
                    for iv in ins:  # the output may be one of the inputs
                        self.pin(iv)
                results.append(v)
        return self.bind(op, env, results)

    @staticmethod
    def _fix_empty(lines, ind):
        """``if``/``elif``/``else`` lines whose branch became empty get a ``pass``."""
        out = []
        head = "    " * ind
        for k, ln in enumerate(lines):
            out.append(ln)
            if ln == f"{head}else:" or (ln.startswith((head + "if ", head + "elif ")) and ln.endswith(":")):
                nxt = lines[k + 1] if k + 1 < len(lines) else ""
                if not nxt.startswith(head + "    "):
                    out.append(head + "    pass")
        return out


_LIB_NAMES = []


def lib_names():
    """Names of the helpers ``_lib.py`` defines, read from its source (importing it would
    import numba)."""
    if not _LIB_NAMES:
        import os
        import re
        with open(os.path.join(os.path.dirname(__file__), "_lib.py"), encoding="utf-8") as f:
            _LIB_NAMES.extend(re.findall(r"^def (\w+)\(", f.read(), flags=re.M))
    return _LIB_NAMES



def lower(program, order=None):
    """``(source, feed signature, output types, constant values)`` of ``program``."""
    lw = Lowerer(program, order)
    try:
        source, sig, out_types = lw.lower()
    except RecursionError:
        raise NativeUnsupported("the program nests too deep to lower") from None
    for dt, i in lw.pools.items():
        lw.consts[i].sites = lw.consts[i + 1].sites = lw.stack_sites.get(dt, 0)
    return source, sig, out_types, lw.consts



def source_key(source, sig, versions):
    h = hashlib.sha256()
    h.update(LOWERING_VERSION.encode())
    h.update(source.encode())
    h.update(repr(sig).encode())
    h.update(repr(versions).encode())
    return h.hexdigest()[:32]

