"""The CUDA C emitter, beside the numba one (``native/lower.py``), over the same planner
(``native/plan.py``): which element-wise results stay lazy, which reduction reads a chain inline.
Each materialized chain becomes ONE ``__global__`` kernel (one thread per element, broadcast
operands indexed from the output's static shape), and a full reduction of a chain one
single-block kernel (sums accumulate in double for floats, as the native backend's do).

Ops lower through their ``deflowering(op, "cuda")`` hooks, declared beside them (C expressions
with numpy's semantics: see ``ops/elementwise.py``); the helpers those call are :data:`PRELUDE`,
written so that the same text compiles with NVRTC and, with ``-D__device__=``, with a host C++
compiler (the tests compare every hook with numpy on edge values that way, with no GPU).

:func:`lower_kernels` lowers a block of such ops (static shapes only) and returns the CUDA C
source and a description of each kernel; compiling is ``nvrtc.compile_source``. The graph
backend's capture (``capture.py``, through ``fusion.py``) runs groups of element-wise ops as
the kernels :func:`lower_group` makes of them, instead of one kernel per op.

SAFETY: as in the numba emitter, no program text reaches the source: names are generated,
numbers are validated ints or floats written as exact hex literals.
"""
import math
import re
from itertools import count

import numpy as np

from ..ops import OPS
from ..schedule import FeedView, topo_order
from ..native.plan import NativeUnsupported, Planner, V, check_int, where_of

C_TYPE = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long", "bool": "bool"}

PRELUDE = r"""
#ifndef D2S_PRELUDE
#define D2S_PRELUDE
/* numpy's maximum/minimum: NaN wins; of equal values (signed zeros) the second */
template <typename T> __device__ inline T d2s_maximum(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> __device__ inline T d2s_minimum(T a, T b) { return (a < b || a != a) ? a : b; }
__device__ inline float d2s_fn_floor(float x) { return floorf(x); }
__device__ inline double d2s_fn_floor(double x) { return floor(x); }
__device__ inline float d2s_fn_fmod(float a, float b) { return fmodf(a, b); }
__device__ inline double d2s_fn_fmod(double a, double b) { return fmod(a, b); }
__device__ inline float d2s_fn_copysign(float a, float b) { return copysignf(a, b); }
__device__ inline double d2s_fn_copysign(double a, double b) { return copysign(a, b); }
__device__ inline float d2s_fn_exp(float x) { return expf(x); }
__device__ inline double d2s_fn_exp(double x) { return exp(x); }
__device__ inline float d2s_fn_log1p(float x) { return log1pf(x); }
__device__ inline double d2s_fn_log1p(double x) { return log1p(x); }
/* numpy's floor_divide for floats (npy_divmod) */
template <typename T> __device__ inline T d2s_floordiv(T a, T b) {
    if (b == 0) return a / b;
    T mod = d2s_fn_fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    T fl;
    if (div != 0) {
        fl = d2s_fn_floor(div);
        if (div - fl > (T)0.5) fl += 1;
    } else {
        fl = d2s_fn_copysign((T)0, a / b);
    }
    return fl;
}
/* PyTorch's remainder for floats: fmod, plus b where the signs differ; a zero keeps a's sign */
template <typename T> __device__ inline T d2s_remainder(T a, T b) {
    T r = d2s_fn_fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
/* numpy's logaddexp */
template <typename T> __device__ inline T d2s_logaddexp(T x, T y) {
    if (x == y) return x + (T)0.693147180559945309417232121458176568;
    T t = x - y;
    if (t > 0) return x + d2s_fn_log1p(d2s_fn_exp(-t));
    if (t <= 0) return y + d2s_fn_log1p(d2s_fn_exp(t));
    return t;
}
/* d2s's sigmoid: 1 / (1 + exp(-x)), stable for large |x| */
template <typename T> __device__ inline T d2s_sigmoid(T x) {
    if (x >= 0) return (T)1 / ((T)1 + d2s_fn_exp(-x));
    T z = d2s_fn_exp(x);
    return z / ((T)1 + z);
}
#endif
"""

# the helpers a hook may call (``e.lib(name)``): every ``d2s_<name>`` the prelude defines (but
# its own ``d2s_fn_*`` overloads)
_LIB = frozenset(n for n in re.findall(r"\bd2s_(\w+)\s*\(", PRELUDE) if not n.startswith("fn_"))
# the CUDA math library's functions a hook may call (``e.fn(name)``; ``name + "f"`` in float32)
_MATH = frozenset("exp log sqrt sin cos tanh pow fabs floor log1p fmod".split())


def c_literal(value, dtype):
    """An exact C literal of ``value`` converted to ``dtype`` (numpy's conversion)."""
    v = np.asarray(value).astype(dtype)[()]
    if dtype == "bool":
        return "true" if v else "false"
    if dtype.startswith("int"):
        return f"(({C_TYPE[dtype]}){int(v)}LL)" if dtype == "int64" else f"(({C_TYPE[dtype]}){int(v)})"
    f = float(v)
    if math.isnan(f):
        text = "(0.0/0.0)"
    elif math.isinf(f):
        text = "(1.0/0.0)" if f > 0 else "(-1.0/0.0)"
    else:
        text = f.hex()
    return f"(({C_TYPE[dtype]}){text})"


def cast_expr(expr, src, dst):
    if src == dst:
        return expr
    if dst == "bool":
        return f"({expr} != 0)"
    return f"(({C_TYPE[dst]})({expr}))"


class CudaScalarEmit:
    """What an element-wise op's ``"cuda"`` hook gets (see ``ops/elementwise.py``)."""

    def __init__(self, op, dtype):
        self._op, self.dtype = op, dtype

    def fn(self, name):
        if name not in _MATH:
            raise NativeUnsupported(f"no math function {name!r}")
        return name + "f" if self.dtype == "float32" else name

    def lit(self, value, dtype=None):
        if type(value) is bool or not isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
            self.unsupported("a literal that is not a number")
        return c_literal(value, dtype or self.dtype)

    def lib(self, name):
        if name not in _LIB:
            raise NativeUnsupported(f"no CUDA helper {name!r}")
        return "d2s_" + name

    def unsupported(self, why):
        raise NativeUnsupported(f"{where_of(self._op)}: {why}")


class Kernel:
    """One emitted kernel: its name, argument leaves (values read: ``.name`` is their C name),
    output (C name, dtype, shape), element count, and reduction kind (None: one thread per
    element; else one block of 256 threads)."""

    __slots__ = ("name", "args", "out", "size", "reduction", "dtype", "shape")

    def __init__(self, name, args, out, size, reduction=None, dtype=None, shape=None):
        self.name, self.args, self.out, self.size, self.reduction = name, args, out, size, reduction
        self.dtype, self.shape = dtype, shape


class FusedPlan:
    """A group of ops lowered to kernels (:func:`lower_group`).

    Attributes:
        source: the CUDA C (prelude included).
        kernels: the :class:`Kernel` list, in launch order (a kernel may read an earlier one's
            output by its C name).
        inputs: the C name of each program input (then param), in order.
        outputs: per program output, ``("a", C name)`` (an input's or a kernel's output) or
            ``("s", C literal)``.
    """

    __slots__ = ("source", "kernels", "inputs", "outputs")

    def __init__(self, source, kernels, inputs, outputs):
        self.source, self.kernels, self.inputs, self.outputs = source, kernels, inputs, outputs


class CudaEmitter(Planner):
    """The planner's decisions written as CUDA C kernels (see the module docstring)."""

    BACKEND = "cuda"

    def __init__(self, program, order=None):
        super().__init__(program, order)
        self.kernels = []
        self.sources = []
        self._n = count()

    def fresh(self):
        return f"v{next(self._n)}"

    def check_dtype(self, name, what="dtype"):
        if name not in C_TYPE:
            raise NativeUnsupported(f"{what} is {name}, which the CUDA C emitter does not lower")
        return name

    def scalar_call(self, op, hook, cd, in_dts, out_dt, res_dt, raw):
        e = CudaScalarEmit(op, cd)
        attrs = dict(op.attrs)

        def call(args):
            expr = hook(e, *args, **attrs)
            return expr if res_dt == "bool" or raw else f"(({C_TYPE[res_dt]}){expr})"

        call.check = lambda n: hook(e, *["x"] * n, **attrs)
        return call

    def scalar_result(self, op, call, ins, cd, res_dt, out_dt, raw):
        raise NativeUnsupported(f"{where_of(op)}: 0-d operands only (scalar programs run as they are)")

    def make_emit(self, op, out_types):
        return _ReduceEmit(self, op, out_types)

    # ---------------------------------------------------------------- kernels
    def _render(self, tree, shape, body, memo):
        """C statements computing ``tree`` at the output's flat index ``i``; returns the local."""
        key = id(tree)
        if key in memo:
            return memo[key]
        tag = tree[0]
        if tag == "v":
            v = tree[1]
            if v.kind == "s":  # a literal (see lower_kernels)
                memo[key] = v.name
                return v.name
            res = self.fresh()
            body.append(f"{C_TYPE[v.dtype]} {res} = {v.name}[{self._index(v, shape)}];")
        elif tag == "c":
            inner = self._render(tree[1], shape, body, memo)
            expr = cast_expr(inner, tree[2], tree[3])
            res = inner if expr == inner else self.fresh()
            if res != inner:
                body.append(f"{C_TYPE[tree[3]]} {res} = {expr};")
        else:
            args = [self._render(k, shape, body, memo) for k in tree[2]]
            res = self.fresh()
            body.append(f"auto {res} = {tree[1](args)};")
        memo[key] = res
        return res

    @staticmethod
    def _index(v, shape):
        """The flat index into leaf ``v`` (static, broadcast to ``shape``) at output index ``i``."""
        if not v.shape:
            return "0"
        n, terms, stride_out = len(shape), [], 1
        strides = {}
        for j in range(n - 1, -1, -1):
            strides[j] = stride_out
            stride_out *= shape[j]
        stride_v = 1
        for k in range(v.ndim - 1, -1, -1):
            j = k + n - v.ndim
            d = check_int(v.shape[k], "dim")
            if d != 1:
                terms.append(f"((i / {strides[j]}LL) % {check_int(shape[j], 'dim')}LL) * {stride_v}LL")
            stride_v *= d
        return " + ".join(terms) if terms else "0"

    def materialize(self, v):
        if v.kind != "l":
            return v
        if None in v.shape:
            raise NativeUnsupported("a kernel over an unknown dim (the CUDA C emitter needs static shapes)")
        leaves = [x for x in self.leaves(v.tree, []) if x.kind == "a"]
        out = self.fresh()
        name = f"d2s_k{len(self.kernels)}"
        size = int(np.prod(v.shape, dtype=np.int64))
        body = []
        res = self._render(v.tree, v.shape, body, {})
        params = [f"const {C_TYPE[x.dtype]}* __restrict__ {x.name}" for x in leaves]
        params.append(f"{C_TYPE[v.dtype]}* __restrict__ {out}")
        src = [f'extern "C" __global__ void {name}({", ".join(params)}) {{',
               "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
               f"    if (i >= {size}LL) return;"]
        src += ["    " + line for line in body]
        src += [f"    {out}[i] = {res};", "}"]
        self.sources.append("\n".join(src))
        self.kernels.append(Kernel(name, leaves, out, size, dtype=v.dtype, shape=tuple(v.shape)))
        r = V("a", out, v.dtype, v.shape)
        r.var = v.var
        self._ctx.fresh.add(out)
        return r

    def reduce_kernel(self, op, kind, x, out_t):
        if kind not in ("sum", "mean", "max", "min"):
            raise NativeUnsupported(f"{where_of(op)}: reduction {kind}")
        if None in x.shape:
            raise NativeUnsupported("a reduction over an unknown dim")
        tree = x.tree if x.kind == "l" else ("v", x)
        odt = out_t.dtype
        acc = ("double" if odt.startswith("float") else "long long") if kind in ("sum", "mean") else C_TYPE[odt]
        if kind in ("sum", "mean"):
            init, combine = "0", "a + b"
        elif kind == "max":
            init, combine = ("-(1.0/0.0)" if odt.startswith("float") else str(np.iinfo(odt).min) + "LL"), \
                "d2s_maximum(a, b)"
        else:
            init, combine = ("(1.0/0.0)" if odt.startswith("float") else str(np.iinfo(odt).max) + "LL"), \
                "d2s_minimum(a, b)"
        leaves = [v for v in self.leaves(tree, []) if v.kind == "a"]
        size = int(np.prod(x.shape, dtype=np.int64))
        out, name = self.fresh(), f"d2s_k{len(self.kernels)}"
        body = []
        res = self._render(tree, x.shape, body, {})
        params = [f"const {C_TYPE[v.dtype]}* __restrict__ {v.name}" for v in leaves]
        params.append(f"{C_TYPE[odt]}* __restrict__ {out}")
        final = f"(({C_TYPE[odt]})(s[0] / {size}.0))" if kind == "mean" else f"(({C_TYPE[odt]})s[0])"
        src = [f'extern "C" __global__ void {name}({", ".join(params)}) {{',
               "    /* one block of 256 threads: a strided pass, then a tree in shared memory */",
               f"    __shared__ {acc} s[256];",
               f"    {acc} t = ({acc})({init});",
               f"    for (long long i = threadIdx.x; i < {size}LL; i += 256) {{"]
        src += ["        " + line for line in body]
        src += [f"        {acc} a = t, b = ({acc}){res}; t = {combine};", "    }",
                "    s[threadIdx.x] = t;", "    __syncthreads();",
                "    for (int w = 128; w > 0; w >>= 1) {",
                f"        if (threadIdx.x < w) {{ {acc} a = s[threadIdx.x], b = s[threadIdx.x + w]; "
                f"s[threadIdx.x] = {combine}; }}",
                "        __syncthreads();", "    }",
                f"    if (threadIdx.x == 0) {out}[0] = {final};", "}"]
        self.sources.append("\n".join(src))
        self.kernels.append(Kernel(name, leaves, out, size, reduction=kind, dtype=odt, shape=()))
        return V("a", out, odt, ())


class _ReduceEmit:
    """The facade a reduction's ``"cuda"`` hook gets: ``reduce(kind, x, axes, keepdims)``."""

    def __init__(self, emitter, op, out_types):
        self._e, self._op, self.out = emitter, op, out_types[0]

    def reduce(self, kind, x, axes, keepdims):
        if axes is not None and sorted(check_int(a, "axis") % max(x.ndim, 1) for a in axes) != list(range(x.ndim)):
            raise NativeUnsupported(f"{where_of(self._op)}: only full reductions have a CUDA C form yet")
        if keepdims:
            raise NativeUnsupported(f"{where_of(self._op)}: keepdims")
        return self._e.reduce_kernel(self._op, kind, x, self.out)


def lower_kernels(program):
    """``(source, kernels)``: the CUDA C of ``program``'s global block, whose ops must all have
    ``"cuda"`` lowerings and static shapes (raises NativeUnsupported naming the first that has
    not). Inputs are the kernels' leaves by var name; outputs are materialized."""
    plan = lower_group(program)
    return plan.source, plan.kernels


def lower_group(program):
    """The :class:`FusedPlan` of ``program``'s global block (see :func:`lower_kernels`): how
    the graph backend runs a group of element-wise ops (and reductions reading them) as a few
    kernels inside a capture."""
    em = CudaEmitter(program)
    env = {}
    c_inputs = []
    for name in list(program.inputs) + list(program.params):
        t = em.type_of(name)
        em.check_dtype(t.dtype)
        v = V("a", em.fresh(), t.dtype, t.shape)
        v.var = name
        env[name] = v
        c_inputs.append(v.name)
    ops = []
    for op in program.block.ops:
        opdef = OPS.get(op.type)
        if op.blocks or opdef is None:
            raise NativeUnsupported(f"{where_of(op)}: not an element-wise op or a reduction")
        if not op.inputs and not opdef.effect and len(op.outputs) == 1:
            # a literal: a 0-d one is written into the kernels reading it
            value = np.asarray(opdef.kernel(np, **op.attrs))
            dt = em.type_of(op.outputs[0]).dtype
            if value.ndim:
                raise NativeUnsupported(f"{where_of(op)}: an array literal")
            v = V("s", c_literal(value[()], dt), dt, ())
            v.var = op.outputs[0]
            env[op.outputs[0]] = v
            continue
        ops.append(op)
    block = program.block.clone()
    block.ops = [op for op in block.ops if op.outputs and op.outputs[0] not in env or not op.outputs]
    order = topo_order(FeedView(block, list(block.inputs) + list(env)))[0]
    del ops
    res = em.block(block, env, order, 1, set(program.outputs), owned=set(), outputs=list(program.outputs))
    source = PRELUDE + "\n" + "\n\n".join(em.sources) + "\n"
    return FusedPlan(source, em.kernels, c_inputs, [(v.kind, v.name) for v in res])
