"""``d2s.jit.trace``: run a function once on example inputs and record the ops that ran.

Recording goes through the one op dispatch: while ``STATE.tracer`` is set, every op runs
eagerly as usual and ``dispatch`` then hands it to :meth:`Tracer.record`, which appends the
same op to a Program. Concrete results are matched to program vars by the identity of their
arrays (so ``t[i] = v``, which rebinds ``t`` to a new array, stays right). Example inputs
become program inputs, module parameters program params, every other concrete value met as
an op input a constant.

Where a tensor's value goes to Python (``Tensor._concrete`` and ``__len__`` call
:meth:`Tracer.on_value`), the tracer records a :class:`~d2s.guards.Decision`, warns
(``TracerWarning``) and appends a ``guard`` op that recomputes the value when the program
runs and raises if it changed. Values that depend on no input, parameter or random draw are
constants of the trace: reading them needs no warning and no guard.
"""
import numpy as np

from d2s_runtime.device import to_host
from d2s_runtime.executor import Executor
from d2s_runtime.ir import Op
from d2s_runtime.ops import TensorType

from .._state import STATE
from ..autograd.grad_mode import no_grad
from ..static.builder import ProgramBuilder, flatten_outputs, is_param, operands_scalar_dtype, plain_attrs
from ..static.replay import replay_op
from ..tensor import Tensor, tensor
from ..user_errors import user_frame
from ..guards import (CHECK_OF, Decision, TraceCheckError, TraceGuardError, emit_warnings, find_guard_error,
                     guard_error_from)
from .match import outputs_match


class Tracer:
    """Records the ops of one concrete run into a Program (see the module docstring)."""

    def __init__(self, guards=True):
        self.guards = guards
        self.builder = ProgramBuilder()
        self.program = self.builder.program
        self.vars = {}        # id(array) -> var name
        self._keep = []       # the arrays of self.vars, kept alive so their ids stay unique
        self.dynamic = set()  # vars whose value depends on inputs, params or random draws
        self.decisions = []
        self._scalars = {}    # (type, value, dtype) -> constant var
        self._prev = None

    # ------------------------------------------------------------ context
    def __enter__(self):
        self._prev = STATE.tracer
        STATE.tracer = self
        STATE.refresh()
        return self

    def __exit__(self, *exc):
        STATE.tracer = self._prev
        STATE.refresh()
        return False

    # ------------------------------------------------------------ vars
    def _bind(self, arr, name):
        self.vars[id(arr)] = name
        self._keep.append(arr)

    def add_input(self, t):
        """Make concrete tensor ``t`` a program input; returns its var name."""
        name = self.builder.add_input(t.array.shape, str(t.dtype))._var.name
        self._bind(t.array, name)
        self.dynamic.add(name)
        return name

    def name_of(self, x, scalar_dtype=None):
        """The program var holding op input ``x`` (adding a param or a constant if new)."""
        if isinstance(x, Tensor):
            name = self.vars.get(id(x.array))
            if name is not None:
                return name
            if is_param(x):
                name = self.builder.param(x)._var.name
                self.dynamic.add(name)
                return name
            return self.builder.constant(to_host(x.array))
        if isinstance(x, (bool, int, float, np.generic)):
            # one var per distinct scalar (1, 1.0 and True are told apart by their type)
            key = (type(x).__name__, x, scalar_dtype)
            name = self._scalars.get(key)
            if name is None:
                name = self._scalars[key] = self.builder.constant(x, scalar_dtype)
            return name
        return self.builder.constant(np.asarray(to_host(x)))

    def _type(self, name):
        return self.program.block.vars[name].type

    # ------------------------------------------------------------ hooks called by d2s
    def record(self, opdef, inputs, attrs, results):
        """Append the op that just ran eagerly (``results`` are its concrete outputs)."""
        sdt = operands_scalar_dtype(inputs)
        names = [self.name_of(x, sdt) for x in inputs]
        attrs = plain_attrs(attrs)
        try:
            out_types = opdef.infer(*[self._type(n) for n in names], **attrs)
            if isinstance(out_types, TensorType):
                out_types = (out_types,)
        except Exception:  # the shape rule is stricter than the kernel: use what actually came out
            out_types = tuple(TensorType(r.array.shape, str(r.dtype)) for r in results)
        gb = self.program.block
        outs = []
        for r, t in zip(results, out_types):
            v = self.builder._new_var(t, gb)
            self._bind(r.array, v.name)
            outs.append(v.name)
        gb.ops.append(Op(opdef.name, names, outs, attrs))
        if opdef.effect or any(n in self.dynamic for n in names):
            self.dynamic.update(outs)

    def on_value(self, t, what):
        """A concrete tensor's value is going to Python (``what``: 'bool()', 'int()', ...)."""
        name = self.vars.get(id(t.array))
        if name is None:
            if what in ("shape", "len()") or not is_param(t):
                return  # a constant of the trace, or a parameter's size: the same on every call
            name = self.name_of(t)
        if name not in self.dynamic:
            return
        data = t.array
        if what == "len()":
            if data.ndim == 0 or self._type(name).shape[0] is not None:
                return  # the size follows from the input shapes, which the trace fixes
            value, check = int(data.shape[0]), "len"
        elif what == "shape":
            if None not in self._type(name).shape:
                return
            value, check = tuple(int(d) for d in data.shape), "shape"
        else:
            data = to_host(data)
            check = CHECK_OF.get(what, "array")
            if check != "array" and data.size != 1:
                return  # Python raises right after this hook (ambiguous truth value, ...)
            if check == "int" and what == "an index" and data.dtype.kind not in "iu":
                return
            value = _py_value(data, check)
        loc = user_frame() or (None, None, "")
        filename, lineno, code = loc
        d = Decision(filename, lineno, code, what, value, name)
        self.decisions.append(d)
        if self.guards:
            self._add_guard(d, check)

    def _add_guard(self, d, check):
        inputs = [d.var]
        attrs = {"check": check, "expected": None if check == "array" else d.value,
                 "where": f"{d.filename}:{d.lineno}", "code": d.code, "what": d.what}
        if check == "array":
            inputs.append(self.builder.constant(np.array(d.value)))
        self.program.block.ops.append(Op("guard", inputs, [], attrs))


def _py_value(data, check):
    if check == "array":
        return np.array(data)
    v = data.item()
    return bool(v) if check == "bool" else int(v) if check == "int" else float(v) if check == "float" else v


# ---------------------------------------------------------------------------- TracedFunction
class TracedFunction:
    """A function (or module) traced on example inputs: call it like the original.

    Attributes:
        program: the recorded :class:`~d2s_runtime.ir.Program` (with its ``guard`` ops).
        decisions: where a tensor's value steered Python during the trace, in order.
        guards: whether calls check the recorded decisions.
        eager: the original function or module.
    """

    def __init__(self, fn, tracer, arg_tree, example_args, out_names, out_build, guards):
        self.eager = fn
        self.program = tracer.program
        self.decisions = list(tracer.decisions)
        self.guards = guards
        self._arg_tree = arg_tree          # (positions of tensor args, non-tensor args as traced)
        self._example_types = [TensorType(a.array.shape, str(a.dtype)) for a in example_args]
        self._out_names = out_names
        self._out_build = out_build
        self._param_tensors = dict(tracer.builder.param_tensors)
        self._device = next((a.device for a in example_args if a.device != "cpu"), "cpu")
        self._executor = None

    def __repr__(self):
        name = getattr(self.eager, "__qualname__", type(self.eager).__name__)
        return f"<TracedFunction {name}: {len(self.program.block.ops)} ops, {self.n_guards} guards>"

    @property
    def n_guards(self):
        return sum(1 for op in self.program.block.ops if op.type == "guard")

    @property
    def executor(self):
        if self._executor is None:
            self._executor = Executor(self.program, device=self._device)
        return self._executor

    def __call__(self, *args):
        tensors = self._split_args(args)
        try:
            if STATE.grad_enabled and (any(t.requires_grad for t in tensors) or
                                       any(p.requires_grad for p in self._param_tensors.values())):
                values = self._replay(tensors)  # through dispatch, so outputs are differentiable
            else:
                params = {n: p.array for n, p in self._param_tensors.items()}
                arrays = self.executor.run(*[t.array for t in tensors], params=params)
                values = [Tensor._make(a) for a in arrays]
        except Exception as e:
            g = find_guard_error(e)
            if g is None:
                raise
            raise guard_error_from(g) from None
        return self._out_build(values)

    def _split_args(self, args):
        positions, statics = self._arg_tree
        if len(args) != len(statics):
            raise TypeError(f"traced function takes {len(statics)} argument(s), got {len(args)}")
        tensors = []
        for i, a in enumerate(args):
            if i in positions:
                if not isinstance(a, Tensor):
                    a = tensor(a) if not isinstance(a, np.ndarray) else Tensor._make(a)
                t = self._example_types[len(tensors)]
                if tuple(a.array.shape) != t.shape or str(a.dtype) != t.dtype:
                    raise TraceGuardError(
                        f"argument #{i} is {a.dtype}{list(a.array.shape)} but the function was traced for "
                        f"{t.dtype}{list(t.shape)}: a trace fixes its input shapes and dtypes; re-trace with "
                        "this shape, or use d2s.jit.to_static (InputSpec with None dims) for dynamic shapes",
                        what="input shape", expected=t.shape, actual=tuple(a.array.shape))
                tensors.append(a)
            elif not _same_static(a, statics[i]):
                raise TraceGuardError(
                    f"argument #{i} is {a!r} but the function was traced with {statics[i]!r}: non-tensor "
                    "arguments are baked into a trace; re-trace with this value",
                    what="argument", expected=statics[i], actual=a)
        return tensors

    def _replay(self, tensors):
        """Run the program op by op through the eager dispatch (records autograd nodes); guard
        ops run their check on the concrete values like any other kernel."""
        prog = self.program
        env = dict(zip(prog.inputs, tensors))
        env.update(self._param_tensors)
        env.update({n: Tensor._make(a) for n, a in prog.constants.items()})
        for op in prog.block.ops:
            env.update(zip(op.outputs, replay_op(op, [env[n] for n in op.inputs])))
        return [env[n] for n in self._out_names]

    # ------------------------------------------------------------ checking
    def check(self, inputs_list, rtol=1e-4, atol=1e-5):
        """Run eager and traced on each input tuple; returns (all_ok, table text)."""
        rows = []
        ok_all = True
        for k, inputs in enumerate(inputs_list):
            inputs = _as_args(inputs)
            with no_grad():
                expected = _call_untraced(self.eager, inputs)
                try:
                    got = self(*inputs)
                    ok, detail = outputs_match(expected, got, rtol, atol)
                    status = "ok" if ok else "MISMATCH"
                except TraceGuardError as e:
                    ok, status = False, "GUARD"
                    detail = f"{_where(e)}: traced {e.what} = {e.expected!r}, now {e.actual!r}"
            ok_all &= ok
            rows.append((str(k), _describe_inputs(inputs), status, detail))
        return ok_all, _table(("#", "inputs", "trace vs eager", "detail"), rows)


def _where(e):
    import os
    return f"{os.path.basename(e.filename)}:{e.lineno}" if e.filename else (e.what or "?")


def _same_static(a, b):
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else np.array_equal(a, b)
    except Exception:
        return a is b


def _as_args(inputs):
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs)
    return (inputs,)


def _call_untraced(fn, args):
    """Call ``fn`` eagerly even if a trace is running around us."""
    prev = STATE.tracer
    STATE.tracer = None
    STATE.refresh()
    try:
        return fn(*args)
    finally:
        STATE.tracer = prev
        STATE.refresh()


def _describe_inputs(inputs):
    parts = []
    for a in inputs:
        if isinstance(a, Tensor) and not a.is_symbolic:
            d = to_host(a.array)
            if d.size <= 4:
                parts.append(np.array2string(d.ravel(), precision=3, separator=",", max_line_width=60))
            else:
                parts.append(f"{a.dtype}{list(d.shape)} mean={float(d.mean()):.3g}")
        else:
            parts.append(repr(a))
    return ", ".join(parts)


def _table(header, rows):
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


# ---------------------------------------------------------------------------- trace
def trace(fn_or_module, example_inputs, check_inputs=None, guards=True):
    """Trace ``fn_or_module`` on ``example_inputs`` into a program.

    Args:
        fn_or_module: a function or an ``nn.Module`` (its parameters become program params,
            read at every call, so training the module changes what the trace computes).
        example_inputs: a tuple of arguments (a single tensor is taken as one argument).
            Tensors (and numpy arrays) become program inputs, with their shapes and dtypes
            fixed; other arguments are baked in and must be equal at call time.
        check_inputs: optional list of argument tuples; each is run eagerly and through the
            trace, and any difference raises :class:`TraceCheckError` with a table (like
            TorchScript's ``check_trace``, this raises rather than warns).
        guards: keep a guard at every place a tensor's value steered Python, so that a call
            that would take another path raises :class:`TraceGuardError`; ``False`` gives the
            classic trace, which silently returns the traced path's answer.

    Returns:
        A :class:`TracedFunction`; every place a tensor's value steered Python also emits a
        :class:`TracerWarning` naming the file and line.
    """
    args = _as_args(example_inputs)
    args = tuple(Tensor._make(a) if isinstance(a, np.ndarray) else a for a in args)
    positions = {i for i, a in enumerate(args) if isinstance(a, Tensor)}
    tensors = [args[i] for i in sorted(positions)]
    if any(t.is_symbolic for t in tensors):
        raise TypeError("trace needs concrete example inputs, not symbolic tensors")
    statics = [None if i in positions else a for i, a in enumerate(args)]
    tracer = Tracer(guards)
    for t in tensors:
        tracer.add_input(t)
    try:
        with tracer:
            out = fn_or_module(*args)
        leaves, build = flatten_outputs(out)
        out_names = [tracer.name_of(t) for t in leaves]
    finally:
        emit_warnings(tracer.decisions, guards)
    prog = tracer.program
    prog.outputs = list(out_names)
    prog.block.outputs = list(out_names)
    prog.name = getattr(fn_or_module, "__name__", type(fn_or_module).__name__)
    traced = TracedFunction(fn_or_module, tracer, (positions, statics), tensors, out_names, build, guards)
    if check_inputs:
        ok, table = traced.check(check_inputs)
        if not ok:
            raise TraceCheckError("the trace disagrees with eager execution on some check_inputs:\n" + table,
                                  table, traced)
    return traced
