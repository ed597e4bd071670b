"""The program IR: ``Program`` -> ``Block`` -> ``Op`` over ``Var``; plain data, single assignment.

* ``Var``: a name and a :class:`TensorType` (shape with ``None`` for unknown dims, dtype).
* ``Op``: ``type`` (a registered primitive or a control-flow op), ``inputs`` and ``outputs``
  (var names), ``attrs`` (JSON-able plain data) and ``blocks`` (named sub-blocks, for
  ``cond``/``while``/``scan``).
* ``Block``: ``inputs`` (its parameters: for a sub-block, the values the op passes in,
  captured outer values included), ``ops`` in order, ``outputs`` (names it yields) and
  ``vars`` (every Var it defines, inputs included).
* ``Program``: the global block plus ``inputs`` (fed by the caller), ``params`` (fed from
  module parameters at each call), ``constants`` (arrays held by the program) and
  ``outputs``. Every var name is unique in the whole program.
"""
from .ops.registry import TensorType


class Var:
    __slots__ = ("name", "type")

    def __init__(self, name, type):
        self.name, self.type = name, type

    @property
    def shape(self):
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    def __repr__(self):
        return f"{self.name}:{self.type}"


class Op:
    __slots__ = ("type", "inputs", "outputs", "attrs", "blocks")

    def __init__(self, type, inputs, outputs, attrs=None, blocks=None):
        self.type = type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = dict(attrs or {})
        self.blocks = dict(blocks or {})

    def __repr__(self):
        return f"<Op {self.type} {self.inputs} -> {self.outputs}>"


class Block:
    __slots__ = ("inputs", "ops", "outputs", "vars", "parent")

    def __init__(self, parent=None):
        self.inputs = []
        self.ops = []
        self.outputs = []
        self.vars = {}
        self.parent = parent

    def add_var(self, name, type):
        v = Var(name, type)
        self.vars[name] = v
        return v

    def lookup(self, name):
        """The Var called ``name`` visible from this block (own or an enclosing block's)."""
        b = self
        while b is not None:
            if name in b.vars:
                return b.vars[name]
            b = b.parent
        raise KeyError(name)

    def sub_blocks(self):
        for op in self.ops:
            for b in op.blocks.values():
                yield b
                yield from b.sub_blocks()


class Program:
    def __init__(self):
        self.block = Block()
        self.inputs = []
        self.params = []
        self.constants = {}
        self.outputs = []
        self.name = "program"

    def global_block(self):
        return self.block

    @property
    def blocks(self):
        """Every block, the global one first, then sub-blocks in program order."""
        return [self.block, *self.block.sub_blocks()]

    @property
    def vars(self):
        out = {}
        for b in self.blocks:
            out.update(b.vars)
        return out

    def var(self, name):
        return self.vars[name]
