"""Lowering a prepared Program to the Python source of ONE numba function (pure Python: no
numba import, no compile; see ``native/__init__.py`` for the contract).

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
import hashlib
from itertools import count

import numpy as np

from ..dtypes import DTYPES, float_of, types_result
from ..ops import OPS
from ..schedule import topo_order
from . import mkl
from .values import NP_TYPE, NativeUnsupported, _int  # noqa: F401 - (re-exported: the hooks' names)

BACKEND = "native"
# Bumped whenever the generated code changes meaning, so disk caches of older versions are not used.
LOWERING_VERSION = "3"



class StackPool:
    """An extra argument of the lowered function that is not a literal: for the stacks of one
    dtype, the arena their buffers start in (``part == "arena"``) or its ``[offset, capacity,
    needed]`` rows, one per pooled site (``"slots"``; see the stack section of ``_lib.py``).
    ``compile_lowered`` makes them, one set per call in flight."""

    __slots__ = ("dtype", "part", "sites")

    def __init__(self, dtype, part, sites=0):
        self.dtype, self.part, self.sites = dtype, part, sites

    def __repr__(self):
        return f"StackPool({self.dtype}, {self.part}, {self.sites})"


class V:
    """A value during lowering. ``kind``: 's' machine scalar, 'a' array, 'l' lazy element-wise
    expression (``tree``). ``layout``: 'C' (contiguous), 'F' (a transposed matrix) or 'A'."""

    __slots__ = ("kind", "name", "dtype", "shape", "tree", "layout", "var")

    def __init__(self, kind, name, dtype, shape, tree=None, layout="C"):
        self.kind, self.name, self.dtype, self.shape, self.tree, self.layout = kind, name, dtype, tuple(shape), tree, layout
        self.var = None

    @property
    def ndim(self):
        return len(self.shape)


def _dtype(name, what="dtype"):
    if not isinstance(name, str) or name not in DTYPES:
        raise NativeUnsupported(f"{what} is not one of {', '.join(DTYPES)}")
    if name not in NP_TYPE:  # float16 and the narrow ints run on the Python backend
        raise NativeUnsupported(f"{what} is {name}, which the native backend does not lower "
                                f"(it lowers {', '.join(NP_TYPE)})")
    return name


def cast_expr(expr, src, dst):
    """The scalar expression ``expr`` (of dtype ``src``) converted to ``dst`` as numpy's astype."""
    if src == dst:
        return expr
    if dst == "bool":
        return f"({expr} != 0)"
    return f"{NP_TYPE[dst]}({expr})"


class ScalarEmit:
    """What an element-wise op's native lowering gets (``hook(e, *args, **attrs) -> expr``):
    ``args`` are scalar expressions already converted to ``e.dtype`` (the op's compute dtype:
    its output dtype, or the promoted input dtype of a comparison)."""

    def __init__(self, lowerer, op, dtype, in_dtypes, out_dtype):
        self._l, self._op = lowerer, op
        self.dtype, self.in_dtypes, self.out_dtype = dtype, in_dtypes, out_dtype

    def const(self, value, dtype=None):
        """A literal of ``dtype`` (default: the compute dtype), passed as an argument."""
        return self._l.const_arg(np.asarray(value, dtype=dtype or self.dtype)[()])

    def lib(self, name):
        return self._l.lib(name)

    def cast(self, expr, src, dst):
        return cast_expr(expr, src, dst)

    def np(self, fn):
        """``np.<fn>`` for a numpy function numba compiles (names from this runtime only)."""
        if not fn.isidentifier():
            raise NativeUnsupported("bad numpy function name")
        return f"np.{fn}"

    def unsupported(self, why):
        raise NativeUnsupported(f"op {self._op.type} (output {self._op.outputs[0]}): {why}")


class Emit:
    """What a non-element-wise op's native lowering gets (``hook(e, *inputs, **attrs)``, returning
    its output value(s)): the op's input values and builders for the statements it needs."""

    def __init__(self, lowerer, op, out_types):
        self._l, self._op, self.out_types = lowerer, op, out_types

    @property
    def out(self):
        return self.out_types[0]

    def unsupported(self, why):
        raise NativeUnsupported(f"op {self._op.type} (output {self._op.outputs[0]}): {why}")

    # builders (each returns a value)
    def reduce(self, kind, x, axes, keepdims):
        return self._l.reduce(self, kind, x, axes, keepdims)

    def matmul(self, a, b):
        return self._l.matmul(self, a, b)

    def reshape(self, x, shape):
        return self._l.reshape(self, x, shape)

    def transpose(self, x, perm):
        return self._l.transpose(self, x, perm)

    def broadcast(self, x, shape):
        return self._l.broadcast(self, x, shape)

    def join(self, xs, axis, new_axis):
        return self._l.join(self, xs, axis, new_axis)

    def fill(self, value, shape_of=None):
        return self._l.fill(self, value, shape_of)

    def copy(self, x):
        return self._l.copy_of(x)

    def alias(self, x):
        return self._l.alias(x)

    def dim(self, x, axis):
        return self._l.dim(self, x, axis)

    def basic_index(self, x, index):
        return self._l.basic_index(self, x, index)

    def index_add(self, x, v, index):
        """A copy of ``x`` with ``v`` added at a basic index (no position repeats)."""
        if v.dtype != x.dtype:
            self.unsupported("index_add of a value of another dtype")
        out = self._l.copy_of(x)
        v = self._l.materialize(v)
        return self._l.basic_index(self, out, index, add=v)

    def softmax(self, x, axis, log):
        return self._l.softmax(self, x, axis, log)

    def constant(self, value):
        return self._l.constant(self, value)

    def stack_new(self, like):
        return self._l.stack_new(self, like)

    def gather(self, x, index, axis):
        return self._l.gather(self, x, index, axis)

    def arg_reduce(self, kind, x, axis, keepdims):
        return self._l.arg_reduce(self, kind, x, axis, keepdims)

    def cumsum(self, x, axis, reverse):
        return self._l.cumsum(self, x, axis, reverse)

    def logsumexp(self, x, axes, keepdims):
        return self._l.logsumexp(self, x, axes, keepdims)

    def scatter_add(self, base, index, src, axis):
        return self._l.scatter_add(self, base, index, src, axis)

    def stack_push(self, buf, shapes, x):
        return self._l.stack_push(self, buf, shapes, x)

    def stack_pop(self, buf, shapes, shape):
        return self._l.stack_pop(self, buf, shapes, shape)

    def stack_rows(self, buf, width):
        return self._l.stack_rows(self, buf, width)


class Lowerer:
    def __init__(self, program, order=None):
        self.program = program
        self.types = {}
        for b in program.blocks:
            for n, v in b.vars.items():
                self.types[n] = v.type
        self.order = order
        self.lines = []
        # locals holding a ragged stack in this backend's format (see ``stack_new``): local ->
        # (role 'buf' or 'shapes', the partner local)
        self.stacks = {}
        self.consts = []       # values of the extra arguments, in order
        self.const_names = []
        self.stack_sites = {}  # dtype -> stack_new ops of the top block lowered so far (pooled sites)
        self.pools = {}        # dtype -> position of its two StackPools among the extra arguments
        self._top = True       # lowering the program's top block (not a loop's or branch's)
        self._loops = []       # the loops being lowered, innermost last (see ``_enter_loop``)
        self._n = count()

    # ---------------------------------------------------------------- names
    def fresh(self):
        return f"v{next(self._n)}"

    def const_arg(self, value):
        name = f"k{len(self.consts)}"
        self.consts.append(value)
        self.const_names.append(name)
        return name

    def lib(self, name):
        if name not in lib_names():
            raise NativeUnsupported(f"no native helper {name!r}")
        return f"L.{name}"

    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    def type_of(self, name):
        t = self.types.get(name)
        if t is None:
            raise NativeUnsupported(f"var {name} has no type")
        return t

    # ---------------------------------------------------------------- program
    def lower(self):
        prog = self.program
        feeds = list(prog.inputs) + list(prog.params) + list(prog.constants)
        args, env, sig = [], {}, []
        self.indent = 1
        entry = []
        for name in feeds:
            t = self.type_of(name)
            dt = _dtype(t.dtype, f"var {name}'s dtype")
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
                        entry.append(f"L.check_dim({loc}.shape[{j}], {_int(d, 'dim')})")
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

    # ---------------------------------------------------------------- blocks
    def block(self, block, env, order, indent, keep, owned, outputs):
        """Lower ``block``'s ops (``env`` maps its input names to values); returns the values
        of ``outputs``, materialized. ``owned``: input names whose buffers this block may write
        (nothing reads them after the block)."""
        ops = [block.ops[i] for i in order]
        uses = {}
        last = {}
        for pos, op in enumerate(ops):
            for n in op.inputs:
                uses[n] = uses.get(n, 0) + 1
                last[n] = pos
        for n in outputs:
            uses[n] = uses.get(n, 0) + 1
            last[n] = len(ops)
        saved = (self.indent, getattr(self, "_ctx", None), self._top)
        self._top = block is self.program.block
        self.indent = indent
        self._ctx = _BlockCtx(ops, uses, last, set(outputs), set(owned))
        try:
            for pos, op in enumerate(ops):
                self._ctx.pos = pos
                self.lower_op(op, env)
            res = [self.materialize(env[n]) if n in env else self._missing(n) for n in outputs]
            self._fresh_log = set(self._ctx.fresh)
            return res
        finally:
            self.indent, self._ctx, self._top = saved

    def _missing(self, name):
        raise NativeUnsupported(f"var {name} is read but defined nowhere")

    def get(self, env, name):
        try:
            return env[name]
        except KeyError:
            raise NativeUnsupported(f"var {name} is read before it is defined") from None

    # ---------------------------------------------------------------- ops
    def lower_op(self, op, env):
        if op.type in ("cond", "while", "scan") and op.blocks:
            lower_cf = {"cond": self.lower_cond, "while": self.lower_while, "scan": self.lower_scan}[op.type]
            return lower_cf(op, env)
        if op.blocks or op.type not in OPS:
            raise NativeUnsupported(f"op {op.type} (output {op.outputs[0] if op.outputs else '-'}) "
                                    f"has no native lowering")
        opdef = OPS[op.type]
        hook = opdef.lowering(BACKEND)
        where = f"op {op.type} (output {op.outputs[0] if op.outputs else '-'})"
        if hook is None:
            raise NativeUnsupported(f"{where} has no native lowering")
        if opdef.effect:
            raise NativeUnsupported(f"{where} has effects")
        ins = [self.get(env, n) for n in op.inputs]
        # only hooks marked ``reads_stacks`` (the stack ops, aliases) may read this backend's stack format
        if not getattr(hook, "reads_stacks", False) and any(v.name in self.stacks for v in ins):
            raise NativeUnsupported(f"{where} reads a tensor stack (only stack_push/stack_pop are lowered on stacks)")
        for n in op.inputs:
            self._ctx.pending.pop(n, None)
        out_types = [self.type_of(o) for o in op.outputs]
        for t in out_types:
            _dtype(t.dtype, f"{where}'s output dtype")
        try:
            if opdef.elementwise or getattr(hook, "elementwise", False):
                results = [self.elementwise(op, opdef, hook, ins, out_types[0])]
            else:
                r = hook(Emit(self, op, out_types), *ins, **op.attrs)
                results = list(r) if isinstance(r, (tuple, list)) else [r]
        except TypeError as e:  # attrs the hook does not take
            raise NativeUnsupported(f"{where}: unsupported attrs ({e})") from None
        if len(results) != len(op.outputs):
            raise NativeUnsupported(f"{where}: lowering gave {len(results)} outputs")
        for o, v, t in zip(op.outputs, results, out_types):
            if v.dtype != t.dtype or len(v.shape) != len(t.shape):
                raise NativeUnsupported(f"{where}: lowering gave {v.dtype}[{v.ndim}d], the program says "
                                        f"{t.dtype}[{len(t.shape)}d]")
            v.var = o
            env[o] = v
            if v.kind == "l":
                if self.fusable(o):
                    self._ctx.pending[o] = v
                else:
                    env[o] = self.materialize(v)
                    env[o].var = o

    def fusable(self, name):
        """A lazy result stays lazy when exactly one op of this block reads it and that op is an
        element-wise op or a reduction (it then inlines the expression)."""
        ctx = self._ctx
        if ctx.uses.get(name, 0) != 1 or name in ctx.outputs:
            return False
        for op in ctx.ops[ctx.pos + 1:]:
            if name in op.inputs:
                d = OPS.get(op.type)
                hook = d.lowering(BACKEND) if d is not None else None
                # element-wise ops inline it; so do reductions and broadcasts (``fuses_input`` hooks)
                return hook is not None and not op.blocks and (
                    d.elementwise or getattr(hook, "elementwise", False) or getattr(hook, "fuses_input", False))
        return False

    def elementwise(self, op, opdef, hook, ins, out_t):
        out_dt = out_t.dtype
        in_dts = [v.dtype for v in ins]
        if opdef.comparison:
            cd = types_result(*ins)
        elif opdef.float_inputs:
            cd = float_of(out_dt)
        else:
            cd = out_dt
        raw = getattr(hook, "raw_args", False)
        e = ScalarEmit(self, op, cd, in_dts, out_dt)
        res_dt = self._res_dtype(opdef, cd)

        def call(args, hook=hook, e=e, attrs=dict(op.attrs)):
            expr = hook(e, *args, **attrs)
            # numba widens small ints (int32 + int32 is int64): bring every result back to its dtype
            return expr if res_dt == "bool" or raw else f"{NP_TYPE[res_dt]}({expr})"

        if all(v.kind == "s" for v in ins):
            args = [v.name if raw else cast_expr(v.name, v.dtype, self._arg_dtype(op, i, cd, v)) for i, v in enumerate(ins)]
            expr = cast_expr(call(args), res_dt, out_dt)
            name = self.fresh()
            self.emit(self.indent, f"{name} = {expr}")
            return V("s", name, out_dt, ())
        shape = tuple(out_t.shape)
        # the expression tree: ('x', fn, children, dtype) over leaves ('v', V)
        kids = []
        for i, v in enumerate(ins):
            kid = v.tree if v.kind == "l" else ("v", v)
            if not raw:
                kid = ("c", kid, v.dtype, self._arg_dtype(op, i, cd, v))
            kids.append(kid)
        tree = ("c", ("x", call, kids), res_dt, out_dt)
        # check the hook accepts the attrs now (errors name the op)
        hook(e, *["_" for _ in ins], **op.attrs)
        return V("l", None, out_dt, shape, tree=tree)

    @staticmethod
    def _arg_dtype(op, i, cd, v):
        if op.type == "where" and i == 0:
            return "bool"
        return cd

    @staticmethod
    def _res_dtype(opdef, cd):
        return "bool" if opdef.comparison else cd

    # ---------------------------------------------------------------- loops over shapes
    def leaves(self, tree, acc):
        tag = tree[0]
        if tag == "v":
            if all(tree[1] is not x for x in acc):
                acc.append(tree[1])
        elif tag == "c":
            self.leaves(tree[1], acc)
        else:
            for k in tree[2]:
                self.leaves(k, acc)
        return acc

    def dims(self, shape, leaves, indent):
        """Runtime extents of an iteration space of static ``shape``: literal ints where known,
        else the broadcast of the leaves' runtime dims (checked)."""
        out = []
        n = len(shape)
        for j, d in enumerate(shape):
            if d is not None:
                out.append(str(_int(d, "dim")))
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

    # ---------------------------------------------------------------- materializing
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

    def donor(self, v, leaves):
        """A leaf array whose buffer the fused loop may write (see the module docstring)."""
        ctx = self._ctx
        for leaf in leaves:
            if leaf.kind != "a" or leaf.dtype != v.dtype or leaf.shape != v.shape or None in leaf.shape:
                continue
            if leaf.layout != "C" or not (leaf.name in ctx.fresh or leaf.var in ctx.owned):
                continue
            if leaf.name in ctx.donated or not self.dies_here(leaf, v):
                continue
            ctx.donated.add(leaf.name)
            return leaf
        return None

    def dies_here(self, v, but=None):
        """Whether array ``v``'s buffer is read by nothing after the op being lowered (other
        than the lazy value ``but``): its var is not an output, nothing reads it later, and
        no other value shows the buffer."""
        ctx = self._ctx
        name = v.var
        return (name is not None and name not in ctx.outputs and name not in ctx.pinned
                and ctx.last.get(name, -1) <= ctx.pos and v.name not in ctx.pinned and not self.read_later(v, but))

    def read_later(self, v, but=None):
        """Whether a lazy value not yet computed (other than ``but``) reads ``v``'s buffer."""
        return any(p is not but and any(x.name == v.name for x in self.leaves(p.tree, []))
                   for p in self._ctx.pending.values())

    def pin(self, v):
        """``v``'s buffer is now visible through another value: never write it in place
        (pinned by var name and by local name, which every alias of the buffer shares)."""
        if v.var is not None:
            self._ctx.pinned.add(v.var)
        if v.name is not None:
            self._ctx.pinned.add(v.name)

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

    # ---------------------------------------------------------------- builders
    def reduce(self, e, kind, x, axes, keepdims):
        out_t = e.out
        if type(keepdims) is not bool:
            raise NativeUnsupported("reduce: keepdims must be a bool")
        nd = x.ndim
        if axes is None or nd == 0:
            ax = list(range(nd))
        else:
            if not isinstance(axes, (list, tuple)):
                axes = [axes]
            ax = sorted({_int(a, "axis") % nd for a in axes})
        odt = out_t.dtype
        if kind in ("sum", "mean"):
            acc_dt = "float64" if odt in ("float32", "float64") else "int64"
        elif kind == "prod":
            acc_dt = odt
        elif kind in ("any", "all"):
            acc_dt = "bool"
        else:
            acc_dt = odt
        init = {"sum": 0, "mean": 0, "prod": 1, "any": False, "all": True}.get(kind)
        if kind in ("max", "min"):
            if np.dtype(odt).kind == "f":
                init = -np.inf if kind == "max" else np.inf
            elif odt == "bool":
                init = kind == "min"
            else:
                info = np.iinfo(odt)
                init = info.min if kind == "max" else info.max
        k_init = self.const_arg(np.asarray(init, dtype=acc_dt)[()])
        if x.kind == "s":
            src_tree = ("v", x)
        elif x.kind == "l":
            src_tree = x.tree
        else:
            src_tree = ("v", x)
        src_tree = ("c", src_tree, x.dtype, acc_dt if kind not in ("any", "all") else "bool")
        leaves = self.leaves(src_tree, [])
        ind = self.indent
        dims = self.dims(x.shape, leaves, ind)
        full = len(ax) == nd
        count_expr = " * ".join(dims[a] for a in ax) or "1"
        if kind in ("max", "min"):
            self.emit(ind, f"if {count_expr} == 0: raise ValueError('native program: a max/min reduction over zero elements')")
        upd = {"sum": "{a} + {v}", "mean": "{a} + {v}", "prod": "{a} * {v}", "any": "{a} or {v}",
               "all": "{a} and {v}", "max": "L.maximum({a}, {v})", "min": "L.minimum({a}, {v})"}[kind]
        if full and nd == 1 and kind in ("sum", "mean") and acc_dt == "float64":
            # four float64 partial sums: the adds of a short vector do not wait on each other
            parts = [self.fresh() for _ in range(4)]
            self.emit(ind, f"{' = '.join(parts)} = {k_init}")
            i, top = self.fresh(), self.fresh()
            self.emit(ind, f"{top} = {dims[0]} - {dims[0]} % 4")
            self.emit(ind, f"for {i} in range(0, {top}, 4):")
            for q, part in enumerate(parts):
                val = self.render(src_tree, x.shape, [f"{i} + {q}" if q else i], ind + 1, {})
                self.emit(ind + 1, f"{part} = {part} + {val}")
            self.emit(ind, f"for {i} in range({top}, {dims[0]}):")
            val = self.render(src_tree, x.shape, [i], ind + 1, {})
            self.emit(ind + 1, f"{parts[0]} = {parts[0]} + {val}")
            acc = self.fresh()
            self.emit(ind, f"{acc} = ({parts[0]} + {parts[1]}) + ({parts[2]} + {parts[3]})")
        elif full and nd >= 2 and kind in ("sum", "mean") and acc_dt == "float64":
            # a float64 partial sum per position of the last axis, added up at the end: the
            # adds of the inner loop do not wait on each other (one running sum would chain
            # every add of the array on the one before: ~4 cycles each)
            row, j = self.fresh(), self.fresh()
            self.emit(ind, f"{row} = np.zeros({dims[-1]}, np.float64)")
            idx, inner = self.loops(dims, ind)
            val = self.render(src_tree, x.shape, idx, inner, {})
            self.emit(inner, f"{row}[{idx[-1]}] = {row}[{idx[-1]}] + {val}")
            acc = self.fresh()
            self.emit(ind, f"{acc} = {k_init}")
            self.emit(ind, f"for {j} in range({dims[-1]}):")
            self.emit(ind + 1, f"{acc} = {acc} + {row}[{j}]")
        elif full:
            acc = self.fresh()
            self.emit(ind, f"{acc} = {k_init}")
            idx, inner = self.loops(dims, ind)
            val = self.render(src_tree, x.shape, idx, inner, {})
            self.emit(inner, f"{acc} = {upd.format(a=acc, v=val)}")
        if full:
            res = acc
            if kind == "mean":
                res = f"{acc} / ({count_expr})"
            name = self.fresh()
            self.emit(ind, f"{name} = {cast_expr(res, 'float64' if kind == 'mean' else acc_dt, odt)}")
            if keepdims and nd:
                arr = self.fresh()
                self.emit(ind, f"{arr} = np.full(({', '.join('1' for _ in range(nd))},), {name})")
                return self.new_array(arr, odt, (1,) * nd)
            return V("s", name, odt, ())
        kshape = [("1" if j in ax else dims[j]) for j in range(nd)]
        acc = self.fresh()
        self.emit(ind, f"{acc} = np.full(({', '.join(kshape)},), {k_init})")
        idx, inner = self.loops(dims, ind)
        val = self.render(src_tree, x.shape, idx, inner, {})
        aidx = ", ".join("0" if j in ax else idx[j] for j in range(nd))
        self.emit(inner, f"{acc}[{aidx}] = {upd.format(a=f'{acc}[{aidx}]', v=val)}")
        res = acc
        if kind == "mean":
            r2 = self.fresh()
            self.emit(ind, f"{r2} = {acc} / ({count_expr})")
            res = r2
        if odt != acc_dt or kind == "mean":
            r3 = self.fresh()
            self.emit(ind, f"{r3} = {res}.astype({NP_TYPE[odt]})")
            res = r3
        oshape = tuple(out_t.shape)
        if not keepdims:
            r4 = self.fresh()
            rdims = [dims[j] for j in range(nd) if j not in ax]
            self.emit(ind, f"{r4} = {res}.reshape(({', '.join(rdims)}{',' if len(rdims) == 1 else ''}))")
            res = r4
        return self.new_array(res, odt, oshape)

    def matmul(self, e, a, b):
        odt = e.out.dtype
        if odt not in ("float32", "float64"):
            e.unsupported("integer matmul (numba's np.dot is for floats)")
        if a.ndim not in (1, 2) or b.ndim not in (1, 2):
            e.unsupported("batched matmul (more than 2 dims)")
        # With MKL every product but a 1-d dot goes to it, vectors as one-row or one-column
        # matrices: a program calling both BLAS libraries keeps two thread pools spinning on
        # the same cores (an MLP step whose rank-10 product alone called np.dot: 8.0 ms
        # back to back, against 1.9 ms all on MKL)
        gemm = _mkl_matmul(odt) if a.ndim + b.ndim > 2 else None
        args = []
        for v in (a, b):
            v = self.array(v)
            # (MKL's gemm reads strided rows or columns of a matrix; a vector is reshaped)
            if v.layout == "A" and (gemm is None or v.ndim == 1):
                v = self.contiguous(v)
            if v.dtype != odt:
                name = self.fresh()
                self.emit(self.indent, f"{name} = {v.name}.astype({NP_TYPE[odt]})")
                v = self.new_array(name, odt, v.shape)
            args.append(v)
        if a.ndim == 2 and b.ndim == 2:
            rows = self._row_product(args[0], args[1], odt, tuple(e.out.shape))
            if rows is not None:
                return rows
        name = self.fresh()
        if gemm is not None:
            x, y = args[0].name, args[1].name
            if a.ndim == 1:
                call = f"L.{gemm}({x}.reshape((1, {x}.shape[0])), {y}).reshape(({y}.shape[1],))"
            elif b.ndim == 1:
                call = f"L.{gemm}({x}, {y}.reshape(({y}.shape[0], 1))).reshape(({x}.shape[0],))"
            else:
                call = f"L.{gemm}({x}, {y})"
            self.emit(self.indent, f"{name} = {call}")
        elif a.ndim == 2 and b.ndim == 2 and _short_wide(a.shape[0], a.shape[1], b.shape[1]):
            # A short, wide product is computed as (b.T @ a.T).T: OpenBLAS splits and packs it
            # better in that orientation (benchmarks/bench_native_matmul.py); b.T is read
            # contiguous, from a copy made once before the loop where b is loop-invariant
            bt = self._transposed(args[1])
            at = f"{args[0].name}.T"
            self.emit(self.indent, f"{name} = np.ascontiguousarray(np.dot({bt}, {at}).T)")
        else:
            self.emit(self.indent, f"{name} = np.dot({args[0].name}, {args[1].name})")
        if a.ndim == 1 and b.ndim == 1:
            return V("s", name, odt, ())
        return self.new_array(name, odt, tuple(e.out.shape))

    def _transposed(self, b):
        """An expression for ``b.T`` (2-d): C-contiguous where that is free or can be made
        once per loop entry (``b`` defined outside the innermost loop being lowered), else a
        transposed view."""
        if b.layout == "F":  # b is c.T of a contiguous c: b.T is c
            return f"{b.name}.T"
        loop = self._loops[-1] if self._loops else None
        if loop is None or b.name not in loop["caps"]:
            return f"{b.name}.T"
        bt = loop["hoisted"].get(b.name)
        if bt is None:
            bt = loop["hoisted"][b.name] = self.fresh()
            self._before_loop(loop, [f"{bt} = np.ascontiguousarray({b.name}.T)"])
        return bt

    def _row_product(self, a, b, odt, shape):
        """``xs[t] @ w`` in a loop where ``xs`` (3-d) and ``w`` are loop-invariant: the products
        of ``ROW_CHUNK`` rows' worth of consecutive ``t`` computed as one ``(rows * B, D) @ w``
        product, when ``t`` first falls outside the rows computed so far (a loop stopping early
        wastes at most one chunk). One product per step cost 12.5 us on the RNN benchmark's
        ``(32, 64) @ (64, 256)``, with scipy's OpenBLAS splitting each over 2 threads; 8 to 32
        steps at once cost 6-8 us a step. The result is a view of the chunk: not fresh, so nothing
        writes into it and a carry copies it. None where the pattern does not apply."""
        loop = self._loops[-1] if self._loops else None
        row = loop["rows"].get(a.name) if loop is not None else None
        if (row is None or b.name not in loop["caps"] or b.layout not in ("C", "F") or a.dtype != odt
                or b.dtype != odt):
            return None
        xs, k = row
        key = ("rows", xs.name, b.name)
        state = loop["hoisted"].get(key)
        if state is None:
            state = loop["hoisted"][key] = [self.fresh() for _ in range(4)]
            x2, lo, hi, chunk = state
            self._before_loop(loop, [
                f"{x2} = {xs.name}.reshape(({xs.name}.shape[0] * {xs.name}.shape[1], {xs.name}.shape[2]))",
                f"{lo} = 0", f"{hi} = 0",
                f"{chunk} = np.empty((0, {xs.name}.shape[1], {b.name}.shape[1]), {NP_TYPE[odt]})"])
        x2, lo, hi, chunk = state
        rows = xs.shape[1]
        n = max(1, ROW_CHUNK // rows) if isinstance(rows, int) and rows > 0 else 16
        tn, name = self.fresh(), self.fresh()
        ind, T, B = self.indent, f"{xs.name}.shape[0]", f"{xs.name}.shape[1]"
        self.emit(ind, f"{tn} = {k} if {k} >= 0 else {k} + {T}")  # (bounds-checked by the index)
        self.emit(ind, f"if not ({lo} <= {tn} < {hi}):")
        self.emit(ind + 1, f"{lo} = ({tn} // {n}) * {n}")
        self.emit(ind + 1, f"{hi} = min({lo} + {n}, {T})")
        gemm = _mkl_matmul(odt)
        dot = f"L.{gemm}" if gemm else "np.dot"
        self.emit(ind + 1, f"{chunk} = {dot}({x2}[{lo} * {B}:{hi} * {B}], {b.name}).reshape(({hi} - {lo}, {B}, "
                           f"{b.name}.shape[1]))")
        self.emit(ind, f"{name} = {chunk}[{tn} - {lo}]")
        return self.new_array(name, odt, shape, fresh=False)

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

    def reshape(self, e, x, shape):
        """``x`` reshaped to the op's output type (``shape``: ints, at most one -1)."""
        dims = [_int(d, "reshape dim") for d in shape]
        if dims.count(-1) > 1 or any(d < -1 for d in dims):
            e.unsupported("bad reshape target")
        if x.kind == "s":
            x = self.array(x)
        x = self.contiguous(x)
        self.pin(x)
        name = self.fresh()
        if not dims:
            self.emit(self.indent, f"{name} = {x.name}.reshape(())")
        else:
            self.emit(self.indent, f"{name} = {x.name}.reshape(({', '.join(map(str, dims))},))")
        if not dims:
            s = self.fresh()
            self.emit(self.indent, f"{s} = {name}[()]")
            return V("s", s, x.dtype, ())
        return V("a", name, x.dtype, tuple(e.out.shape))

    def transpose(self, e, x, perm):
        nd = x.ndim
        if perm is None:
            perm = list(range(nd))[::-1]
        perm = [_int(p, "perm") % max(nd, 1) for p in perm]
        if sorted(perm) != list(range(nd)):
            e.unsupported("perm is not a permutation")
        if nd < 2 or perm == list(range(nd)):
            return self.alias(x)
        x = self.array(x)
        self.pin(x)
        name = self.fresh()
        if nd == 2 and x.layout == "C":
            self.emit(self.indent, f"{name} = {x.name}.T")
            return V("a", name, x.dtype, tuple(e.out.shape), layout="F")
        self.emit(self.indent, f"{name} = np.transpose({x.name}, ({', '.join(map(str, perm))},))")
        return V("a", name, x.dtype, tuple(e.out.shape), layout="A")

    def broadcast(self, e, x, shape):
        """``x`` broadcast to the op's output shape, as a lazy value (fused by consumers)."""
        shape = tuple(e.out.shape)
        if x.kind == "l":
            return V("l", None, x.dtype, shape, tree=x.tree)
        return V("l", None, x.dtype, shape, tree=("v", x))

    def join(self, e, xs, axis, new_axis):
        odt = e.out.dtype
        vs = []
        for v in xs:
            v = self.array(v)
            if v.layout != "C":
                v = self.contiguous(v)
            if v.dtype != odt:
                name = self.fresh()
                self.emit(self.indent, f"{name} = {v.name}.astype({NP_TYPE[odt]})")
                v = self.new_array(name, odt, v.shape)
            vs.append(v)
        nd = len(e.out.shape)
        axis = _int(axis, "axis") % max(nd, 1)
        name = self.fresh()
        fn = "np.stack" if new_axis else "np.concatenate"
        self.emit(self.indent, f"{name} = {fn}(({', '.join(v.name for v in vs)},), {axis})")
        return self.new_array(name, odt, tuple(e.out.shape))

    def fill(self, e, value, shape_of):
        t = e.out
        if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            e.unsupported("fill value is not a number")
        k = self.const_arg(np.asarray(value, dtype=t.dtype)[()])
        if len(t.shape) == 0:
            return V("s", k, t.dtype, ())
        if shape_of is not None:
            src = self.array(shape_of)
            dims = [f"{src.name}.shape[{j}]" for j in range(src.ndim)]
        else:
            if None in t.shape:
                e.unsupported("fill of a shape unknown when lowering")
            dims = [str(_int(d, "dim")) for d in t.shape]
        name = self.fresh()
        self.emit(self.indent, f"{name} = np.full(({', '.join(dims)},), {k})")
        return self.new_array(name, t.dtype, tuple(t.shape))

    def dim(self, e, x, axis):
        a = _int(axis, "axis")
        if not -x.ndim <= a < x.ndim:
            e.unsupported("axis out of range")
        if x.shape[a] is not None:
            return V("s", self.const_arg(np.int64(x.shape[a])), "int64", ())
        x = self.array(x)
        name = self.fresh()
        self.emit(self.indent, f"{name} = np.int64({x.name}.shape[{a % x.ndim}])")
        return V("s", name, "int64", ())

    def softmax(self, e, x, axis, log):
        """(log-)softmax along ``axis``, one pass per row for the max, one for the sum of exps
        (float64), one for the output; the kernel's formula (max-shifted), numpy's NaN/inf."""
        odt = e.out.dtype
        if odt not in ("float32", "float64") or x.ndim == 0:
            e.unsupported("softmax of a 0-d or non-float result")
        a = _int(axis, "axis")
        if not -x.ndim <= a < x.ndim:
            e.unsupported("axis out of range")
        a %= x.ndim
        x = self.contiguous(self.array(x))
        if x.dtype != odt:
            c = self.fresh()
            self.emit(self.indent, f"{c} = {x.name}.astype({NP_TYPE[odt]})")
            x = self.new_array(c, odt, x.shape)
        ind = self.indent
        outer = " * ".join(f"{x.name}.shape[{j}]" for j in range(a)) or "1"
        inner = " * ".join(f"{x.name}.shape[{j}]" for j in range(a + 1, x.ndim)) or "1"
        xr, out, o, i, k, m, s, v = (self.fresh() for _ in range(8))
        self.emit(ind, f"{xr} = {x.name}.reshape(({outer}, {x.name}.shape[{a}], {inner}))")
        self.emit(ind, f"{out} = np.empty_like({xr})")
        k_inf = self.const_arg(np.asarray(-np.inf, dtype=odt)[()])
        self.emit(ind, f"for {o} in range({xr}.shape[0]):")
        self.emit(ind + 1, f"for {i} in range({xr}.shape[2]):")
        b = ind + 2
        self.emit(b, f"{m} = {k_inf}")
        self.emit(b, f"for {k} in range({xr}.shape[1]):")
        self.emit(b + 1, f"{m} = L.maximum({m}, {xr}[{o}, {k}, {i}])")
        self.emit(b, f"{s} = 0.0")
        self.emit(b, f"for {k} in range({xr}.shape[1]):")
        self.emit(b + 1, f"{v} = np.exp({xr}[{o}, {k}, {i}] - {m})")
        if not log:
            self.emit(b + 1, f"{out}[{o}, {k}, {i}] = {v}")
        self.emit(b + 1, f"{s} = {s} + np.float64({v})")
        st = self.fresh()  # the sum in the output dtype (a new local: numba types each once)
        self.emit(b, f"{st} = {NP_TYPE[odt]}({s})")
        self.emit(b, f"for {k} in range({xr}.shape[1]):")
        if log:
            self.emit(b + 1, f"{out}[{o}, {k}, {i}] = ({xr}[{o}, {k}, {i}] - {m}) - np.log({st})")
        else:
            self.emit(b + 1, f"{out}[{o}, {k}, {i}] = {out}[{o}, {k}, {i}] / {st}")
        res = self.fresh()
        self.emit(ind, f"{res} = {out}.reshape({x.name}.shape)")
        return self.new_array(res, odt, tuple(e.out.shape))

    def basic_index(self, e, x, index, add=None):
        """``x[ints, slices, ...]`` as a numba view (ints bounds-checked: numba does not);
        with ``add`` (a value of x's dtype), ``x[index] += add`` in place, returning x."""
        if not isinstance(index, (list, tuple)):
            e.unsupported("index is not a list")
        entries = []
        for ent in index:
            if not isinstance(ent, (list, tuple)) or not ent or ent[0] not in ("i", "s", "e", "r"):
                e.unsupported("only ints, 0-d integer tensors, slices and Ellipsis are lowered")
            entries.append(ent)
        n_fixed = sum(1 for ent in entries if ent[0] != "e")
        if sum(1 for ent in entries if ent[0] == "e") > 1 or n_fixed > x.ndim:
            e.unsupported("bad index")
        full = []
        for ent in entries:
            if ent[0] == "e":
                full += [["s", None, None, None]] * (x.ndim - n_fixed)
            else:
                full.append(ent)
        full += [["s", None, None, None]] * (x.ndim - len(full))
        x = self.array(x)
        parts = []
        for dim, ent in enumerate(full):
            if ent[0] == "r":  # a 0-d integer tensor: an int known when the program runs
                k = self.fresh()
                self.emit(self.indent, f"{k} = np.int64({ent[1]})")
                self.emit(self.indent, f"if not -{x.name}.shape[{dim}] <= {k} < {x.name}.shape[{dim}]: "
                                       f"raise IndexError('native program: index out of range')")
                parts.append(k)
            elif ent[0] == "i":
                k = _int(ent[1], "index")
                d = x.shape[dim]
                if d is not None:
                    if not -d <= k < d:
                        e.unsupported("index out of range")
                else:
                    self.emit(self.indent, f"if not -{x.name}.shape[{dim}] <= {k} < {x.name}.shape[{dim}]: "
                                           f"raise IndexError('native program: index out of range')")
                parts.append(str(k))
            else:
                if len(ent) != 4:
                    e.unsupported("bad slice")
                b = [None if v is None else _int(v, "slice bound") for v in ent[1:]]
                if b[2] == 0:
                    e.unsupported("slice step 0")
                parts.append(":".join("" if v is None else str(v) for v in b))
        self.pin(x)
        if add is not None:  # index_add: x (a fresh copy) gets ``add`` added at the index
            if all(ent[0] in ("i", "r") for ent in full):
                at = f"{x.name}[{', '.join(parts)}]"
                self.emit(self.indent, f"{at} = {at} + {add.name}")
            else:
                view = self.fresh()
                self.emit(self.indent, f"{view} = {x.name}[{', '.join(parts)}]")
                self.emit(self.indent, f"np.add({view}, {add.name}, {view})")
            return x
        name = self.fresh()
        if all(ent[0] in ("i", "r") for ent in full):
            self.emit(self.indent, f"{name} = {x.name}[{', '.join(parts)}]")
            return V("s", name, x.dtype, ())
        n_int = next(q for q, ent in enumerate(full) if ent[0] not in ("i", "r"))
        if x.layout == "C" and n_int and all(ent[0] == "s" and list(ent[1:]) in ([None, None, None], [None, None, 1])
                                            for ent in full[n_int:]):
            # leading ints then whole dims: numba types x[i] of a contiguous x as contiguous
            # (with the slices spelled out it cannot), so BLAS and fused loops read it as is
            self.emit(self.indent, f"{name} = {x.name}[{', '.join(parts[:n_int])}]")
            loop = self._loops[-1] if self._loops else None
            if loop is not None and n_int == 1 and x.ndim == 3 and x.name in loop["caps"]:
                loop["rows"][name] = (x, parts[0])  # a row of a loop-invariant array (see _row_product)
            return V("a", name, x.dtype, tuple(e.out.shape), layout="C")
        self.emit(self.indent, f"{name} = {x.name}[{', '.join(parts)}]")
        return V("a", name, x.dtype, tuple(e.out.shape), layout="A")

    def constant(self, e, value):
        t = e.out
        arr = OPS["constant"].kernel(np, value=value, dtype=t.dtype, shape=t.shape)
        if arr.ndim == 0:
            return V("s", self.const_arg(arr[()]), t.dtype, ())
        return V("a", self.const_arg(np.ascontiguousarray(arr)), t.dtype, arr.shape)

    # ---------------------------------------------------------------- argmax / argmin / cumsum
    def _rows(self, e, x, axis):
        """``x`` (contiguous) viewed as (outer, n, inner) around ``axis`` (None: flattened);
        returns (x, the 3-d local, the axis or None)."""
        x = self.contiguous(self.array(x))
        xr = self.fresh()
        if axis is None or x.ndim == 0:
            self.emit(self.indent, f"{xr} = {x.name}.reshape((1, {x.name}.size, 1))")
            return x, xr, None
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                e.unsupported("more than one axis")
            axis = axis[0]
        a = _int(axis, "axis")
        if not -x.ndim <= a < x.ndim:
            e.unsupported("axis out of range")
        a %= x.ndim
        outer = " * ".join(f"{x.name}.shape[{j}]" for j in range(a)) or "1"
        inner = " * ".join(f"{x.name}.shape[{j}]" for j in range(a + 1, x.ndim)) or "1"
        self.emit(self.indent, f"{xr} = {x.name}.reshape(({outer}, {x.name}.shape[{a}], {inner}))")
        return x, xr, a

    def arg_reduce(self, e, kind, x, axis, keepdims):
        """numpy's argmax/argmin: the first extreme, a NaN counting as the extreme (the first NaN)."""
        if type(keepdims) is not bool:
            e.unsupported("keepdims must be a bool")
        x, xr, a = self._rows(e, x, axis)
        ind = self.indent
        out, o, i, k, b, bi, v = (self.fresh() for _ in range(7))
        cmp = ">" if kind == "max" else "<"
        self.emit(ind, f"if {xr}.shape[1] == 0: raise ValueError('native program: arg{kind} of an empty sequence')")
        self.emit(ind, f"{out} = np.empty(({xr}.shape[0], {xr}.shape[2]), np.int64)")
        self.emit(ind, f"for {o} in range({xr}.shape[0]):")
        self.emit(ind + 1, f"for {i} in range({xr}.shape[2]):")
        c = ind + 2
        self.emit(c, f"{b} = {xr}[{o}, 0, {i}]")
        self.emit(c, f"{bi} = 0")
        self.emit(c, f"for {k} in range(1, {xr}.shape[1]):")
        self.emit(c + 1, f"if {b} != {b}: break")
        self.emit(c + 1, f"{v} = {xr}[{o}, {k}, {i}]")
        self.emit(c + 1, f"if {v} {cmp} {b} or {v} != {v}:")
        self.emit(c + 2, f"{b} = {v}")
        self.emit(c + 2, f"{bi} = {k}")
        self.emit(c, f"{out}[{o}, {i}] = {bi}")
        oshape = tuple(e.out.shape)
        if not oshape:
            name = self.fresh()
            self.emit(ind, f"{name} = {out}[0, 0]")
            return V("s", name, "int64", ())
        if a is None:  # keepdims over every axis
            dims = ["1"] * x.ndim
        else:
            dims = [f"{x.name}.shape[{j}]" for j in range(x.ndim) if j != a]
            if keepdims:
                dims.insert(a, "1")
        res = self.fresh()
        self.emit(ind, f"{res} = {out}.reshape(({', '.join(dims)},))")
        return self.new_array(res, "int64", oshape)

    def logsumexp(self, e, x, axes, keepdims):
        """The kernel's formula per row: the max (0 where not finite), the sum of exps (in
        float64, at least as accurate as numpy's pairwise float32 sum), log + max."""
        odt = e.out.dtype
        if odt not in ("float32", "float64") or type(keepdims) is not bool:
            e.unsupported("logsumexp of a non-float result")
        if x.dtype != odt:
            x = self.materialize(x)
            c = self.fresh()
            x = self.array(x)
            self.emit(self.indent, f"{c} = {x.name}.astype({NP_TYPE[odt]})")
            x = self.new_array(c, odt, x.shape)
        if axes is not None and x.ndim and len(axes) == x.ndim and sorted(axes) == list(range(x.ndim)):
            axes = None
        x, xr, a = self._rows(e, x, axes)
        ind = self.indent
        out, o, i, k, m, t = (self.fresh() for _ in range(6))
        k_inf = self.const_arg(np.asarray(-np.inf, dtype=odt)[()])
        k_zero = self.const_arg(np.asarray(0, dtype=odt)[()])
        self.emit(ind, f"{out} = np.empty(({xr}.shape[0], {xr}.shape[2]), {NP_TYPE[odt]})")
        self.emit(ind, f"for {o} in range({xr}.shape[0]):")
        self.emit(ind + 1, f"for {i} in range({xr}.shape[2]):")
        c = ind + 2
        self.emit(c, f"{m} = {k_inf}")
        self.emit(c, f"for {k} in range({xr}.shape[1]):")
        self.emit(c + 1, f"{m} = L.maximum({m}, {xr}[{o}, {k}, {i}])")
        self.emit(c, f"if not np.isfinite({m}): {m} = {k_zero}")
        self.emit(c, f"{t} = 0.0")
        self.emit(c, f"for {k} in range({xr}.shape[1]):")
        self.emit(c + 1, f"{t} = {t} + np.float64(np.exp({xr}[{o}, {k}, {i}] - {m}))")
        tt = self.fresh()
        self.emit(c, f"{tt} = {NP_TYPE[odt]}({t})")
        self.emit(c, f"{out}[{o}, {i}] = {NP_TYPE[odt]}(np.log({tt}) + {m})")
        oshape = tuple(e.out.shape)
        if not oshape:
            name = self.fresh()
            self.emit(ind, f"{name} = {out}[0, 0]")
            return V("s", name, odt, ())
        if a is None:
            dims = ["1"] * x.ndim
        else:
            dims = [f"{x.name}.shape[{j}]" for j in range(x.ndim) if j != a]
            if keepdims:
                dims.insert(a, "1")
        res = self.fresh()
        self.emit(ind, f"{res} = {out}.reshape(({', '.join(dims)},))")
        return self.new_array(res, odt, oshape)

    def cumsum(self, e, x, axis, reverse):
        """numpy's cumsum: one add at a time along the axis, in the output dtype."""
        if type(reverse) is not bool:
            e.unsupported("reverse must be a bool")
        odt = e.out.dtype
        if x.ndim == 0:
            x = self.materialize(x)
            name = self.fresh()
            self.emit(self.indent, f"{name} = {cast_expr(x.name, x.dtype, odt)}")
            return V("s", name, odt, ())
        x, xr, a = self._rows(e, x, axis)
        ind = self.indent
        out, o, i, k, acc = (self.fresh() for _ in range(5))
        # -0.0 + v is v for every float v (numpy's first element is x[0] itself, signed zeros kept)
        zero = self.const_arg(np.asarray(-0.0 if odt in ("float32", "float64") else 0, dtype=odt)[()])
        self.emit(ind, f"{out} = np.empty({xr}.shape, {NP_TYPE[odt]})")
        self.emit(ind, f"for {o} in range({xr}.shape[0]):")
        self.emit(ind + 1, f"for {i} in range({xr}.shape[2]):")
        c = ind + 2
        self.emit(c, f"{acc} = {zero}")
        rng = f"range({xr}.shape[1] - 1, -1, -1)" if reverse else f"range({xr}.shape[1])"
        self.emit(c, f"for {k} in {rng}:")
        val = cast_expr(f"{xr}[{o}, {k}, {i}]", x.dtype, odt)
        self.emit(c + 1, f"{acc} = {NP_TYPE[odt]}({acc} + {val})")
        self.emit(c + 1, f"{out}[{o}, {k}, {i}] = {acc}")
        res = self.fresh()
        self.emit(ind, f"{res} = {out}.reshape({x.name}.shape)")
        return self.new_array(res, odt, tuple(e.out.shape))

    # ---------------------------------------------------------------- gather / scatter_add
    def _along_axis(self, e, x, index, axis, what):
        """Checks shared by gather and scatter_add; returns (x, index, axis, loop dims, loop
        indices, the index element's local, the position along ``axis`` (checked, wrapped))."""
        if x.ndim == 0 or index.ndim != x.ndim or index.dtype not in ("int32", "int64"):
            e.unsupported(f"{what} of a 0-d tensor or with a bad index")
        a = _int(axis, "axis")
        if not -x.ndim <= a < x.ndim:
            e.unsupported("axis out of range")
        a %= x.ndim
        x, index = self.array(x), self.array(index)
        ind = self.indent
        for j in range(x.ndim):
            if j != a:  # torch.gather reads the corner of x as large as the index (ShapeError otherwise)
                self.emit(ind, f"if {index.name}.shape[{j}] > {x.name}.shape[{j}]: "
                               f"raise ValueError('native program: {what}: index larger than the tensor')")
        dims = [f"{index.name}.shape[{j}]" for j in range(index.ndim)]
        idx, inner = self.loops(dims, ind)
        k = self.fresh()
        self.emit(inner, f"{k} = np.int64({index.name}[{', '.join(idx)}])")
        # PyTorch's rule (the kernel's): a position outside [0, size), negative ones too, raises
        self.emit(inner, f"if not 0 <= {k} < {x.name}.shape[{a}]: "
                         f"raise IndexError('native program: {what}: index out of range')")
        at = ", ".join(k if j == a else i for j, i in enumerate(idx))
        return x, index, idx, inner, at

    def gather(self, e, x, index, axis):
        odt = e.out.dtype
        if x.dtype != odt:
            e.unsupported("gather changes the dtype")
        x0 = self.array(x)
        out = self.fresh()
        ind = self.indent
        idx_v = self.array(index)
        self.emit(ind, f"{out} = np.empty({idx_v.name}.shape, {NP_TYPE[odt]})")
        x, index, idx, inner, at = self._along_axis(e, x0, idx_v, axis, "gather")
        self.emit(inner, f"{out}[{', '.join(idx)}] = {x.name}[{at}]")
        return self.new_array(out, odt, tuple(e.out.shape))

    def scatter_add(self, e, base, index, src, axis):
        odt = e.out.dtype
        if base.dtype != odt or src.dtype != odt:
            e.unsupported("scatter_add with operands of different dtypes")
        src = self.array(src)
        if src.ndim != base.ndim:
            e.unsupported("scatter_add: src rank differs")
        out = self.copy_of(self.array(base))
        idx_v = self.array(index)
        for j in range(src.ndim):
            self.emit(self.indent, f"if {src.name}.shape[{j}] < {idx_v.name}.shape[{j}]: "
                                   f"raise ValueError('native program: scatter_add: src smaller than the index')")
        _, index, idx, inner, at = self._along_axis(e, out, idx_v, axis, "scatter_add")
        # np.add.at's order: one add at a time, in the index's C order (repeats accumulate alike)
        self.emit(inner, f"{out.name}[{at}] = {out.name}[{at}] + {src.name}[{', '.join(idx)}]")
        return out

    # ---------------------------------------------------------------- ragged stacks
    # A stack (``ops/tensor_list.py``: ``buf``, the elements flattened end to end, and
    # ``shapes``, one row of dims per element) is held here as two growing arrays: ``buf`` with
    # room after its fill mark, and ``shapes`` of shape ``(room + 1, rank + 3)`` whose row 0 is a
    # header ``[count, fill, site]`` and whose rows 1..count hold the dims (``_lib.py``). A push writes into the room
    # (doubling it when full) and a pop moves the header back, so both cost O(element); they do
    # so in place only when nothing else reads the stack they consume (the stack a ``while``
    # gradient keeps: each version read once, by the next push or pop), else they copy first
    # (as the Python backend forks). Only the stack ops and aliases read this format (checked
    # in ``lower_op``: hooks marked ``reads_stacks``); a program's stack outputs are converted back to the Python backend's
    # arrays, and a stack fed to the program is converted at its first push or pop.
    def _stack_pair(self, e, buf, shapes):
        """``(buf, shapes)`` in this backend's format (converted if they come from outside)."""
        rb, rs = self.stacks.get(buf.name), self.stacks.get(shapes.name)
        if rb == ("buf", shapes.name) and rs == ("shapes", buf.name):
            return buf, shapes
        if rb is not None or rs is not None:
            e.unsupported("a stack's two arrays come from different stacks")
        b, sh = self.fresh(), self.fresh()
        self.emit(self.indent, f"{b}, {sh} = L.stack_from_py({self.array(buf).name}, {self.array(shapes).name})")
        return self._new_stack(b, sh, buf.dtype)

    def _new_stack(self, b, sh, dtype):
        self.stacks[b] = ("buf", sh)
        self.stacks[sh] = ("shapes", b)
        return self.new_array(b, dtype, (None,)), self.new_array(sh, "int64", (None, None))

    def _stack_in_place(self, e, vals):
        """Whether the stack op ``e`` may update its input stack in place: this op is the only
        reader of both arrays, and their buffers belong to this block."""
        ctx = self._ctx
        for name, v in zip(e._op.inputs, vals):
            if (ctx.uses.get(name, 0) != 1 or name in ctx.outputs or name in ctx.pinned or v.name in ctx.pinned
                    or not (v.name in ctx.fresh or name in ctx.owned) or self.read_later(v)):
                return False
        return True

    def stack_new(self, e, like):
        t_buf, t_sh = e.out_types
        rank = len(t_sh.shape) and t_sh.shape[1]
        rank = _int(rank, "stack rank")
        b, sh = self.fresh(), self.fresh()
        dt = t_buf.dtype
        arena, slots = self.pool_args(dt)
        site = -1
        if self._top:  # runs once per call: its stack may start in memory the last call's used
            site = self.stack_sites.get(dt, 0)
            self.stack_sites[dt] = site + 1
        self.emit(self.indent, f"{b}, {sh} = L.stack_new({arena}, {slots}, {site}, {rank})")
        return self._new_stack(b, sh, dt)

    def pool_args(self, dtype):
        """The arena and slots arguments of ``dtype``'s pooled stacks (see the stack section of
        ``_lib.py``; the caller passes one set per call in flight)."""
        if dtype not in self.pools:
            self.pools[dtype] = len(self.consts)
            self.const_arg(StackPool(dtype, "arena"))
            self.const_arg(StackPool(dtype, "slots"))
        i = self.pools[dtype]
        return self.const_names[i], self.const_names[i + 1]

    def stack_rows(self, e, buf, width):
        """A stack's elements as rows of ``width``: a view of its buffer, which is pinned (a
        later push or pop of the stack then works on a copy, never in this buffer); a copy
        where the stack is an output of the block. A view that a program output shares is
        copied by ``compile_lowered``'s caller (the buffer may be pooled)."""
        tag = self.stacks.get(buf.name)
        if tag is not None:
            if tag[0] != "buf":
                e.unsupported("reads a stack's shapes, not its elements")
            view = e._op.inputs[0] not in self._ctx.outputs
            if view:
                self.pin(buf)
            name = self.fresh()
            self.emit(self.indent, f"{name} = L.{'stack_buf_view' if view else 'stack_buf_out'}({buf.name}, {tag[1]})")
            buf = self.new_array(name, buf.dtype, (None,))
        return self.reshape(e, buf, [-1, width])

    def stack_push(self, e, buf, shapes, x):
        t_buf = e.out_types[0]
        if x.dtype != t_buf.dtype:
            e.unsupported("element dtype differs from the stack's")
        in_place = self._stack_in_place(e, (buf, shapes))
        buf, shapes = self._stack_pair(e, buf, shapes)
        b, sh = self.fresh(), self.fresh()
        x = self.py_format(self.materialize(x))  # a stack pushed as an element is held as the Python backend holds it
        slots = self.pool_args(t_buf.dtype)[1]
        push = "stack_push0" if x.kind == "s" else "stack_push"
        self.emit(self.indent, f"{b}, {sh} = L.{push}({buf.name}, {shapes.name}, {x.name}, {not in_place}, {slots})")
        return self._new_stack(b, sh, t_buf.dtype)

    def stack_pop(self, e, buf, shapes, shape):
        t_x = e.out_types[2]
        in_place = self._stack_in_place(e, (buf, shapes))
        buf, shapes = self._stack_pair(e, buf, shapes)
        rank = len(t_x.shape)
        b, sh, flat, row = (self.fresh() for _ in range(4))
        self.emit(self.indent, f"{b}, {sh}, {flat}, {row} = L.stack_pop({buf.name}, {shapes.name}, {rank}, "
                               f"{not in_place})")
        nb, nsh = self._new_stack(b, sh, buf.dtype)
        x = self.fresh()
        if rank == 0:
            self.emit(self.indent, f"{x} = {flat}[0]")
            xv = V("s", x, t_x.dtype, ())
        else:
            dims = ", ".join(f"{row}[{j}]" for j in range(rank))
            self.emit(self.indent, f"{x} = {flat}.reshape(({dims},))")
            xv = self.new_array(x, t_x.dtype, tuple(t_x.shape))
        return nb, nsh, xv

    def stack_outputs(self, outs):
        """The program's outputs with stacks in the Python backend's format."""
        return [self.py_format(v) for v in outs]

    def py_format(self, v):
        """``v``, or where it is one of a stack's two arrays, that array in the Python backend's
        format (a copy)."""
        tag = self.stacks.get(v.name)
        if tag is None:
            return v
        name = self.fresh()
        if tag[0] == "buf":
            self.emit(self.indent, f"{name} = L.stack_buf_out({v.name}, {tag[1]})")
        else:
            self.emit(self.indent, f"{name} = L.stack_shapes_out({v.name})")
        return V("a", name, v.dtype, v.shape)

    def carry_stacks(self, where, srcs, dsts):
        """Tag the locals ``dsts`` (loop carries, branch outputs) as stacks where their sources
        are: ``srcs``, one list of source locals per position (every source of a position must
        agree, and a stack's two arrays stay at the same two positions)."""
        pos = {}
        for k, names in enumerate(srcs):
            for n in names:
                pos.setdefault(n, set()).add(k)
        for k, (names, d) in enumerate(zip(srcs, dsts)):
            tags = [self.stacks.get(n) for n in names]
            if all(t is None for t in tags):
                continue
            if any(t is None for t in tags):
                raise NativeUnsupported(f"{where}: value {k} is a tensor stack on one path only")
            roles = {t[0] for t in tags}
            partners = [pos.get(t[1], set()) for t in tags]
            common = set.intersection(*partners) if partners else set()
            if len(roles) != 1 or len(common) != 1:
                raise NativeUnsupported(f"{where}: a tensor stack's two arrays do not travel together")
            j = common.pop()
            self.stacks[d] = (roles.pop(), dsts[j])

    # ---------------------------------------------------------------- control flow
    def lower_cond(self, op, env):
        b = op.blocks
        if set(b) != {"then", "else"} or not op.inputs:
            raise NativeUnsupported(f"op cond (output {op.outputs[0] if op.outputs else '-'}): malformed")
        pred = self.materialize(self.get(env, op.inputs[0]))
        if pred.kind != "s":
            raise NativeUnsupported(f"op cond (output {op.outputs[0] if op.outputs else '-'}): predicate is not 0-d")
        ins = [self.materialize(self.get(env, n)) for n in op.inputs[1:]]
        outs_t = [self.type_of(o) for o in op.outputs]
        locs = [self.fresh() for _ in op.outputs]
        ctx = self._ctx
        # an input the cond reads last, once, and that we own may be written by a branch
        passed_owned = set()
        for k, (n, v) in enumerate(zip(op.inputs[1:], ins)):
            if (v.kind == "a" and op.inputs[1:].count(n) == 1 and ctx.last.get(n, -1) <= ctx.pos
                    and n not in ctx.outputs and n not in ctx.pinned and v.name not in ctx.pinned
                    and not self.read_later(v) and (v.name in ctx.fresh or n in ctx.owned)):
                passed_owned.add(k)
        ind = self.indent
        start_line = len(self.lines)
        self.emit(ind, f"if {pred.name}:")
        owned_out, names = [], []
        for key in ("then", "else"):
            if key == "else":
                self.emit(ind, "else:")
            blk = b[key]
            if len(blk.inputs) != len(ins) or len(blk.outputs) != len(op.outputs):
                raise NativeUnsupported(f"op cond (output {op.outputs[0] if op.outputs else '-'}): malformed {key} block")
            sub_env = {}
            owned = set()
            for k, (name, v) in enumerate(zip(blk.inputs, ins)):
                sv = V(v.kind, v.name, v.dtype, v.shape, layout=v.layout)
                sv.var = name
                sub_env[name] = sv
                if k in passed_owned:
                    owned.add(name)
            order = topo_order(blk)[0]
            before = len(self.lines)
            res = self.block(blk, sub_env, order, ind + 1, set(blk.outputs), owned, list(blk.outputs))
            fresh_here = self._fresh_results(res, blk, owned)
            owned_out.append(fresh_here)
            names.append([self.coerce(v, t) for v, t in zip(res, outs_t)])
            for loc, v, t in zip(locs, res, outs_t):
                self.emit(ind + 1, f"{loc} = {self.coerce(v, t)}")
            if len(self.lines) == before:
                self.emit(ind + 1, "pass")
        # an output both branches give as the same outer local (a buffer updated in place in
        # either branch) needs no assignment: drop the two and use that local
        drop = set()
        for j in range(len(locs)):
            a, b_ = names[0][j], names[1][j]
            if a == b_ and a.isidentifier() and (a in self._ctx.fresh or any(a == iv.name for iv in ins)):
                drop.add(j)
        if drop:
            text = {f"{'    ' * (ind + 1)}{locs[j]} = {names[0][j]}" for j in drop}
            lines = self.lines[start_line:]
            kept = [ln for ln in lines if ln not in text]
            self.lines[start_line:] = self._fix_empty(kept, ind)
            for j in drop:
                locs[j] = names[0][j]
        self.carry_stacks(f"op cond (output {op.outputs[0] if op.outputs else '-'})",
                          [[names[0][j], names[1][j]] for j in range(len(locs))], locs)
        results = []
        for j, (loc, t) in enumerate(zip(locs, outs_t)):
            if len(t.shape) == 0:
                results.append(V("s", loc, t.dtype, ()))
            else:
                v = V("a", loc, t.dtype, t.shape, layout="C")
                if all(j in f for f in owned_out):
                    ctx.fresh.add(loc)
                else:
                    v.layout = "A"
                    for k, iv in enumerate(ins):  # the output may be one of the inputs
                        self.pin(iv)
                results.append(v)
        return self._bind(op, env, results)

    @staticmethod
    def _fix_empty(lines, ind):
        """``if``/``else`` lines whose branch became empty get a ``pass``."""
        out = []
        head = "    " * ind
        for k, ln in enumerate(lines):
            out.append(ln)
            if ln in (f"{head}else:",) or (ln.startswith(head + "if ") and ln.endswith(":") and not ln.startswith(head + " ")):
                nxt = lines[k + 1] if k + 1 < len(lines) else ""
                if not nxt.startswith(head + "    "):
                    out.append(head + "    pass")
        return out

    def _fresh_results(self, res, blk, owned):
        """Positions of block results that are buffers nothing else can see (fresh in the
        block, or an owned input passed through once)."""
        out = set()
        seen = {}
        for v in res:
            seen[v.name] = seen.get(v.name, 0) + 1
        ctx_fresh = self._last_fresh
        for j, v in enumerate(res):
            if v.kind != "a" or seen[v.name] != 1 or v.layout != "C":
                continue
            if v.name in ctx_fresh or v.var in owned:
                out.add(j)
        return out

    def coerce(self, v, t):
        """``v`` as the expression a carry or branch output of type ``t`` is assigned."""
        if v.dtype != t.dtype:
            if v.kind == "s":
                return cast_expr(v.name, v.dtype, t.dtype)
            return f"{v.name}.astype({NP_TYPE[t.dtype]})"
        return v.name

    def _bind(self, op, env, results):
        for o, v in zip(op.outputs, results):
            v.var = o
            env[o] = v
        return results

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
    def lower_while(self, op, env):
        b, n = op.blocks, len(op.outputs)
        where = f"op while (output {op.outputs[0] if op.outputs else '-'})"
        if (set(b) != {"cond", "body"} or len(op.inputs) < n or len(b["cond"].inputs) != len(op.inputs)
                or len(b["body"].inputs) != len(op.inputs) or len(b["cond"].outputs) != 1
                or len(b["body"].outputs) != n):
            raise NativeUnsupported(f"{where}: malformed")
        ins = [self.materialize(self.get(env, x)) for x in op.inputs]
        ctx = self._ctx
        ind = self.indent
        outs_t = [self.type_of(o) for o in op.outputs]
        carries = []
        for k in range(n):
            v, t, name = ins[k], outs_t[k], op.inputs[k]
            loc = self.fresh()
            if v.kind == "s":
                self.emit(ind, f"{loc} = {self.coerce(v, t)}")
                carries.append(V("s", loc, t.dtype, ()))
                continue
            if len(t.shape) == 0:
                raise NativeUnsupported(f"{where}: carry {k} changes rank")
            own = (op.inputs.count(name) == 1 and ctx.last.get(name, -1) <= ctx.pos and name not in ctx.outputs
                   and name not in ctx.pinned and v.name not in ctx.pinned and not self.read_later(v)
                   and v.name in ctx.fresh and v.layout == "C" and v.dtype == t.dtype)
            if own:
                self.emit(ind, f"{loc} = {v.name}")
            else:  # the loop writes its carries in place: start from a copy of the caller's value
                src = self.coerce(v, t)
                self.emit(ind, f"{loc} = np.ascontiguousarray({src}).copy()" if v.layout != "C" or src == v.name
                          else f"{loc} = {src}")
            carries.append(V("a", loc, t.dtype, t.shape))
        caps = ins[n:]
        self.carry_stacks(where, [[v.name] for v in ins[:n]], [c.name for c in carries])
        self._enter_loop(ind, caps)
        self.emit(ind, "while True:")
        cond_blk, body_blk = b["cond"], b["body"]
        env_c = self._sub_env(cond_blk, carries + caps)
        (flag,) = self.block(cond_blk, env_c, topo_order(cond_blk)[0], ind + 1, set(cond_blk.outputs), set(),
                             list(cond_blk.outputs))
        if flag.kind != "s":
            raise NativeUnsupported(f"{where}: the loop predicate is not 0-d")
        self.emit(ind + 1, f"if not {flag.name}:")
        self.emit(ind + 2, "break")
        env_b = self._sub_env(body_blk, carries + caps)
        owned = {body_blk.inputs[k] for k in range(n) if carries[k].kind == "a"}
        try:
            res = self.block(body_blk, env_b, topo_order(body_blk)[0], ind + 1, set(body_blk.outputs), owned,
                             list(body_blk.outputs))
        finally:
            self._loops.pop()
        fresh = self._fresh_results(res, body_blk, owned)
        self.carry_stacks(where, [[c.name, v.name] for c, v in zip(carries, res)], [c.name for c in carries])
        self._assign_carries(where, carries, res, outs_t, fresh, ind + 1)
        results = []
        for c in carries:
            r = V(c.kind, c.name, c.dtype, c.shape)
            if c.kind == "a":
                ctx.fresh.add(c.name)
            results.append(r)
        return self._bind(op, env, results)

    def _sub_env(self, blk, vals):
        env = {}
        for name, v in zip(blk.inputs, vals):
            sv = V(v.kind, v.name, v.dtype, v.shape, layout=v.layout)
            sv.var = name
            env[name] = sv
        return env

    def lower_scan(self, op, env):
        a, b = op.attrs, op.blocks
        where = f"op scan (output {op.outputs[0] if op.outputs else '-'})"
        nc, nx = a.get("n_carry"), a.get("n_xs")
        if set(b) != {"body"} or type(nc) is not int or type(nx) is not int or nc < 0 or nx < 0:
            raise NativeUnsupported(f"{where}: malformed")
        body = b["body"]
        if len(op.inputs) < nc + nx or len(body.inputs) != len(op.inputs) or len(body.outputs) != len(op.outputs) \
                or len(op.outputs) < nc:
            raise NativeUnsupported(f"{where}: malformed")
        reverse = a.get("reverse", False)
        if type(reverse) is not bool:
            raise NativeUnsupported(f"{where}: reverse is not a bool")
        ins = [self.materialize(self.get(env, x)) for x in op.inputs]
        ind = self.indent
        outs_t = [self.type_of(o) for o in op.outputs]
        carries = []
        for k in range(nc):
            v, t = ins[k], outs_t[k]
            loc = self.fresh()
            if v.kind == "s":
                self.emit(ind, f"{loc} = {self.coerce(v, t)}")
                carries.append(V("s", loc, t.dtype, ()))
            else:
                self.emit(ind, f"{loc} = np.ascontiguousarray({self.coerce(v, t)}).copy()")
                carries.append(V("a", loc, t.dtype, t.shape))
        self.carry_stacks(where, [[v.name] for v in ins[:nc]], [c.name for c in carries])
        xs = ins[nc:nc + nx]
        for x in xs:
            if x.name in self.stacks:
                raise NativeUnsupported(f"{where}: scans over a tensor stack")
            if x.kind != "a":
                raise NativeUnsupported(f"{where}: an xs is 0-d")
        caps = ins[nc + nx:]
        nloc = self.fresh()
        if xs:
            self.emit(ind, f"{nloc} = {xs[0].name}.shape[0]")
            for x in xs[1:]:
                self.emit(ind, f"if {x.name}.shape[0] != {nloc}: raise ValueError('scan: xs have different leading dims')")
        else:
            length = a.get("length")
            self.emit(ind, f"{nloc} = {_int(length, 'scan length')}")
        ys = []
        for j, t in enumerate(outs_t[nc:]):
            yshape = t.shape[1:]
            loc = self.fresh()
            dims = [nloc] + [str(_int(d, "dim")) if d is not None else "0" for d in yshape]
            self.emit(ind, f"{loc} = np.empty(({', '.join(dims)},), {NP_TYPE[t.dtype]})")
            ys.append((loc, t, None in yshape))
        tloc = self.fresh()
        rng = f"range({nloc} - 1, -1, -1)" if reverse else f"range({nloc})"
        self._enter_loop(ind, caps)
        self.emit(ind, f"for {tloc} in {rng}:")
        slices = []
        for x in xs:
            s = self.fresh()
            if x.ndim == 1:
                self.emit(ind + 1, f"{s} = {x.name}[{tloc}]")
                slices.append(V("s", s, x.dtype, ()))
            else:
                self.emit(ind + 1, f"{s} = {x.name}[{tloc}]")
                slices.append(V("a", s, x.dtype, x.shape[1:], layout="C" if x.layout == "C" else "A"))
        env_b = self._sub_env(body, carries + slices + caps)
        owned = {body.inputs[k] for k in range(nc) if carries[k].kind == "a"}
        try:
            res = self.block(body, env_b, topo_order(body)[0], ind + 1, set(body.outputs), owned, list(body.outputs))
        finally:
            self._loops.pop()
        fresh = self._fresh_results(res, body, owned)
        self.carry_stacks(where, [[c.name, v.name] for c, v in zip(carries, res[:nc])], [c.name for c in carries])
        if any(v.name in self.stacks for v in res[nc:]):
            raise NativeUnsupported(f"{where}: a tensor stack is a scan output")
        for (loc, t, dyn), v in zip(ys, res[nc:]):
            if dyn:
                self.emit(ind + 1, f"if {tloc} == {'(' + nloc + ' - 1)' if reverse else '0'}:")
                shp = ", ".join([nloc] + [f"{v.name}.shape[{q}]" for q in range(v.ndim)])
                self.emit(ind + 2, f"{loc} = np.empty(({shp},), {NP_TYPE[t.dtype]})")
            if v.kind == "s":
                self.emit(ind + 1, f"{loc}[{tloc}] = {cast_expr(v.name, v.dtype, t.dtype)}")
            else:
                self.emit(ind + 1, f"{loc}[{tloc}] = {self.coerce(v, t)}")
        self._assign_carries(where, carries, res[:nc], outs_t, fresh, ind + 1)
        results = []
        for c in carries:
            if c.kind == "a":
                self._ctx.fresh.add(c.name)
            results.append(V(c.kind, c.name, c.dtype, c.shape))
        for loc, t, _ in ys:
            self._ctx.fresh.add(loc)
            results.append(V("a", loc, t.dtype, t.shape))
        return self._bind(op, env, results)

    @property
    def _last_fresh(self):
        return self._fresh_log


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


class _BlockCtx:
    __slots__ = ("ops", "uses", "last", "outputs", "owned", "pos", "fresh", "pinned", "donated", "pending")

    def __init__(self, ops, uses, last, outputs, owned):
        self.ops, self.uses, self.last, self.outputs, self.owned = ops, uses, last, outputs, owned
        self.pos = 0
        self.fresh = set()
        self.pinned = set()
        self.donated = set()
        self.pending = {}


# rows of a product computed at once by ``_row_product`` (a multiple of the rows of one step)
ROW_CHUNK = 512


def _mkl_matmul(dtype):
    """The ``_lib`` helper computing a 2-d float product of ``dtype`` with MKL, or None where
    products call ``np.dot`` (no MKL here, see ``mkl.py``)."""
    if dtype not in ("float32", "float64") or mkl.library() is None:
        return None
    return "smatmul" if dtype == "float32" else "dmatmul"


def _short_wide(m, k, n):
    """Whether an ``(m, k) @ (k, n)`` product runs faster as ``(b.T @ a.T).T`` (static dims
    only). Measured with scipy's OpenBLAS on 1 and 2 threads (benchmarks/bench_native_matmul.py):
    1.2-1.5x faster for m <= 32 with k * n >= 65536 (an RNN step, (32, 256) @ (256, 256)),
    slower for taller or smaller products, where the transposing copy of the result costs more
    than the product gains."""
    if None in (m, k, n):
        return False
    return m <= 32 and k * n >= 65536


def lower(program, order=None):
    """``(source, feed signature, output types, constant values)`` of ``program``."""
    lw = Lowerer(program, order)
    lw._fresh_log = set()
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
