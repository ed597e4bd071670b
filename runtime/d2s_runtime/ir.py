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
  ``outputs``. Every var name is unique in the whole program. ``annotations`` holds derived,
  optional facts about the program (e.g. the ``memory_plan`` pass's buffer plan, read by the
  executor); passes that change the program drop the annotations they invalidate.

``str(program)`` prints the text form (see ``printer.py``), ``program.to_dot()`` Graphviz DOT,
``program.verify()`` checks it (see ``verify.py``), ``program.clone()`` deep-copies it.
"""
import copy

from .printer import format_program, to_dot
from .verify import verify as verify_program


class Var:
    """A named value of a program: ``name`` (unique in the program) and ``type``, a
    :class:`~d2s_runtime.ops.TensorType` (``shape`` with ``None`` for dims known only when the
    program runs, ``dtype``)."""
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
    """One operation of a block: ``type`` (a registered op or a control-flow op), ``inputs``
    and ``outputs`` (var names), ``attrs`` (JSON-able plain data) and ``blocks`` (the named
    sub-blocks of ``cond``/``while``/``scan``)."""
    __slots__ = ("type", "inputs", "outputs", "attrs", "blocks")

    def __init__(self, type, inputs, outputs, attrs=None, blocks=None):
        self.type = type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = dict(attrs or {})
        self.blocks = dict(blocks or {})

    def __repr__(self):
        return f"<Op {self.type} {self.inputs} -> {self.outputs}>"

    def copy(self, blocks=None):
        """A copy of this op (attrs deep-copied); ``blocks`` replaces its sub-blocks."""
        return Op(self.type, self.inputs, self.outputs, _copy_attrs(self.attrs),
                  self.blocks if blocks is None else blocks)


_IMMUTABLE = (int, float, str, bool, type(None))


def _copy_attrs(attrs):
    """A deep copy of an op's attrs; scalars and strings (most attrs) are shared, not copied,
    since every pass clones every op (deepcopy dominated cloning a large program)."""
    return {k: v if type(v) in _IMMUTABLE else copy.deepcopy(v) for k, v in attrs.items()}


class Block:
    """A list of ops with its ``inputs`` (parameters of a sub-block: the values its op passes
    in), ``outputs`` (the names it yields), ``vars`` (every Var it defines) and ``parent`` (the
    enclosing block, ``None`` for the global block)."""
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

    def clone(self, parent=None):
        """A deep copy of this block (and its sub-blocks), attached to ``parent``."""
        b = Block(parent=parent)
        b.inputs = list(self.inputs)
        b.outputs = list(self.outputs)
        b.vars = {n: Var(v.name, v.type) for n, v in self.vars.items()}
        b.ops = [op.copy(blocks={k: sub.clone(parent=b) for k, sub in op.blocks.items()}) for op in self.ops]
        return b

    def __repr__(self):
        return f"<Block inputs={self.inputs} ops={len(self.ops)} outputs={self.outputs}>"


class Program:
    """A static program: the global block (``global_block()``; ``blocks`` lists it with every
    sub-block), ``inputs`` fed by the caller, ``params`` fed from module parameters at each
    call, ``constants`` (arrays it holds) and ``outputs``.

    ``str(program)`` is its text form, ``to_dot()`` Graphviz DOT, ``verify()`` checks it and
    ``clone()`` copies it. Run it with :class:`d2s_runtime.Executor`.
    """

    def __init__(self):
        self.block = Block()
        self.inputs = []
        self.params = []
        self.constants = {}
        self.outputs = []
        self.name = "program"
        self.annotations = {}

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

    def clone(self):
        """A deep copy: blocks, ops and vars are new; constant arrays are shared (read-only)."""
        p = Program()
        p.block = self.block.clone()
        p.inputs, p.params, p.outputs = list(self.inputs), list(self.params), list(self.outputs)
        p.constants = dict(self.constants)
        p.name = self.name
        p.annotations = dict(getattr(self, "annotations", {}))
        return p

    def verify(self):
        """Check the program is well formed; raises :class:`~d2s_runtime.verify.VerifyError`
        naming the op and the var otherwise. Returns the program."""
        verify_program(self)
        return self

    def pretty(self, multiline=True):
        """The text form (see ``printer.py`` for the grammar)."""
        return format_program(self, multiline=multiline)

    def __str__(self):
        return self.pretty()

    def __repr__(self):
        return (f"<Program {self.name}: {len(self.inputs)} inputs, {len(self.params)} params, "
                f"{len(self.block.ops)} ops, {len(self.outputs)} outputs>")

    def to_dot(self):
        """Graphviz DOT source of the program (sub-blocks as clusters)."""
        return to_dot(self)
