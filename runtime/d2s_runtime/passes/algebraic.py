"""Algebraic simplification: identities, and matmuls rewritten as reductions where they can be.

Rewrites (each only when the result keeps the exact type of the value it replaces):

* ``x*1, 1*x, x+0, 0+x, x-0, x/1 -> x``; ``neg(neg(x)) -> x``; a cast to ``x``'s own dtype -> ``x``;
  ``transpose(transpose(x))`` -> one transpose, or ``x`` when the permutations cancel.
* ``f(transpose(x, p), transpose(y, p)) -> transpose(f(x, y), p)`` for element-wise ``f``
  (``add``, ``sub``, ``mul``) of same-shaped operands: a weight's gradient summed over its
  uses is then summed in the matmuls' own layout.
* ``full_like(y)`` with a known shape becomes ``full`` (it never reads ``y``'s values), and the
  ``zeros_like`` idiom of symbolic autograd, ``cast(stop_gradient(y)) * 0``, becomes
  ``full(shape, 0)`` when the shape is known (it means zeros, whatever ``y`` holds), and an
  element-wise op of two uniform values (``full``, uniform constants, broadcasts of them)
  becomes one ``full``: so ``ones_like(y)`` is recognised as ones.
Every rewrite above gives the same bits as the program before it. Two more change how float
sums are grouped, so their results differ in the last bits from the program's (and from eager
code's); they run only in ``algebraic_reassociate``, which no default pipeline includes (a
``Program`` user may ask for it: ``optimize(p, passes=[..., "algebraic_reassociate", ...])``):

* ``reduce_sum(matmul(A, B))`` (all axes, 2-d operands) ->
  ``reduce_sum(colsum(A) * rowsum(B))``: O(mk + kn) instead of O(mkn).
* ``matmul`` with an operand that is a broadcast of a scalar, a row or a column (what the
  backward of ``sum`` feeds into matmul's gradient) -> reductions and a broadcast; e.g.
  ``matmul(broadcast_to(s, (m, k)), B) -> broadcast_to(s * colsum(B), (m, n))``.

With them the value and gradient of ``(x @ x.T).sum()`` need no matmul at all. The pass iterates
to a fixpoint (a rewrite can expose another); dead ops it leaves behind are for ``dce``.
"""
import numpy as np

from ..ir import Op
from ..ops import OPS, TensorType
from ._util import Namer, constant_op_value, prune_vars, start, trait, use_counts

MAX_ROUNDS = 6


def algebraic_simplify(program):
    """Return a new Program with the algebraic identities that keep every value's bits applied
    (see the module docstring)."""
    return _simplified(program, reassociate=False)


def algebraic_reassociate(program):
    """``algebraic_simplify`` plus the matmul rewrites that regroup float sums (results differ in
    their last bits; see the module docstring). Not in ``DEFAULT_PIPELINE``."""
    return _simplified(program, reassociate=True)


def _simplified(program, reassociate):
    p = start(program)
    namer = Namer(p, "s")
    for block in p.blocks:
        for _ in range(MAX_ROUNDS):
            if not _Rewriter(p, block, namer, reassociate).run():
                break
    return p


class _Rewriter:
    """One forward sweep over one block."""

    def __init__(self, program, block, namer, reassociate):
        self.program, self.block, self.namer = program, block, namer
        self.reassociate = reassociate
        self.is_global = block is program.block
        self.uses = use_counts(block, program.outputs if self.is_global else ())
        self.prod = {}
        self.mapping = {}
        self.new_ops = []
        self.changed = False

    # ------------------------------------------------------------ plumbing
    def type(self, name):
        return self.block.vars[name].type

    def emit(self, optype, inputs, attrs=None, name=None):
        """Append a new op; returns its output var name (type from the op's shape rule)."""
        attrs = dict(attrs or {})
        t = OPS[optype].infer(*[self.type(n) for n in inputs], **attrs)
        name = name or self.namer()
        self.block.add_var(name, t)
        op = Op(optype, inputs, [name], attrs)
        self.new_ops.append(op)
        self.prod[name] = op
        return name

    def replace(self, old, new):
        """Readers of ``old`` read ``new`` from now on (types must agree)."""
        self.mapping[old] = new
        self.changed = True

    def run(self):
        for op in self.block.ops:
            if self.mapping:
                op.inputs = [self._resolve(n) for n in op.inputs]
            mark = len(self.new_ops)
            handled = False
            if not op.blocks and len(op.outputs) == 1:
                try:
                    handled = self.rewrite(op)
                except (ValueError, TypeError, KeyError):  # a shape rule refused: keep the op
                    handled = False
            if not handled:
                del self.new_ops[mark:]
                self.new_ops.append(op)
                for o in op.outputs:
                    self.prod[o] = op
        self.block.ops = self.new_ops
        if self.mapping:
            self.block.outputs = [self._resolve(n) for n in self.block.outputs]
            if self.is_global:
                self.program.outputs = [self._resolve(n) for n in self.program.outputs]
        prune_vars(self.block)
        return self.changed

    def _resolve(self, n):
        while n in self.mapping:
            n = self.mapping[n]
        return n

    # ------------------------------------------------------------ facts about values
    def const_value(self, name):
        op = self.prod.get(name)
        if op is not None and op.type == "constant":
            return constant_op_value(op)
        if self.is_global and name in self.program.constants:
            return self.program.constants[name]
        return None

    def uniform(self, name, depth=0):
        """The single value every element of ``name`` holds, if known now; else None."""
        if depth > 8:
            return None
        c = self.const_value(name)
        if c is not None:
            if c.size == 0:
                return None
            first = c.reshape(-1)[0]
            return first if c.size == 1 or bool(np.all(c == first)) else None
        op = self.prod.get(name)
        if op is None:
            return None
        if op.type in ("full", "full_like"):
            return np.asarray(op.attrs.get("value", 0.0), dtype=self.type(name).dtype)[()]
        if trait(op, "movement") or op.type == "cast":  # they keep a uniform value uniform
            v = self.uniform(op.inputs[0], depth + 1)
            return None if v is None else np.asarray(v).astype(self.type(name).dtype)[()]
        return None

    def source(self, name):
        """(base, kind) for operands that are broadcasts: the var broadcast, or None."""
        op = self.prod.get(name)
        if op is not None and op.type == "broadcast_to":
            return op.inputs[0]
        return None

    def is_zeros_like_source(self, name):
        op = self.prod.get(name)
        if op is not None and op.type == "cast":
            op = self.prod.get(op.inputs[0])
        return op is not None and op.type == "stop_gradient"

    # ------------------------------------------------------------ rules
    def rewrite(self, op):
        t = op.type
        out = op.outputs[0]
        tout = self.type(out)
        if trait(op, "identity") is not None and len(op.inputs) == 2:
            return self._binary(op, out, tout)
        if t == "neg":
            inner = self.prod.get(op.inputs[0])
            if inner is not None and inner.type == "neg" and self.type(inner.inputs[0]) == tout:
                self.replace(out, inner.inputs[0])
                return True
        if t == "full_like" and None not in tout.shape:
            # its input's values are never read: with a known shape it is a plain full
            self.replace(out, self.emit("full", [], {"shape": list(tout.shape), "value": op.attrs.get("value", 0.0),
                                                     "dtype": tout.dtype}))
            return True
        if t == "transpose":
            return self._transpose(op, out, tout)
        if t == "stop_gradient":  # stop_gradient(stop_gradient(x)) -> stop_gradient(x)
            inner = self.prod.get(op.inputs[0])
            if inner is not None and inner.type == "stop_gradient":
                self.replace(out, op.inputs[0])
                return True
            return False
        if t == "cast" and self.type(op.inputs[0]) == tout:  # to its own dtype: the value itself
            self.replace(out, op.inputs[0])
            return True
        if t == "reduce_sum" and self.reassociate:
            return self._sum_of_matmul(op, out, tout)
        if t == "matmul" and self.reassociate:
            return self._matmul_broadcast(op, out, tout)
        return False

    def _binary(self, op, out, tout):
        a, b = op.inputs
        ua, ub = self.uniform(a), self.uniform(b)
        # identities: x*1, x+0, x-0, x/1 (and 1*x, 0+x)
        opdef = OPS[op.type]
        ident = opdef.identity
        if ub is not None and ub == ident and self.type(a) == tout and self._exact_identity(op.type, ub, tout):
            self.replace(out, a)
            return True
        if opdef.commutative and ua is not None and ua == ident and self.type(b) == tout \
                and self._exact_identity(op.type, ua, tout):
            self.replace(out, b)
            return True
        known_shape = None not in tout.shape
        # zeros_like idiom: cast(stop_gradient(y)) * 0 means zeros of y's shape
        if op.type == "mul" and known_shape:
            for x, u in ((a, ub), (b, ua)):
                if u is not None and u == 0 and self.is_zeros_like_source(x):
                    self.emit("full", [], {"shape": list(tout.shape), "value": 0, "dtype": tout.dtype})
                    self.replace(out, self.new_ops[-1].outputs[0])
                    return True
        if self._of_transposes(op, out, tout):
            return True
        # two uniform operands: one full
        if ua is not None and ub is not None and known_shape and opdef.elementwise and opdef.ufunc is not None:
            with np.errstate(all="ignore"):
                v = getattr(np, opdef.ufunc)(np.asarray(ua, dtype=self.type(a).dtype),
                                             np.asarray(ub, dtype=self.type(b).dtype))
            if v.dtype.name != tout.dtype:
                return False
            self.emit("full", [], {"shape": list(tout.shape), "value": v.item(), "dtype": tout.dtype})
            self.replace(out, self.new_ops[-1].outputs[0])
            return True
        return False

    @staticmethod
    def _exact_identity(op_type, value, tout):
        """Whether ``x op value`` is ``x`` to the bit: a float zero added is one only when it is
        -0.0 (``-0.0 + 0.0`` is +0.0, so ``1 / (x + 0.0)`` is +inf at x = -0.0, not -inf), and a
        zero subtracted only when it is +0.0."""
        if op_type not in ("add", "sub") or np.dtype(tout.dtype).kind not in "fc":
            return True
        return bool(np.signbit(np.real(value))) == (op_type == "add")

    def _of_transposes(self, op, out, tout):
        """``f(transpose(x, p), transpose(y, p)) -> transpose(f(x, y), p)`` for an element-wise
        ``f`` of same-shaped operands: the same numbers, but computed on the untransposed
        layouts. A weight's gradient summed over its uses is such a chain of adds of
        transposed matmul results; element-wise ops writing into a planned (C-ordered)
        buffer from transposed operands run several times slower than on matching layouts.
        An operand read through ``stop_gradient`` (gradients computed inside a program) keeps
        it: on ``x`` when only that operand had it, on the result when both did."""
        opdef = OPS[op.type]
        if not (opdef.elementwise and opdef.ufunc is not None) or op.attrs or None in tout.shape:
            return False
        a, b = op.inputs
        sa, sb = self._transposed(a), self._transposed(b)
        if sa is None or sb is None or self.type(a) != tout or self.type(b) != tout:
            return False
        (x, pa, ga), (y, pb, gb) = sa, sb
        nd = len(tout.shape)
        perm = _perm(pa, nd)
        if self.type(x) != self.type(y) or perm != _perm(pb, nd):
            return False
        both = ga and gb
        if ga and not both:
            x = self.emit("stop_gradient", [x])
        if gb and not both:
            y = self.emit("stop_gradient", [y])
        inner = self.emit(op.type, [x, y])
        if self.type(inner) != self.type(x):
            return False
        new = self.emit("transpose", [inner], {"perm": perm})
        if both:
            new = self.emit("stop_gradient", [new])
        if self.type(new) != tout:
            return False
        self.replace(out, new)
        return True

    def _transposed(self, name):
        """``(x, perm, through stop_gradient)`` when ``name`` is ``transpose(x, perm)``, possibly
        under ``stop_gradient``s; else None."""
        op, stopped = self.prod.get(name), False
        while op is not None and op.type == "stop_gradient":
            op, stopped = self.prod.get(op.inputs[0]), True
        if op is None or op.type != "transpose":
            return None
        return op.inputs[0], op.attrs.get("perm"), stopped

    def _transpose(self, op, out, tout):
        inner = self.prod.get(op.inputs[0])
        if inner is None or inner.type != "transpose":
            return False
        x = inner.inputs[0]
        nd = len(tout.shape)
        p1 = _perm(inner.attrs.get("perm"), nd)
        p2 = _perm(op.attrs.get("perm"), nd)
        composed = [p1[i] for i in p2]
        if composed == list(range(nd)):
            if self.type(x) != tout:
                return False
            self.replace(out, x)
            return True
        new = self.emit("transpose", [x], {"perm": composed})
        if self.type(new) != tout:
            return False
        self.replace(out, new)
        return True

    def _two_d_same_dtype(self, *names):
        types = [self.type(n) for n in names]
        return all(len(t.shape) == 2 and None not in t.shape for t in types) and \
            len({t.dtype for t in types}) == 1 and types[0].dtype.startswith("float")

    def _sum_of_matmul(self, op, out, tout):
        if op.attrs.get("axes") is not None or op.attrs.get("keepdims"):
            return False
        mm = self.prod.get(op.inputs[0])
        if mm is None or mm.type != "matmul" or self.uses.get(op.inputs[0], 0) != 1:
            return False
        a, b = mm.inputs
        if not self._two_d_same_dtype(a, b, op.inputs[0]):
            return False
        ca = self.emit("reduce_sum", [a], {"axes": [0], "keepdims": False})
        rb = self.emit("reduce_sum", [b], {"axes": [1], "keepdims": False})
        prod = self.emit("mul", [ca, rb])
        total = self.emit("reduce_sum", [prod], {"axes": None, "keepdims": False})
        if self.type(total) != tout:
            return False
        self.replace(out, total)
        return True

    def _matmul_broadcast(self, op, out, tout):
        a, b = op.inputs
        if not self._two_d_same_dtype(a, b):
            return False
        m, k = self.type(a).shape
        n = self.type(b).shape[1]
        sa, sb = self._pattern_source(a), self._pattern_source(b)
        result = None
        if sa is not None:
            src, shape = sa
            if shape == (1, 1):    # every A[i, k] is s: out[i, j] = s * sum_k B[k, j]
                col = self.emit("reduce_sum", [b], {"axes": [0], "keepdims": True})
                result = self.emit("broadcast_to", [self.emit("mul", [src, col])], {"shape": [m, n]})
            elif shape == (m, 1):  # A[i, k] = a[i]: out[i, j] = a[i] * sum_k B[k, j]
                col = self.emit("reduce_sum", [b], {"axes": [0], "keepdims": True})
                result = self.emit("mul", [src, col])
            elif shape == (1, k):  # identical rows: one vector-matrix product, broadcast
                result = self.emit("broadcast_to", [self.emit("matmul", [src, b])], {"shape": [m, n]})
        elif sb is not None:
            src, shape = sb
            if shape == (1, 1):    # every B[k, j] is s: out[i, j] = s * sum_k A[i, k]
                row = self.emit("reduce_sum", [a], {"axes": [1], "keepdims": True})
                result = self.emit("broadcast_to", [self.emit("mul", [row, src])], {"shape": [m, n]})
            elif shape == (1, n):  # B[k, j] = b[j]: out[i, j] = sum_k A[i, k] * b[j]
                row = self.emit("reduce_sum", [a], {"axes": [1], "keepdims": True})
                result = self.emit("mul", [row, src])
            elif shape == (k, 1):  # identical columns: one matrix-vector product, broadcast
                result = self.emit("broadcast_to", [self.emit("matmul", [a, src])], {"shape": [m, n]})
        if result is None or self.type(result) != tout:
            return False
        self.replace(out, result)
        return True

    def _pattern_source(self, name):
        """(2-d source var, its shape) when ``name`` is a broadcast of a scalar/row/column,
        possibly read through ``stop_gradient`` (gradient programs wrap what they compute in
        it): the source is then returned under a ``stop_gradient`` too, so the rewrite lets
        no gradient through that the original blocked."""
        t = self.type(name)
        op = self.prod.get(name)
        through = False
        while op is not None and op.type == "stop_gradient":
            through, op = True, self.prod.get(op.inputs[0])
        if op is None:
            return None
        found = self._broadcast_source(op, t)
        if found is None or not through:
            return found
        return self.emit("stop_gradient", [found[0]]), found[1]

    def _broadcast_source(self, op, t):
        if op.type == "full":
            c = self.namer()
            value = np.full((1, 1), op.attrs.get("value", 0), dtype=t.dtype)
            self.block.add_var(c, TensorType((1, 1), t.dtype))
            self.new_ops.append(Op("constant", [], [c], {"value": value.tolist(), "dtype": t.dtype, "shape": [1, 1]}))
            self.prod[c] = self.new_ops[-1]
            return c, (1, 1)
        if op.type != "broadcast_to":
            return None
        src = op.inputs[0]
        st = self.type(src)
        if None in st.shape or len(st.shape) > 2 or st.dtype != t.dtype:
            return None
        shape2 = (1,) * (2 - len(st.shape)) + tuple(st.shape)
        if shape2 == tuple(t.shape):
            return None  # not a broadcast at all
        if len(st.shape) != 2:
            src = self.emit("reshape", [src], {"shape": list(shape2)})
        return src, shape2


def _perm(perm, nd):
    return list(range(nd))[::-1] if perm is None else [p % nd for p in perm]
