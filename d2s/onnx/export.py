"""Program -> ONNX model: straight-line ops through ``converters``, ``cond`` as ``If``,
``while`` as ``Loop``, ``scan`` as a ``Loop`` with scan outputs; unknown dims stay symbolic.

ONNX subgraphs have no parameters and read outer values by name, while d2s sub-blocks take
explicit inputs; each sub-block input is therefore bound with an ``Identity`` of the outer
value it receives.
"""
import numpy as np

from .converters import CONVERTERS

OPSET = 18


class ExportError(ValueError):
    """A program that cannot be written as ONNX (names the op and why)."""


def _onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        raise ImportError("ONNX export needs the onnx package: pip install 'd2s[onnx]'") from None
    return onnx, helper, numpy_helper


class GraphCtx:
    """Nodes, initializers and types of one ONNX graph being written."""

    def __init__(self, exporter, types):
        self.x = exporter
        self.nodes = []
        self.types = types  # var name -> TensorType, shared with enclosing graphs

    def node(self, op_type, inputs, outputs, **attrs):
        self.nodes.append(self.x.helper.make_node(op_type, list(inputs), list(outputs), **attrs))

    def tmp(self):
        return self.x.fresh()

    def const(self, arr):
        name = self.x.fresh()
        self.node("Constant", [], [name], value=self.tensor_proto(np.asarray(arr)))
        return name

    def tensor_proto(self, arr):
        return self.x.numpy_helper.from_array(np.asarray(arr))

    def dtype(self, name):
        return self.types[name].dtype

    def shape(self, name):
        return self.types[name].shape

    def onnx_dtype(self, dtype):
        return self.x.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def unsupported(self, op, why):
        return ExportError(f"op {op.type!r} has no ONNX form here: {why}")

    def value_info(self, name, dim_names=None):
        t = self.types[name]
        dims = [d if d is not None else (dim_names or {}).get((name, i), f"{name}_d{i}") for i, d in enumerate(t.shape)]
        return self.x.helper.make_tensor_value_info(name, self.onnx_dtype(t.dtype), dims)


class Exporter:
    def __init__(self):
        self.onnx, self.helper, self.numpy_helper = _onnx()
        self._n = 0

    def fresh(self):
        self._n += 1
        return f"_t{self._n}"

    def emit_block(self, g, block):
        for op in block.ops:
            if op.type == "cond":
                self._cond(g, op)
            elif op.type == "while":
                self._while(g, op)
            elif op.type == "scan":
                self._scan(g, op)
            else:
                conv = CONVERTERS.get(op.type)
                if conv is None:
                    raise ExportError(f"op {op.type!r} has no ONNX form (outputs {', '.join(op.outputs)}); "
                                      "export a program without it, or run it with d2s_runtime instead")
                conv(g, op)

    def _subgraph(self, g, block, outer_inputs, name, graph_inputs=(), extra_outputs_first=()):
        """An ONNX graph for ``block``: its inputs bound to ``outer_inputs`` by Identity."""
        sub = GraphCtx(self, g.types)
        for inner, outer in zip(block.inputs, outer_inputs):
            sub.node("Identity", [outer], [inner])
        self.emit_block(sub, block)
        outs = list(extra_outputs_first) + list(block.outputs)
        # outputs must be produced inside this graph; pass-through names get an Identity
        out_names = []
        for o in outs:
            n = self.fresh()
            sub.node("Identity", [o], [n])
            g.types[n] = g.types[o]
            out_names.append(n)
        return self.helper.make_graph(sub.nodes, name, list(graph_inputs),
                                      [sub.value_info(n) for n in out_names])

    def _cond(self, g, op):
        pred, operands = op.inputs[0], op.inputs[1:]
        then_g = self._subgraph(g, op.blocks["then"], operands, self.fresh() + "_then")
        else_g = self._subgraph(g, op.blocks["else"], operands, self.fresh() + "_else")
        p = pred
        if g.shape(pred) != ():
            p = g.tmp()
            g.node("Reshape", [pred, g.const(np.asarray([], dtype=np.int64))], [p])
        g.node("If", [p], op.outputs, then_branch=then_g, else_branch=else_g)

    def _while(self, g, op):
        cond_b, body_b = op.blocks["cond"], op.blocks["body"]
        n = len(body_b.outputs)
        carries, captures = op.inputs[:n], op.inputs[n:]
        # the first test runs before the loop; cond block names are reused inside the body graph, so inline a renamed copy here
        init_cond = self._inline_renamed(g, cond_b, list(carries) + list(captures))
        # body graph: (iter, cond_in, *carries) -> (cond_out, *new carries)
        it, cin = self.fresh(), self.fresh()
        g.types[it] = _T((), "int64")
        g.types[cin] = _T((), "bool")
        carry_in = [self.fresh() for _ in carries]
        for c, o in zip(carry_in, carries):
            g.types[c] = g.types[o]
        sub = GraphCtx(self, g.types)
        for inner, outer in zip(body_b.inputs, carry_in + list(captures)):
            sub.node("Identity", [outer], [inner])
        self.emit_block(sub, body_b)
        new_carries = list(body_b.outputs)
        cond_out = self._inline_renamed(sub, cond_b, new_carries + list(captures))
        outs = []
        for name in [cond_out] + new_carries:
            m = self.fresh()
            sub.node("Identity", [name], [m])
            g.types[m] = g.types[name]
            outs.append(m)
        body = self.helper.make_graph(
            sub.nodes, self.fresh() + "_body",
            [sub.value_info(it), sub.value_info(cin)] + [sub.value_info(c) for c in carry_in],
            [sub.value_info(m) for m in outs])
        g.node("Loop", ["", init_cond] + list(carries), op.outputs, body=body)

    def _inline_renamed(self, g, block, inputs):
        """Emit ``block`` into ``g`` with fresh names; returns the name of its (single) output."""
        from d2s_runtime.ir import Block
        rename = {}
        for inner, outer in zip(block.inputs, inputs):
            rename[inner] = outer
        copy = Block()
        for op in block.ops:
            new = _rename_op(op, rename, self, g)
            copy.ops.append(new)
        self.emit_block(g, copy)
        out = rename.get(block.outputs[0], block.outputs[0])
        p = out
        if g.shape(out) != ():
            p = self.fresh()
            g.types[p] = _T((), "bool")
            g.node("Reshape", [out, g.const(np.asarray([], dtype=np.int64))], [p])
        return p

    def _scan(self, g, op):
        body_b = op.blocks["body"]
        nc = op.attrs["n_carry"]
        nx = op.attrs["n_xs"]
        init, xs, captures = op.inputs[:nc], op.inputs[nc:nc + nx], op.inputs[nc + nx:]
        it, cin = self.fresh(), self.fresh()
        g.types[it] = _T((), "int64")
        g.types[cin] = _T((), "bool")
        carry_in = [self.fresh() for _ in init]
        for c, o in zip(carry_in, init):
            g.types[c] = g.types[o]
        sub = GraphCtx(self, g.types)
        slices = []
        for x in xs:
            s = self.fresh()
            sub.node("Gather", [x, it], [s], axis=0)
            g.types[s] = _T(g.shape(x)[1:], g.dtype(x))
            slices.append(s)
        for inner, outer in zip(body_b.inputs, carry_in + slices + list(captures)):
            sub.node("Identity", [outer], [inner])
        self.emit_block(sub, body_b)
        outs = []
        for name in [cin] + list(body_b.outputs):
            m = self.fresh()
            sub.node("Identity", [name], [m])
            g.types[m] = g.types[name]
            outs.append(m)
        body = self.helper.make_graph(
            sub.nodes, self.fresh() + "_scan",
            [sub.value_info(it), sub.value_info(cin)] + [sub.value_info(c) for c in carry_in],
            [sub.value_info(m) for m in outs])
        trip = g.tmp()
        shp = g.tmp()
        g.node("Shape", [xs[0]], [shp])
        g.node("Gather", [shp, g.const(np.asarray(0, dtype=np.int64))], [trip], axis=0)
        g.node("Loop", [trip, g.const(np.asarray(True))] + list(init), op.outputs, body=body)


class _T:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


def _rename_op(op, rename, exporter, g):
    from d2s_runtime.ir import Op
    ins = [rename.get(n, n) for n in op.inputs]
    outs = []
    for n in op.outputs:
        m = exporter.fresh()
        rename[n] = m
        g.types[m] = g.types[n]
        outs.append(m)
    if op.blocks:
        raise ExportError(f"a while loop's condition holds a {op.type!r} op; ONNX export supports "
                          "straight-line loop conditions only")
    return Op(op.type, ins, outs, op.attrs)


def program_to_onnx(program, params=None, dim_names=None, producer="d2s"):
    """An ``onnx.ModelProto`` for ``program``; ``params`` maps param names to arrays."""
    ex = Exporter()
    types = {name: v.type for name, v in program.vars.items()}
    g = GraphCtx(ex, types)
    ex.emit_block(g, program.global_block())
    params = params or {}
    initializers = []
    for name in program.params:
        if name not in params:
            raise ExportError(f"no value for program param {name!r}")
        initializers.append(ex.numpy_helper.from_array(np.asarray(params[name]), name))
    for name, arr in program.constants.items():
        initializers.append(ex.numpy_helper.from_array(np.asarray(arr), name))
    outputs = []
    for o in program.outputs:
        if o in program.inputs or o in program.params or o in program.constants:
            m = ex.fresh()
            g.node("Identity", [o], [m])
            types[m] = types[o]
            o = m
        outputs.append(o)
    graph = ex.helper.make_graph(
        g.nodes, program.name or "d2s_program",
        [g.value_info(n, dim_names) for n in program.inputs],
        [g.value_info(n) for n in outputs], initializer=initializers)
    model = ex.helper.make_model(graph, producer_name=producer,
                                 opset_imports=[ex.helper.make_opsetid("", OPSET)])
    model.ir_version = min(model.ir_version, 9)
    ex.onnx.checker.check_model(model)
    return model, outputs
