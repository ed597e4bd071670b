"""What the graph backend can prove about its device stacks before capturing, so that a call
needs no check of them, and so no read of the error word (a host synchronization):

* a **pop that cannot find its stack empty**: a ``while`` gradient's backward loop pops each
  stack once per iteration, for exactly as many iterations as the forward loop pushed (its
  counter starts at the forward loop's count and steps down to 0);
* a **stack whose capacity is known**: every push happens where the count has a static upper
  bound (a loop whose counter steps by one up to a constant, a ``scan``'s length), so it can
  never outgrow a buffer of that size;
* a **``stack_rows`` reading exactly its capacity** (the count there is that constant).

The analysis walks the program once, symbolically: 0-d integers are affine expressions over
*symbols* (a loop's unknown trip count, a carry's value on entry to an iteration), and a stack
value carries its count as such an expression. A loop is summarized by induction: a carry
whose body result is its entry value plus a constant is an induction variable; the trip count
comes from a predicate comparing an induction variable with a loop-invariant value (exact),
else it is a fresh symbol (>= 0, unknown). Whatever is not proven keeps its device check
(``capture.py``), so a gap here costs a synchronization, never a wrong answer.
"""
import numbers

from ..ops import OPS
from ..ops.control_flow import ScanLayout, WhileLayout


class Aff:
    """``const + sum(coeff * symbol)``: an integer value known up to symbols."""

    __slots__ = ("const", "terms")

    def __init__(self, const=0, terms=None):
        self.const = int(const)
        self.terms = {s: c for s, c in (terms or {}).items() if c}

    def __add__(self, o):
        t = dict(self.terms)
        for s, c in o.terms.items():
            t[s] = t.get(s, 0) + c
        return Aff(self.const + o.const, t)

    def scale(self, k):
        return Aff(self.const * k, {s: c * k for s, c in self.terms.items()})

    def __sub__(self, o):
        return self + o.scale(-1)

    def nonneg(self):
        """Provably >= 0."""
        return self.const >= 0 and all(c > 0 and s.nonneg for s, c in self.terms.items())

    def is_const(self):
        return not self.terms

    def ub(self):
        """A static upper bound, or None."""
        total = self.const
        for s, c in self.terms.items():
            if c < 0 and s.nonneg:
                continue
            if c < 0 or s.ub is None:
                return None
            total += c * s.ub
        return total

    def has(self, syms):
        return any(s in syms for s in self.terms)


class Sym:
    """A symbol: a loop's trip count (>= 0; ``ub`` a static upper bound or None), or a carry's
    value on entry to an iteration (a stack's count is >= 0, an integer carry may be anything)."""

    __slots__ = ("ub", "nonneg")

    def __init__(self, ub=None, nonneg=True):
        self.ub, self.nonneg = ub, nonneg


class StackVal:
    """A stack value: which stack (its ``stack_new`` output name) and its count (None: unknown)."""

    __slots__ = ("key", "count")

    def __init__(self, key, count):
        self.key, self.count = key, count


class Cmp:
    """A 0-d bool known as a conjunction of ``a < b`` (``parts``: pairs of Aff, or None for
    a conjunct that is not such a comparison)."""

    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = parts


class StackFacts:
    """The analysis' results for one program (see the module docstring).

    Attributes:
        safe_pops: ids of the ``stack_pop`` ops that cannot find their stack empty.
        capacity: ``{stack key: int}`` for the stacks whose count never exceeds that.
        exact_rows: ``{id of a stack_rows op: count}`` where its stack's count is that constant.
    """

    def __init__(self, program):
        self.safe_pops, self.exact_rows = set(), {}
        self._peak, self._dynamic = {}, set()
        self._pops = []          # (op, stack value before it) in the loop body being walked
        self._popped = set()     # keys popped in the loop body being walked
        self._pushed = set()     # keys pushed there
        self._loop = frozenset()  # entry symbols of the loops being walked
        self._block(program.block, {})
        self.capacity = {k: v for k, v in self._peak.items() if k not in self._dynamic}

    def _peak_at(self, key, count):
        ub = count.ub() if count is not None else None
        if ub is None:
            self._dynamic.add(key)
        else:
            self._peak[key] = max(self._peak.get(key, 0), ub)

    @staticmethod
    def _literal(op, block):
        if op.type not in ("constant", "full") or op.inputs or len(op.outputs) != 1:
            return None
        t = block.lookup(op.outputs[0]).type
        v = op.attrs.get("value")
        if tuple(t.shape) != () or str(t.dtype)[:3] not in ("int", "uin"):
            return None
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            return None
        return Aff(int(v))

    # ---------------------------------------------------------------- walking
    def _block(self, block, env):
        for op in block.ops:
            self._op(block, op, env)
        return [env.get(n) for n in block.outputs]

    def _op(self, block, op, env):
        ins = [env.get(n) for n in op.inputs]
        outs = op.outputs
        opdef = OPS.get(op.type)
        lit = self._literal(op, block)
        st = ins[0] if ins and type(ins[0]) is StackVal else None
        if lit is not None:
            env[outs[0]] = lit
        elif opdef is not None and opdef.structured:
            if isinstance(opdef.layout, (WhileLayout, ScanLayout)):
                env.update(zip(outs, self._loop_op(block, op, ins, opdef.layout)))
            # (a branch op: what it does to stacks is not summarized; their checks stay)
        elif len(ins) == 2 and all(type(v) is Aff for v in ins) and op.type in ("add", "sub"):
            env[outs[0]] = ins[0] + ins[1] if op.type == "add" else ins[0] - ins[1]
        elif len(ins) == 1 and type(ins[0]) in (Aff, StackVal) and op.type in ("identity", "stop_gradient"):
            env[outs[0]] = ins[0]
        elif len(ins) == 2 and all(type(v) is Aff for v in ins) and op.type in ("lt", "gt"):
            a, b = ins
            env[outs[0]] = Cmp([(a, b) if op.type == "lt" else (b, a)])
        elif len(ins) == 2 and op.type == "logical_and" and any(type(v) is Cmp for v in ins):
            env[outs[0]] = Cmp(sum((v.parts if type(v) is Cmp else [None] for v in ins), []))
        elif len(ins) == 3 and op.type == "where" and type(ins[0]) is Cmp and op.inputs[0] == op.inputs[2]:
            # where(a, b, a) is ``a and b`` (how a short-circuit ``and`` is converted)
            env[outs[0]] = Cmp(ins[0].parts + (ins[1].parts if type(ins[1]) is Cmp else [None]))
        elif op.type == "stack_new":
            env[outs[0]] = env[outs[1]] = StackVal(outs[0], Aff(0))
        elif op.type == "stack_push" and st is not None:
            c = st.count + Aff(1) if st.count is not None else None
            env[outs[0]] = env[outs[1]] = StackVal(st.key, c)
            self._pushed.add(st.key)
            if c is None or not c.has(self._loop):
                self._peak_at(st.key, c)  # (else the loop rule bounds it)
        elif op.type == "stack_pop" and st is not None:
            self._popped.add(st.key)
            if st.count is not None and (st.count - Aff(1)).nonneg():
                self.safe_pops.add(id(op))
            elif st.count is not None and st.count.has(self._loop):
                self._pops.append((op, st))  # decided by the loop rule
            env[outs[0]] = env[outs[1]] = StackVal(st.key, st.count - Aff(1) if st.count is not None else None)
        elif op.type == "stack_rows" and st is not None:
            if st.count is not None and st.count.is_const():
                self.exact_rows[id(op)] = st.count.const
            else:
                # read whole, but its count varies: its capacity follows the calls (tier.py)
                self._dynamic.add(st.key)

    # ---------------------------------------------------------------- loops
    def _loop_op(self, block, op, ins, layout):
        scan = isinstance(layout, ScanLayout)
        n = layout.n_carry(op)
        init = ins[:n]
        nx = op.attrs["n_xs"] if scan else 0
        rest = [None] * nx + ins[n + nx:]
        entries, shared = [], {}
        for v in init:
            if type(v) is Aff:
                entries.append(Aff(0, {Sym(nonneg=False): 1}))
            elif type(v) is StackVal and v.count is not None:
                # (a stack is two carries, its buffer and its shapes: one value, one entry)
                if id(v) not in shared:
                    shared[id(v)] = StackVal(v.key, Aff(0, {Sym(): 1}))
                entries.append(shared[id(v)])
            else:
                entries.append(None)
        syms = frozenset(s for e in entries if e is not None
                         for s in (e.terms if type(e) is Aff else e.count.terms))
        saved = self._loop, self._pops, self._popped, self._pushed
        self._loop, self._pops, self._popped, self._pushed = self._loop | syms, [], set(), set()
        body = op.blocks["body"]
        outs = self._block(body, dict(zip(body.inputs, entries + rest)))
        pred = None
        if not scan:
            cond = op.blocks["cond"]
            pred = self._block(cond, dict(zip(cond.inputs, entries + rest)))[0]
        pops, popped, pushed = self._pops, self._popped, self._pushed
        self._loop, self._pops, self._popped, self._pushed = saved
        self._popped |= popped
        self._pushed |= pushed
        steps = [self._step(e, o) for e, o in zip(entries, outs[:n])]
        trips = self._trips(block, op, scan, pred, entries, init, steps, syms)
        res, after = [], {}
        for k in range(n):
            v, d = init[k], steps[k]
            if type(v) is Aff and d is not None:
                res.append(v + trips.scale(d))
            elif type(v) is StackVal:
                if d is None:
                    self._dynamic.add(v.key)
                    res.append(after.setdefault(id(v), StackVal(v.key, None)))
                    continue
                if id(v) in after:  # (its other carry)
                    res.append(after[id(v)])
                    continue
                out = after[id(v)] = StackVal(v.key, v.count + trips.scale(d))
                res.append(out)
                if v.key in pushed:
                    if d <= 0 or v.key in popped:
                        self._dynamic.add(v.key)  # pushes and pops in one iteration: no peak known
                    elif not out.count.has(self._loop):
                        self._peak_at(v.key, out.count)  # the count only grows: its peak is the last
                    # (else the enclosing loop's rule bounds it: this count grows with its carry)
                self._safe_pops(v, d, entries[k], trips, pops)
            else:
                res.append(None)
        return res + [None] * (len(op.outputs) - n)

    @staticmethod
    def _step(e, o):
        """An iteration's constant change of a carry (None: not constant)."""
        if type(e) is Aff and type(o) is Aff and (o - e).is_const():
            return (o - e).const
        if type(e) is StackVal and type(o) is StackVal and o.key == e.key and o.count is not None \
                and (o.count - e.count).is_const():
            return (o.count - e.count).const
        return None

    def _safe_pops(self, v, d, entry, trips, pops):
        """A pop in the body of stack carry ``v`` sees ``entry + off`` elements, and the entry
        count of iteration i is ``v.count + d * i``: it is safe when that is >= 1 at the worst
        iteration (the first where d >= 0, the last, ``trips - 1``, where d < 0)."""
        for op, st in pops:
            if st.key != v.key or not (st.count - entry.count).is_const():
                continue
            off = (st.count - entry.count).const
            worst = v.count + Aff(off - 1)
            if d < 0:
                worst = worst + trips.scale(d) + Aff(-d)
            if worst.nonneg():
                self.safe_pops.add(id(op))

    def _trips(self, block, op, scan, pred, entries, init, steps, syms):
        """The loop's trip count (an Aff >= 0): exact where the predicate is one comparison of
        an induction variable stepping by one with a loop-invariant value, else a fresh symbol
        (bounded where a conjunct bounds it)."""
        if scan:
            length = op.attrs.get("length")
            if op.attrs["n_xs"]:
                n = op.attrs["n_carry"]
                length = block.lookup(op.inputs[n]).type.shape[0]
            if isinstance(length, numbers.Integral) and not isinstance(length, bool) and length >= 0:
                return Aff(int(length))
            return Aff(0, {Sym(): 1})
        bounds = []
        for part in (pred.parts if type(pred) is Cmp else ()):
            if part is None:
                continue
            a, b = part  # a < b
            for var, other, sign in ((a, b, 1), (b, a, -1)):
                k = self._induction(var, entries, steps, sign)
                if k is None or other.has(syms):
                    continue
                # var = init + sign * i, so the loop runs while i < other - init (sign 1) or
                # i < init - other (sign -1)
                bounds.append(other - init[k] if sign == 1 else init[k] - other)
        if len(bounds) == 1 and len(pred.parts) == 1:
            if bounds[0].nonneg():
                return bounds[0]
            if bounds[0].is_const():
                return Aff(max(0, bounds[0].const))
        ubs = [b.ub() for b in bounds if b.ub() is not None]
        return Aff(0, {Sym(ub=max(0, min(ubs)) if ubs else None): 1})

    @staticmethod
    def _induction(var, entries, steps, sign):
        """The carry whose entry value ``var`` is, if it steps by ``sign`` (else None)."""
        if var.const or len(var.terms) != 1:
            return None
        (s, c), = var.terms.items()
        for k, e in enumerate(entries):
            if c == 1 and type(e) is Aff and s in e.terms and steps[k] == sign:
                return k
        return None
