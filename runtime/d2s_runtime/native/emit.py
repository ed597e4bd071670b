"""What the numba emitter hands op hooks: :class:`ScalarEmit` (element-wise hooks return a
scalar expression) and :class:`Emit` (any other op's hook builds its results with it), and the
numba text both rest on (``NP_TYPE``, ``cast_expr``, ``StackPool``).
"""
import numpy as np

from .plan import NativeUnsupported, V, check_int

NP_TYPE = {"float32": "np.float32", "float64": "np.float64", "int32": "np.int32", "int64": "np.int64",
           "bool": "np.bool_"}



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
    its output value(s)): the op's input values, and this emitter's vocabulary: names and lines
    (``fresh``, ``emit``, ``indent``, ``const``, ``lib``, ``np_type``, ``cast``, ``int``), values
    (``array``, ``contiguous``, ``materialize``, ``copy``, ``alias``, ``new_array``, ``pin``, ``scalar``),
    loops (``loops``, ``rows``) and the builders several ops share (``reduce``, ``matmul``,
    ``reshape``, ``transpose``, ``broadcast``, ``join``, ``fill``, ``dim``, ``basic_index``,
    ``constant``, the stack builders)."""

    def __init__(self, lowerer, op, out_types):
        self._l, self._op, self.out_types = lowerer, op, out_types

    @property
    def out(self):
        return self.out_types[0]

    @property
    def op(self):
        return self._op

    def unsupported(self, why):
        raise NativeUnsupported(f"op {self._op.type} (output {self._op.outputs[0]}): {why}")

    # names, literals and lines
    @property
    def indent(self):
        """The indent of the statements being emitted."""
        return self._l.indent

    def fresh(self):
        return self._l.fresh()

    def emit(self, indent, text):
        self._l.emit(indent, text)

    def const(self, value, dtype):
        """A literal of ``dtype``, passed as an argument (its name)."""
        return self._l.const_arg(np.asarray(value, dtype=dtype)[()])

    def lib(self, name):
        return self._l.lib(name)

    @staticmethod
    def np_type(dtype):
        """numba's scalar type of ``dtype`` (``np.float32``), as text."""
        return NP_TYPE[dtype]

    @staticmethod
    def cast(expr, src, dst):
        return cast_expr(expr, src, dst)

    @staticmethod
    def int(v, what):
        """``v`` validated as an int (to be formatted into the source)."""
        return check_int(v, what)

    # values
    def array(self, x):
        """``x`` as an array local (0-d scalars become 0-d arrays)."""
        return self._l.array(x)

    def contiguous(self, x):
        return self._l.contiguous(x)

    def materialize(self, x):
        return self._l.materialize(x)

    def new_array(self, name, dtype, shape, fresh=True, layout="C"):
        """The array value held by local ``name`` (``fresh``: made here, no one else sees it;
        ``layout``: 'C' contiguous, 'A' a strided view)."""
        return self._l.new_array(name, dtype, shape, layout=layout, fresh=fresh)

    def pin(self, x):
        """``x``'s buffer is now visible through another value (a view made here): never
        written in place."""
        self._l.pin(x)

    @staticmethod
    def scalar(name, dtype):
        """The scalar value held by local ``name``."""
        return V("s", name, dtype, ())

    def copy(self, x):
        return self._l.copy_of(x)

    def alias(self, x):
        return self._l.alias(x)

    # loops
    def loops(self, dims, indent):
        """Open ``for`` loops over ``dims`` (extent expressions); returns (indices, inner indent)."""
        return self._l.loops(dims, indent)

    def rows(self, x, axis):
        """``x`` (contiguous) viewed as (outer, n, inner) around ``axis`` (None: flattened);
        returns (x, the 3-d local, the axis or None)."""
        return self._l.rows(self, x, axis)

    # builders (each returns a value)
    def reduce(self, kind, x, axes, keepdims, first_on_ties=False):
        return self._l.reduce(self, kind, x, axes, keepdims, first_on_ties)

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

    def constant(self, value):
        return self._l.constant(self, value)

    def stack_new(self, like):
        return self._l.stack_new(self, like)

    def stack_push(self, buf, shapes, x):
        return self._l.stack_push(self, buf, shapes, x)

    def stack_pop(self, buf, shapes, shape):
        return self._l.stack_pop(self, buf, shapes, shape)

    def stack_rows(self, buf, width):
        return self._l.stack_rows(self, buf, width)

