"""The lowering planner shared by the compiling backends: which value lives where, and which
buffer each computation may write. It decides; an emitter subclass writes the code.

A backend that compiles a whole program into one function (the numba emitter ``lower.py``;
a CUDA C emitter would be another) subclasses :class:`Planner` and supplies the text: names
(``fresh``), lines (``emit``), how a lazy value is computed into an array (``materialize``), and
the builders its op hooks call. The planner itself is target independent:

* **uses**: each block is walked in its op order, with the uses and the last reader of every
  var counted first (:class:`BlockCtx`);
* **dispatch**: every op is lowered through the hook its op registered for the emitter's
  ``BACKEND`` (``deflowering(op, BACKEND)``, beside the op): an element-wise op's hook gives a
  scalar expression, any other op's hook builds its results with the emitter's ``Emit``
  facade, and a structured op's hook (``cond``, ``while``, ``scan``, ...) gets the emitter
  itself and lowers its blocks with :meth:`Planner.block`. No op is known here by name;
* **fusion groups and lazy expression trees**: an element-wise result read once, by an
  element-wise op or a reduction of the same block (``fusable``), stays a lazy tree
  (``('x', fn, children)`` over leaves ``('v', value)``, with casts ``('c', tree, src, dst)``),
  so a chain and the reduction reading it become one loop nest with no temporaries;
* **in-place donors**: a fused loop may write into the buffer of a leaf it reads at the same
  index when nothing reads that buffer later (``donor``, ``dies_here``; buffers shown through
  another value are ``pin``-ned);
* **carry ownership**: a loop owns its carries (an input it reads last, once, and that this
  block made, is taken over; others are copied in by the emitter), a branch may write an
  owned input passed to it (``may_take``, ``fresh_results``), and a backend's tensor stacks
  keep their two arrays together across carries and branches (``carry_stacks``).

SAFETY. A saved model's program is untrusted: emitters never format its text into code.
:func:`check_int` and the emitters' dtype checks validate the attrs they turn into source.
"""
import numpy as np

from ..dtypes import float_of, types_result
from ..errors import LoweringUnsupported
from ..ops import OPS

# (one exception class for every emitter: the tiers tell "unsupported" from "failed" by it)
NativeUnsupported = LoweringUnsupported


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


def check_int(v, what):
    """``v`` as a Python int (attrs turned into source must be validated ints)."""
    if type(v) is bool or not isinstance(v, (int, np.integer)):
        raise NativeUnsupported(f"{what} must be an int, got {type(v).__name__}")
    return int(v)


def where_of(op):
    """``op <type> (output <var>)``: how messages name an op."""
    return f"op {op.type} (output {op.outputs[0] if op.outputs else '-'})"


class BlockCtx:
    """The block being lowered: its ops in order, use counts and last readers, and what the
    planner learned so far (buffers made here, pinned, donated; lazy values not yet read)."""

    __slots__ = ("ops", "uses", "last", "outputs", "owned", "pos", "fresh", "pinned", "donated", "pending")

    def __init__(self, ops, uses, last, outputs, owned):
        self.ops, self.uses, self.last, self.outputs, self.owned = ops, uses, last, outputs, owned
        self.pos = 0
        self.fresh = set()
        self.pinned = set()
        self.donated = set()
        self.pending = {}


class Planner:
    """The target-independent half of a lowering (see the module docstring). Subclasses set
    ``BACKEND`` and implement the emission methods named in :meth:`lower_elementwise`,
    :meth:`materialize` and ``make_emit``."""

    BACKEND = None

    def __init__(self, program, order=None):
        self.program = program
        self.types = {}
        for b in program.blocks:
            for n, v in b.vars.items():
                self.types[n] = v.type
        self.order = order
        # locals holding a tensor stack in the backend's format: local -> (role 'buf' or
        # 'shapes', the partner local)
        self.stacks = {}
        self.consts = []       # values of the extra arguments, in order
        self.const_names = []
        self.top = True        # lowering the program's top block (not a loop's or branch's)
        self.indent = 1
        self._ctx = None
        self._fresh_log = set()  # the buffers made in the block lowered last

    # ---------------------------------------------------------------- lookups
    def const_arg(self, value):
        """The name of an extra argument of the function that holds ``value``."""
        name = f"k{len(self.consts)}"
        self.consts.append(value)
        self.const_names.append(name)
        return name

    def type_of(self, name):
        t = self.types.get(name)
        if t is None:
            raise NativeUnsupported(f"var {name} has no type")
        return t

    def get(self, env, name):
        try:
            return env[name]
        except KeyError:
            raise NativeUnsupported(f"var {name} is read before it is defined") from None

    def unsupported(self, op, why):
        raise NativeUnsupported(f"{where_of(op)}: {why}")

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
        saved = (self.indent, self._ctx, self.top)
        self.top = block is self.program.block
        self.indent = indent
        self._ctx = BlockCtx(ops, uses, last, set(outputs), set(owned))
        try:
            for pos, op in enumerate(ops):
                self._ctx.pos = pos
                self.lower_op(op, env)
            res = [self.materialize(env[n]) if n in env else self._missing(n) for n in outputs]
            self._fresh_log = set(self._ctx.fresh)
            return res
        finally:
            self.indent, self._ctx, self.top = saved

    def _missing(self, name):
        raise NativeUnsupported(f"var {name} is read but defined nowhere")

    def sub_env(self, blk, vals):
        """The env of sub-block ``blk`` with its inputs bound to ``vals`` (new handles)."""
        env = {}
        for name, v in zip(blk.inputs, vals):
            sv = V(v.kind, v.name, v.dtype, v.shape, layout=v.layout)
            sv.var = name
            env[name] = sv
        return env

    def bind(self, op, env, results):
        """Bind ``op``'s outputs to ``results`` in ``env``; returns ``results``."""
        for o, v in zip(op.outputs, results):
            v.var = o
            env[o] = v
        return results

    # ---------------------------------------------------------------- ops
    def lower_op(self, op, env):
        opdef = OPS.get(op.type)
        hook = opdef.lowering(self.BACKEND) if opdef is not None else None
        where = where_of(op)
        if hook is None or bool(op.blocks) != opdef.structured:
            raise NativeUnsupported(f"{where} has no {self.BACKEND} lowering")
        if opdef.structured:
            if not opdef.layout.well_formed(op):
                raise NativeUnsupported(f"{where}: malformed")
            return hook(self, op, env)
        if opdef.effect:
            raise NativeUnsupported(f"{where} has effects")
        ins = [self.get(env, n) for n in op.inputs]
        # only hooks marked ``reads_stacks`` (the stack ops, aliases) may read the stack format
        if not getattr(hook, "reads_stacks", False) and any(v.name in self.stacks for v in ins):
            raise NativeUnsupported(f"{where} reads a tensor stack (only stack_push/stack_pop are lowered on stacks)")
        for n in op.inputs:
            self._ctx.pending.pop(n, None)
        out_types = [self.type_of(o) for o in op.outputs]
        for t in out_types:
            self.check_dtype(t.dtype, f"{where}'s output dtype")
        try:
            if opdef.elementwise or getattr(hook, "elementwise", False):
                results = [self.elementwise(op, opdef, hook, ins, out_types[0])]
            else:
                r = hook(self.make_emit(op, out_types), *ins, **op.attrs)
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
                hook = d.lowering(self.BACKEND) if d is not None else None
                # element-wise ops inline it; so do reductions and broadcasts (``fuses_input`` hooks)
                return hook is not None and not op.blocks and (
                    d.elementwise or getattr(hook, "elementwise", False) or getattr(hook, "fuses_input", False))
        return False

    def elementwise(self, op, opdef, hook, ins, out_t):
        """An element-wise op: a scalar at once when every input is one, else a lazy tree."""
        out_dt = out_t.dtype
        in_dts = [v.dtype for v in ins]
        if opdef.comparison:
            cd = types_result(*ins)
        elif opdef.float_inputs:
            cd = float_of(out_dt)
        else:
            cd = out_dt
        raw = getattr(hook, "raw_args", False)
        res_dt = "bool" if opdef.comparison else cd
        call = self.scalar_call(op, hook, cd, in_dts, out_dt, res_dt, raw)
        if all(v.kind == "s" for v in ins):
            return self.scalar_result(op, call, ins, cd, res_dt, out_dt, raw)
        # the expression tree: ('x', fn, children) over leaves ('v', V), casts ('c', tree, src, dst)
        kids = []
        for i, v in enumerate(ins):
            kid = v.tree if v.kind == "l" else ("v", v)
            if not raw:
                kid = ("c", kid, v.dtype, self.arg_dtype(op, i, cd, v))
            kids.append(kid)
        tree = ("c", ("x", call, kids), res_dt, out_dt)
        call.check(len(ins))  # the hook accepts the attrs now (errors name the op)
        return V("l", None, out_dt, tuple(out_t.shape), tree=tree)

    @staticmethod
    def arg_dtype(op, i, cd, v):
        """The dtype operand ``i`` (value ``v``) of an element-wise op is converted to: the
        compute dtype ``cd``, except at a position its ``promotes`` trait leaves out, which
        keeps its own (``where``'s bool condition)."""
        promotes = OPS[op.type].promotes
        if promotes not in ((), None) and i not in promotes:
            return v.dtype
        return cd

    # ---------------------------------------------------------------- fusion and donors
    def leaves(self, tree, acc):
        """The distinct leaf values of a lazy tree, in order (appended to ``acc``)."""
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

    def donor(self, v, leaves):
        """A leaf array whose buffer the fused loop computing ``v`` may write (see the module
        docstring), marked donated; None if there is none."""
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

    def mark_fresh(self, name):
        """The local ``name`` holds a buffer made here (nothing else can see it)."""
        self._ctx.fresh.add(name)

    # ---------------------------------------------------------------- ownership
    def may_take(self, op, name, v, owned_ok=True):
        """Whether ``op`` (a structured op) may take over input ``name`` (value ``v``): it reads
        it last, once, nothing else sees its buffer, and this block made it (``fresh``) or
        (``owned_ok``) owns it. A loop then updates it in place as a carry, a branch may write it."""
        ctx = self._ctx
        return (v.kind == "a" and op.inputs.count(name) == 1 and ctx.last.get(name, -1) <= ctx.pos
                and name not in ctx.outputs and name not in ctx.pinned and v.name not in ctx.pinned
                and not self.read_later(v) and (v.name in ctx.fresh or (owned_ok and name in ctx.owned)))

    def fresh_results(self, res, owned):
        """Positions of a lowered block's results that are buffers nothing else can see (made
        in that block, or an owned input passed through once)."""
        out = set()
        seen = {}
        for v in res:
            seen[v.name] = seen.get(v.name, 0) + 1
        for j, v in enumerate(res):
            if v.kind != "a" or seen[v.name] != 1 or v.layout != "C":
                continue
            if v.name in self._fresh_log or v.var in owned:
                out.add(j)
        return out

    def owned_carries(self, body, carries):
        """The input names of loop body ``body`` that are array carries (the loop owns them)."""
        return {body.inputs[k] for k, c in enumerate(carries) if c.kind == "a"}

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

    def is_stack(self, v):
        """Whether ``v`` is one of a tensor stack's two arrays (in the backend's format)."""
        return v.name in self.stacks

    # ---------------------------------------------------------------- emission (subclasses)
    def materialize(self, v):
        """``v`` computed (a lazy value into an array); scalars and arrays as they are."""
        raise NotImplementedError

    def make_emit(self, op, out_types):
        """The facade a non-element-wise op's hook builds its results with."""
        raise NotImplementedError

    def scalar_call(self, op, hook, cd, in_dts, out_dt, res_dt, raw):
        """``call(args) -> expression`` of an element-wise op on scalar expressions, with
        ``call.check(n)`` raising unless the hook accepts the op's attrs."""
        raise NotImplementedError

    def scalar_result(self, op, call, ins, cd, res_dt, out_dt, raw):
        """The op computed at once on the scalar values ``ins`` (a scalar value)."""
        raise NotImplementedError

    def check_dtype(self, name, what="dtype"):
        """``name`` when the backend lowers values of that dtype (else NativeUnsupported)."""
        raise NotImplementedError
