"""The op registry: one entry per primitive, holding its kernel and its shape/dtype rule.

A kernel is ``kernel(xp, *arrays, **attrs)`` written against an array namespace ``xp``
(numpy or cupy), returning one array or a tuple of arrays. A shape rule is
``infer(*types, **attrs)`` over :class:`TensorType` inputs, returning one TensorType or a
tuple of them; unknown dimensions are ``None``. Eager execution calls only the kernel; graph
building calls only the rule; the executor calls the kernel.

Every other fact about an op is declared at its registration too: its traits (``TRAITS``: what
the builder, executor, code generator and passes need to know) and its lowerings (``deflowering``:
how a backend other than the kernel call computes it). Consumers read these; none keeps its own
list of op names.

A *structured* op holds sub-blocks (``cond``, ``while``, ``scan``, ``switch``; see
``ops/control_flow.py``). It is registered with :func:`defstructured`: instead of a kernel it
has a :class:`BlockLayout` (which blocks it holds, how its inputs and outputs map onto theirs)
and rules by role (``RULE_ROLES``: how the interpreter runs it, how dead-code elimination
narrows it), declared beside it like its lowerings; its shape rule is ``infer(op, types)``.
Consumers look these up as they look up any op's traits, and never ask for an op by name.
"""
from ..dtypes import SHORT, normalize


class ShapeError(ValueError, RuntimeError):
    """Inputs whose shapes or dtypes an op cannot accept. A RuntimeError too, as PyTorch's error
    for them is: code written for PyTorch (``except RuntimeError``) catches it; ``except
    ValueError`` still does."""


class TensorType:
    """The static type of a value: shape (ints, ``None`` where unknown) and dtype name."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(None if d is None or d < 0 else int(d) for d in shape)
        self.dtype = normalize(dtype)

    @property
    def ndim(self):
        return len(self.shape)

    def __eq__(self, other):
        return isinstance(other, TensorType) and self.shape == other.shape and self.dtype == other.dtype

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{SHORT[self.dtype]}[{dims}]"


# Every trait an op may declare, with its default. Consumers (the builder, the executor, the
# code generator, the passes, the d2s side) read these; none keeps its own list of op names.
TRAITS = {
    "elementwise": False,   # output[i] depends on inputs[i] only (after broadcasting)
    "ufunc": None,          # the kernel is exactly ``xp.<ufunc>(*inputs)`` on same-dtype inputs
    "out_ok": False,        # the ufunc may write into a planned buffer through ``out=``
    "infix": None,          # Python operator symbol computing the op (generated code may use it)
    "comparison": False,    # an element-wise comparison returning bool
    "commutative": False,   # op(a, b) == op(b, a)
    "associative": False,   # op(op(a, b), c) == op(a, op(b, c)): constant folding may regroup
    "identity": None,       # e with op(x, e) == x (and op(e, x) == x when commutative): x+0, x*1
    "promotes": (),         # inputs brought to one common dtype: () none, None all, or positions
    "float_inputs": False,  # integer and bool inputs compute in float32 (input 0 unless promotes)
    "refuses_bool": False,  # a bool operand (tensor or Python bool) is refused, as PyTorch's sub does
    "wraps_ints": False,    # a Python int meeting an integer tensor is wrapped into its dtype, as
                            # PyTorch's wrapped numbers are (else converted checked: dtypes.convert_ints)
    "method": None,         # (array method, dtype kinds) a full reduction equals, e.g. ("sum", "f")
    "fresh": False,         # outputs are new buffers, never an input's (else: may alias one)
    "writes_input": False,  # returns (a copy of) input 0 with some elements written
    "view": False,          # eager output may share input 0's memory (autograd version checks)
    "movement": False,      # only moves, reshapes or relabels input 0's elements
    "alias": False,         # the kernel returns input 0 itself, unchanged (generated code binds it)
    "random": False,        # draws from the generator (implies effect)
    "effect": False,        # passes must neither merge nor drop it (random, print, assert)
    "unique": False,        # each result is its own object, never merged with an equal one (stack_new:
                            # the native backend grows each stack in place)
}


# The rules a structured op declares beside it (``defrule(name, role)``), by role.
RULE_ROLES = {
    "run": "run(ctx, op, values) -> output values: how the interpreter runs it (ctx.run_block runs a sub-block)",
    "narrow": "narrow(op, live, needed_ops): drop the outputs nothing reads (names not in live), and what "
              "computes them in its sub-blocks (dead-code elimination; the op is changed in place; "
              "needed_ops(block, roots) -> (ops, names) is the pass's own liveness)",
}


class BlockLayout:
    """How a structured op's inputs and outputs map onto its sub-blocks' (one subclass per
    layout, in ``ops/control_flow.py``). Consumers read the layout instead of asking which op
    they have: ``repeats`` (runs a block more than once per call: a loop), ``block_keys(op)``
    (the blocks a well-formed op holds), ``n_carry(op)`` (its leading loop-carried values)."""

    repeats = False

    def block_keys(self, op):
        """The keys of the sub-blocks ``op`` must hold (a frozenset of str)."""
        raise NotImplementedError

    def n_carry(self, op):
        """The number of loop-carried values (they lead the op's inputs and outputs)."""
        return 0

    def well_formed(self, op):
        """Whether ``op``'s blocks, inputs and outputs fit this layout (backends that inline
        the blocks check it first; the interpreter's rule reports a malformed op itself)."""
        return set(op.blocks) == set(self.block_keys(op))


class OpDef:
    """A registered primitive: its kernel, its shape/dtype rule, its traits (see TRAITS) and
    its lowerings (see ``deflowering``). ``n_out`` is the number of outputs (``None``: decided
    by the attrs, see ``num_outputs``). A structured op (``defstructured``) has no kernel but a
    ``layout`` (a :class:`BlockLayout`) and ``rules`` by role (see ``RULE_ROLES``)."""

    __slots__ = ("name", "kernel", "infer", "n_out", "doc", "lowerings", "layout", "rules") + tuple(TRAITS)

    def __init__(self, name, kernel, infer, n_out=1, doc="", layout=None, **traits):
        unknown = set(traits) - set(TRAITS)
        if unknown:
            raise TypeError(f"op {name!r}: unknown traits {sorted(unknown)}; known: {sorted(TRAITS)}")
        self.name, self.kernel, self.infer, self.n_out, self.doc = name, kernel, infer, n_out, doc
        self.lowerings = {}
        self.layout = layout
        self.rules = {}
        for trait, default in TRAITS.items():
            setattr(self, trait, traits.get(trait, default))
        if self.random:
            self.effect = True

    @property
    def structured(self):
        """Whether the op holds sub-blocks (then ``layout`` and ``rules`` describe it)."""
        return self.layout is not None

    def lowering(self, backend):
        """The hook registered for ``backend`` (see ``deflowering``), or None: the backend
        then computes the op by calling its kernel (or as its traits allow)."""
        return self.lowerings.get(backend)

    def rule(self, role):
        """The rule registered for ``role`` (see ``RULE_ROLES``), or None."""
        return self.rules.get(role)

    def __repr__(self):
        return f"<op {self.name}>"


OPS = {}


def defop(name, infer, n_out=1, doc=None, **traits):
    """Decorator registering ``kernel`` as primitive ``name`` with shape rule ``infer`` and
    the given traits (keywords of TRAITS). ``doc``: the op's docstring when the kernel has
    none of its own (kernels made by a factory)."""

    def deco(kernel):
        if name in OPS:
            raise ValueError(f"op {name!r} is registered twice")
        OPS[name] = OpDef(name, kernel, infer, n_out, (doc or kernel.__doc__ or "").strip(), **traits)
        return kernel

    return deco


def defstructured(name, layout, infer, doc=None):
    """Decorator registering ``run`` (``run(ctx, op, values) -> outputs``, its ``"run"`` rule)
    as structured op ``name``: one holding sub-blocks laid out as ``layout`` (a
    :class:`BlockLayout`), with shape rule ``infer(op, input types) -> tuple of TensorType``."""

    def deco(run):
        if name in OPS:
            raise ValueError(f"op {name!r} is registered twice")
        opdef = OpDef(name, None, infer, None, (doc or run.__doc__ or "").strip(), layout=layout)
        opdef.rules["run"] = run
        OPS[name] = opdef
        return run

    return deco


def defrule(name, role):
    """Decorator registering ``fn`` as structured op ``name``'s rule for ``role`` (one of
    ``RULE_ROLES``), declared beside the op."""
    if role not in RULE_ROLES:
        raise ValueError(f"unknown rule role {role!r}; roles: {', '.join(RULE_ROLES)}")

    def deco(fn):
        opdef = get_op(name)
        if role in opdef.rules:
            raise ValueError(f"op {name!r} already has a {role!r} rule")
        opdef.rules[role] = fn
        return fn

    return deco


def deflowering(name, backend):
    """Decorator registering ``fn`` as how backend ``backend`` lowers op ``name`` (declared next
    to the op's kernel, after it). What ``fn`` takes and returns is the backend's contract: the
    code generator's ``"python_scalar"`` hook, for instance, gets the Python expressions of the
    operands (numpy scalars) and returns the expression computing the op on them."""

    def deco(fn):
        opdef = get_op(name)
        if backend in opdef.lowerings:
            raise ValueError(f"op {name!r} already has a lowering for backend {backend!r}")
        opdef.lowerings[backend] = fn
        return fn

    return deco


def block_keys(op):
    """The sub-block keys an op of ``op.type`` must hold: none for a primitive, those of its
    layout for a structured op (an unknown type: None). Never raises on malformed attrs (the
    loader calls it on untrusted programs): such an op gets a set it cannot match."""
    opdef = OPS.get(op.type)
    if opdef is None:
        return None
    if opdef.layout is None:
        return frozenset()
    try:
        return frozenset(opdef.layout.block_keys(op))
    except Exception:  # noqa: BLE001 - hostile attrs: no block set fits
        return frozenset({"<malformed attrs>"})


def ops_with(trait, value=True):
    """Names of the registered ops whose ``trait`` equals ``value`` (a frozenset)."""
    return frozenset(n for n, d in OPS.items() if getattr(d, trait) == value)


def get_op(name):
    """The registered definition of the op called ``name`` (kernel, shape rule, traits).

    Raises:
        KeyError: no op of that name is registered.
    """
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}: not in the d2s runtime's op registry") from None
