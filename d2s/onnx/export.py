"""Program -> ONNX model (opset 18).

Straight-line ops go through ``registry.CONVERTERS`` (one converter per op type, declared next to
the op in ``d2s/ops/*.py``); control-flow ops keep
their structure (``cond`` as ``If``, ``while`` and ``scan`` as ``Loop``; see ``control_flow``).
Unknown dims stay symbolic: each dynamic dim of a graph input gets a name (``x_dim0``), and
every other value keeps its rank with unknown sizes.

Every d2s var is written under a prefixed name (``_v_a`` for var ``a``), so the graph's input
and output names (the user's, e.g. ``x`` and ``logits``) can never collide with a var name.
"""
import numpy as np

from d2s_runtime.ops import OPS

from .registry import CONTROL_FLOW, CONVERTERS, UNSUPPORTED

OPSET = 18
IR_VERSION = 9   # onnxruntime 1.16+ reads it
VAR_PREFIX = "_v_"


class ExportError(ValueError):
    """A program that cannot be written as ONNX (the message names the op and why)."""


def _onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        raise ImportError("ONNX export needs the onnx package: pip install 'd2s[onnx]'") from None
    return onnx, helper, numpy_helper


class ValueType:
    """Shape and dtype of a name made during export (d2s vars carry a TensorType)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


_Type = ValueType  # (its name before the control-flow family modules read it)


class GraphCtx:
    """The nodes of one ONNX graph being written, and the types of the names it uses."""

    def __init__(self, exporter, types):
        self.x = exporter
        self.nodes = []
        self.types = types  # name -> type with .shape/.dtype, shared with enclosing graphs

    def node(self, op_type, inputs, outputs, **attrs):
        self.nodes.append(self.x.helper.make_node(op_type, list(inputs), list(outputs), **attrs))

    def tmp(self):
        return self.x.fresh()

    def const(self, arr):
        name = self.x.fresh()
        arr = np.asarray(arr)
        self.node("Constant", [], [name], value=self.x.numpy_helper.from_array(arr))
        self.types[name] = ValueType(arr.shape, arr.dtype.name)
        return name

    def cast(self, name, dtype):
        """``name`` as ``dtype``: itself if it already is, else a Cast of it."""
        if self.dtype(name) == dtype:
            return name
        out = self.x.fresh()
        self.node("Cast", [name], [out], to=self.onnx_dtype(dtype))
        self.types[out] = ValueType(self.shape(name), dtype)
        return out

    def dtype(self, name):
        return self.types[name].dtype

    def shape(self, name):
        return self.types[name].shape

    def onnx_dtype(self, dtype):
        return self.x.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def unsupported(self, op, why):
        outs = f" (outputs {', '.join(_plain(o) for o in op.outputs)})" if op.outputs else ""
        return ExportError(f"op {op.type!r}{outs} cannot be exported to ONNX: {why}")

    def value_info(self, name, shape=None):
        """A typed graph input/output; ``shape`` entries may be ints, dim names or None."""
        t = self.types[name]
        dims = [None] * len(t.shape) if shape is None else list(shape)
        return self.x.helper.make_tensor_value_info(name, self.onnx_dtype(t.dtype), dims)


def _plain(name):
    return name[len(VAR_PREFIX):] if name.startswith(VAR_PREFIX) else name


class Exporter:
    """Writes blocks of a (renamed) program as ONNX nodes."""

    def __init__(self):
        self.onnx, self.helper, self.numpy_helper = _onnx()
        self._n = 0

    def fresh(self):
        self._n += 1
        return f"_t{self._n}"

    def emit_block(self, g, block):
        for op in block.ops:
            if op.type in CONTROL_FLOW:
                CONTROL_FLOW[op.type](self, g, op)
            elif op.type in CONVERTERS:
                CONVERTERS[op.type](g, op)
            elif op.type in UNSUPPORTED:
                raise g.unsupported(op, UNSUPPORTED[op.type])
            elif op.type in OPS and not op.inputs and not OPS[op.type].effect:
                # no inputs, no effect: a constant, computed once here with the op's own kernel
                value = np.asarray(OPS[op.type].kernel(np, **op.attrs), dtype=g.dtype(op.outputs[0]))
                g.node("Constant", [], op.outputs, value=self.numpy_helper.from_array(value))
            else:
                raise g.unsupported(op, "it has no ONNX form in d2s.onnx; run this program with d2s_runtime "
                                        "instead, or rewrite the model without it")

    def subgraph(self, g, block, bound, name, graph_inputs=(), extra_outputs=()):
        """An ONNX graph running ``block``: its inputs bound (by Identity) to the names in
        ``bound``, its outputs ``extra_outputs`` then the block's outputs, each copied to a fresh
        name (an ONNX subgraph output must be produced inside it)."""
        sub = GraphCtx(self, g.types)
        for inner, outer in zip(block.inputs, bound):
            sub.node("Identity", [outer], [inner])
        self.emit_block(sub, block)
        outs = []
        for o in list(extra_outputs) + list(block.outputs):
            m = self.fresh()
            sub.node("Identity", [o], [m])
            g.types[m] = g.types[o]
            outs.append(m)
        graph = self.helper.make_graph(sub.nodes, name, [sub.value_info(n) for n in graph_inputs],
                                       [sub.value_info(n) for n in outs])
        return graph, sub


def _renamed(program):
    """A copy of ``program`` with every var name prefixed by VAR_PREFIX."""
    p = program.clone()
    r = lambda n: VAR_PREFIX + n  # noqa: E731

    def block(b):
        b.inputs = [r(n) for n in b.inputs]
        b.outputs = [r(n) for n in b.outputs]
        b.vars = {r(n): type(v)(r(n), v.type) for n, v in b.vars.items()}
        for op in b.ops:
            op.inputs = [r(n) for n in op.inputs]
            op.outputs = [r(n) for n in op.outputs]
            for sb in op.blocks.values():
                block(sb)

    block(p.block)
    p.inputs, p.params, p.outputs = [r(n) for n in p.inputs], [r(n) for n in p.params], [r(n) for n in p.outputs]
    p.constants = {r(n): v for n, v in program.constants.items()}
    return p


def _check_names(names, what):
    bad = [n for n in names if not isinstance(n, str) or not n or n.startswith((VAR_PREFIX, "_t"))]
    if bad or len(set(names)) != len(names):
        raise ExportError(f"bad ONNX {what} names {names}: they must be distinct non-empty strings not starting "
                          f"with {VAR_PREFIX!r} or '_t'")


def _used_names(nodes, out):
    for n in nodes:
        out.update(n.input)
        for a in n.attribute:
            if a.g is not None:
                _used_names(a.g.node, out)
                out.update(o.name for o in a.g.output)
    return out


def _without_unused_constants(nodes, outputs):
    """``nodes`` less the Constant nodes nothing reads (d2s programs keep literals that passes
    folded away; onnxruntime would warn about each)."""
    used = _used_names(nodes, set(outputs))
    return [n for n in nodes if n.op_type != "Constant" or n.output[0] in used]


def program_to_onnx(program, params=None, input_names=None, output_names=None, producer="d2s"):
    """An ``onnx.ModelProto`` for ``program`` (checked by ``onnx.checker``).

    Args:
        program: the Program to write.
        params: arrays for ``program.params``, by param var name (stored as initializers).
        input_names: names of the graph inputs (default: the program's input var names).
        output_names: names of the graph outputs (default ``output_0``, ``output_1``, ...).

    Returns:
        ``(model, input_names, output_names)``.
    """
    input_names = list(input_names or program.inputs)
    output_names = list(output_names or [f"output_{i}" for i in range(len(program.outputs))])
    if len(input_names) != len(program.inputs) or len(output_names) != len(program.outputs):
        raise ExportError(f"the program has {len(program.inputs)} inputs and {len(program.outputs)} outputs, "
                          f"got names {input_names} and {output_names}")
    _check_names(input_names + output_names, "input/output")
    params = dict(params or {})
    missing = [n for n in program.params if n not in params]
    if missing:
        raise ExportError(f"no values for program params {missing}: export a to_static function or module "
                          "(its parameters are read), or pass params={name: array}")
    prog = _renamed(program)
    ex = Exporter()
    types = {name: v.type for name, v in prog.vars.items()}
    g = GraphCtx(ex, types)
    graph_inputs = []
    for user, var in zip(input_names, prog.inputs):
        t = types[var]
        types[user] = t
        shape = [d if d is not None else f"{user}_dim{i}" for i, d in enumerate(t.shape)]
        graph_inputs.append(g.value_info(user, shape))
        g.node("Identity", [user], [var])
    ex.emit_block(g, prog.global_block())
    initializers = [ex.numpy_helper.from_array(np.asarray(params[n]), VAR_PREFIX + n) for n in program.params]
    initializers += [ex.numpy_helper.from_array(np.asarray(a), n) for n, a in prog.constants.items()]
    graph_outputs = []
    for user, var in zip(output_names, prog.outputs):
        g.node("Identity", [var], [user])
        types[user] = types[var]
        graph_outputs.append(g.value_info(user))
    graph = ex.helper.make_graph(_without_unused_constants(g.nodes, output_names), program.name or "d2s_program",
                                 graph_inputs, graph_outputs,
                                 initializer=initializers)
    model = ex.helper.make_model(graph, producer_name=producer,
                                 opset_imports=[ex.helper.make_opsetid("", OPSET)])
    model.ir_version = min(model.ir_version, IR_VERSION)
    try:
        ex.onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # noqa: BLE001 - the checker's own error types vary across onnx versions
        raise ExportError(f"onnx.checker rejected the exported model of program {program.name!r}: {e}") from e
    return model, input_names, output_names
