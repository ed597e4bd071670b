"""The numba emitter's builders that several ops' hooks share (through ``Emit``): reductions
with an inlined element-wise source, matrix products (numba's ``np.dot``, MKL where present,
products of rows and transposes prepared once before a loop), views and reshapes, joins,
fills, basic indexing, literals, and rows of a tensor around an axis. A mixin of
:class:`~d2s_runtime.native.lower.Lowerer`: they use its names, lines and values.
"""
import numpy as np

from ..ops import OPS
from . import mkl
from .emit import NP_TYPE, cast_expr
from .plan import NativeUnsupported, V, check_int

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


class SharedBuilders:
    """The builders (see the module docstring); each takes the op's ``Emit`` ``e`` first."""

    def reduce(self, e, kind, x, axes, keepdims, first_on_ties=False):
        """(``first_on_ties``: a max/min keeping the earlier of equal elements, signed zeros
        included, as the values of max/min with a dim are the elements at their index; numpy's
        reductions keep the later one, as ``L.maximum`` does.)"""
        out_t = e.out
        if type(keepdims) is not bool:
            raise NativeUnsupported("reduce: keepdims must be a bool")
        nd = x.ndim
        if axes is None or nd == 0:
            ax = list(range(nd))
        else:
            if not isinstance(axes, (list, tuple)):
                axes = [axes]
            ax = sorted({check_int(a, "axis") % nd for a in axes})
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
        if first_on_ties and kind in ("max", "min"):
            upd = "({a} if ({a} %s {v} or {a} != {a}) else {v})" % (">=" if kind == "max" else "<=")
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

    def batched_matmul(self, e, a, b):
        """A matmul with an operand of more than 2 dims (attention's ``q @ k.T`` and
        ``weights @ v`` over (batch, heads, L, E)): one MKL gemm per 2-d slice of the result,
        each operand slice read in place where gemm can (strided rows or columns: the heads of
        a (B, T, H, E) tensor viewed as (B, H, T, E) are such slices), the leading dims
        broadcast as numpy's ``matmul`` broadcasts them (a dim of 1, or a missing one, pairs
        with every index). Without MKL (``d2s[mkl]``) the program runs on the Python backend."""
        odt = e.out.dtype
        if odt not in ("float32", "float64") or a.dtype != odt or b.dtype != odt:
            e.unsupported("batched matmul of integers or of mixed dtypes")
        if a.ndim < 2 or b.ndim < 2:
            e.unsupported("batched matmul with a 1-d operand")
        if _mkl_matmul(odt) is None:
            e.unsupported("batched matmul needs MKL (pip install 'd2s[mkl]')")
        helper = self.lib("smatmul_into" if odt == "float32" else "dmatmul_into")
        a, b = self.array(a), self.array(b)
        nd = max(a.ndim, b.ndim)
        ind = self.indent
        # the result's leading dims: numpy's broadcasting of the operands' leading dims
        dims = []
        for j in range(nd - 2):
            sizes = [f"{v.name}.shape[{j - (nd - v.ndim)}]" for v in (a, b) if j - (nd - v.ndim) >= 0]
            d = self.fresh()
            self.emit(ind, f"{d} = {sizes[0]}" if len(sizes) == 1 else f"{d} = max({sizes[0]}, {sizes[1]})")
            for s in sizes:
                self.emit(ind, f"if {s} != 1 and {s} != {d}: raise ValueError('native program: matmul batch dims "
                               f"do not broadcast')")
            dims.append(d)
        out = self.fresh()
        shape = dims + [f"{a.name}.shape[{a.ndim - 2}]", f"{b.name}.shape[{b.ndim - 1}]"]
        self.emit(ind, f"{out} = np.empty(({', '.join(shape)},), {NP_TYPE[odt]})")
        idx, inner = self.loops(dims, ind)

        def pick(v):
            lead = nd - v.ndim
            parts = [f"({idx[j]} if {v.name}.shape[{j - lead}] != 1 else 0)" for j in range(lead, nd - 2)]
            return f"{v.name}[{', '.join(parts)}]" if parts else v.name

        self.emit(inner, f"{helper}({pick(a)}, {pick(b)}, {out}[{', '.join(idx)}])")
        return self.new_array(out, odt, tuple(e.out.shape))

    def matmul(self, e, a, b):
        odt = e.out.dtype
        if odt not in ("float32", "float64"):
            e.unsupported("integer matmul (numba's np.dot is for floats)")
        if a.ndim > 2 or b.ndim > 2:
            return self.batched_matmul(e, a, b)
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

    def reshape(self, e, x, shape):
        """``x`` reshaped to the op's output type (``shape``: ints, at most one -1)."""
        dims = [check_int(d, "reshape dim") for d in shape]
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
        perm = [check_int(p, "perm") % max(nd, 1) for p in perm]
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
        axis = check_int(axis, "axis") % max(nd, 1)
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
            dims = [str(check_int(d, "dim")) for d in t.shape]
        name = self.fresh()
        self.emit(self.indent, f"{name} = np.full(({', '.join(dims)},), {k})")
        return self.new_array(name, t.dtype, tuple(t.shape))

    def dim(self, e, x, axis):
        a = check_int(axis, "axis")
        if not -x.ndim <= a < x.ndim:
            e.unsupported("axis out of range")
        if x.shape[a] is not None:
            return V("s", self.const_arg(np.int64(x.shape[a])), "int64", ())
        x = self.array(x)
        name = self.fresh()
        self.emit(self.indent, f"{name} = np.int64({x.name}.shape[{a % x.ndim}])")
        return V("s", name, "int64", ())

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
                k = check_int(ent[1], "index")
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
                b = [None if v is None else check_int(v, "slice bound") for v in ent[1:]]
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

    def rows(self, e, x, axis):
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
        a = check_int(axis, "axis")
        if not -x.ndim <= a < x.ndim:
            e.unsupported("axis out of range")
        a %= x.ndim
        outer = " * ".join(f"{x.name}.shape[{j}]" for j in range(a)) or "1"
        inner = " * ".join(f"{x.name}.shape[{j}]" for j in range(a + 1, x.ndim)) or "1"
        self.emit(self.indent, f"{xr} = {x.name}.reshape(({outer}, {x.name}.shape[{a}], {inner}))")
        return x, xr, a
