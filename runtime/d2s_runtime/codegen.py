"""The code-generating backend: a Program compiled into ONE Python function.

Like torch.fx's ``GraphModule`` codegen, the executor turns a prepared program into the source
of a single function whose body is straight-line calls of the op kernels, e.g.::

    def program(v0, v1):
        v2 = u_multiply(v0, v1)              # a plain ufunc op calls the ufunc directly
        v3 = k3(xp, v2, **a3)                # any other op calls its registered kernel
        del v2                               # last-use freeing, as the interpreter does
        ...

A structured op (``cond``, ``while``, ``scan``, ...) is emitted by its ``"codegen"`` lowering,
declared beside it (``ops/control_flow.py``): native Python over inlined sub-blocks (``cond`` an
``if``/``else``, ``while`` a ``while True:`` loop with ``if not ...: break``, ``scan`` a ``for``
over the leading axis). The hook is ``hook(g, op, indent, info)``, called only for an op its
layout finds well formed; ``g`` is the code generator, whose hook API is ``g.local`` (var name
-> local name), ``g.fresh()``, ``g.emit(indent, text, info)``, ``g.emit_sub(block, in_locals,
out_locals, indent, owned_inputs)`` (inline a sub-block), ``g.bind(var names, locals)``,
``g.use(name, scalar)``, ``g.is0d(name)``, ``g.glob(prefix, value)`` (a value the code reads
from its globals), ``g.types``, ``g.xp`` and ``g.loop_limit``. A structured op without one (or
malformed) runs through its ``"run"`` rule, which the interpreter's sub-block runner serves.
Small-tensor programs are dominated by per-op overhead, so the generated code also

* keeps 0-d results as numpy scalars and computes on them with Python operators
  (``v5 = v3 < v4``: numpy's scalar math, ~20x cheaper than a ufunc call on 0-d arrays): an
  op's ``infix`` trait, or its ``"python_scalar"`` lowering (``ops.registry.deflowering``);
  0-d constants and inputs get a scalar twin bound once at entry for such uses;
* calls a few reductions through the array's own method (``v.sum()``) when the attrs make
  that identical to the kernel (the op's ``method`` trait);
* skips ``del`` for values known to be tiny (they would cost more time than they save);
* binds the input of an op whose kernel returns it unchanged (its ``alias`` trait:
  ``stop_gradient``) instead of calling the kernel;
* computes matrix products through ``blas.matmul`` (fewer BLAS threads on a busy machine, where
  that cannot change the result), and runs a loop whose products are all small on one BLAS
  thread where that cannot change them either (``blas.enter_loop``).

Values are therefore ndarrays or numpy scalars (``device='cpu'``) and always arrays of ``xp``
(``device='gpu'``); a kernel gets 0-d inputs as arrays, and program outputs are arrays, as
with the interpreter.

SAFETY. A saved model's program JSON is untrusted input and loading a model must never run
code, so no text from the program ever reaches the generated source: local names are
generated here (``v0, v1, ...``), kernels, attrs, constants, ops and rules are handed in as
values of the function's globals under generated names (``k3``, ``a3``, ``c5``, ``o7``), op
types are only looked up in the registry (``OPS``: traits, rules and lowerings) and attrs
that steer the structure (``scan``'s ``n_carry``, ``n_xs``, ``reverse``) are read as Python
values, never formatted into the source (the structured ops' lowerings keep this rule). The only program-derived source text is therefore
made of this module's own literals. ``tests/runtime/test_codegen.py`` runs a program whose var names
and attrs hold Python code.
"""
import linecache
import sys
import weakref
from itertools import count

import numpy as np

from . import blas
from .ops import OPS
from .schedule import topo_order

# The backend name under which a structured op registers how generated code runs it
# (``deflowering(op, CODEGEN_LOWERING)``; see the module docstring).
CODEGEN_LOWERING = "codegen"

# The backend name under which an op registers how generated code computes it on numpy scalars
# (``deflowering(op, SCALAR_LOWERING)``): the hook gets the operands' expressions and returns the
# expression of the result. It is used where the op runs as its bare ufunc (its ``ufunc`` trait,
# no attrs, operands of one dtype) and every operand is 0-d.
SCALAR_LOWERING = "python_scalar"


def direct_ufunc_ok(op, type_of):
    """Whether calling the bare ufunc gives what the op's kernel gives: only when no dtype
    promotion is involved (inputs of one dtype, which is also the output's, or a comparison)."""
    try:
        dts = {type_of(n).dtype for n in op.inputs}
        out = type_of(op.outputs[0]).dtype
    except KeyError:
        return False
    if OPS[op.type].ufunc == "power" and (out.startswith(("int", "uint")) or out == "bool"):
        return False  # numpy's power refuses negative integer exponents and gives int8 for bools; the kernel PyTorch's
    return len(dts) == 1 and (OPS[op.type].comparison or out in dts)


def scalar_expression(opdef, args):
    """The Python expression computing ``opdef`` on numpy scalars ``args`` (expressions), or
    None. An op's ``infix`` symbol is the Python operator on two numpy scalars that its ufunc
    computes (so results equal the kernel's); other ops may register a scalar lowering."""
    hook = opdef.lowering(SCALAR_LOWERING)
    if hook is not None:
        return hook(*args)
    if opdef.infix is not None and len(args) == 2:
        return f"{args[0]} {opdef.infix} {args[1]}"
    return None

# The backend name under which an op whose kernel returns a written copy of its input 0 (its
# ``writes_input`` trait: ``index_copy_dim``) registers how to write into input 0 itself instead
# (``hook(xp, x, *other inputs, **attrs) -> x``). Generated code calls it where input 0 is read
# by nothing after the op, in any enclosing block (``_Codegen.dead_input``), and, at run time,
# where the array owns its memory, is writable and nothing but that one local refers to it (no
# view of it, no other local, no caller: ``_in_place_step``); a loop's key/value cache written
# at one position per step is then written in place instead of copied whole every step.
IN_PLACE_LOWERING = "in_place"


def _one_local_refs():
    """``sys.getrefcount(x)`` inside a step called as generated code calls it, with ``x`` held by
    one local of the caller and nothing else."""
    seen = []

    def step(xp, x, *args):
        seen.append(sys.getrefcount(x))

    def caller():
        v = np.empty(1)
        step(np, v, 0)

    caller()
    return seen[0]


_ONE_LOCAL_REFS = _one_local_refs()


def _in_place_step(kernel, into, attrs):
    """The op's kernel, or its in-place form ``into`` where ``x`` is provably private."""

    def step(xp, x, *args):
        if (type(x) is np.ndarray and sys.getrefcount(x) <= _ONE_LOCAL_REFS and x.base is None
                and x.flags.writeable):
            return into(xp, x, *args, **attrs)
        return kernel(xp, x, *args, **attrs)

    return step


# Values of at most this many bytes (all dims known) are not ``del``-ed after their last use.
SMALL_BYTES = 256

# Arrays made from attrs alone (``full``, ``arange``) of at most this many bytes are made once,
# when the code is generated, and read from the globals (see ``_Codegen.creation_value``).
CREATION_BYTES = 1 << 16

_FILE_IDS = count()


def read_only(arr):
    """A read-only view of a numpy array the executor keeps across runs (program constants,
    literals): an output that is (a view of) one must not let a caller's in-place write change
    what the next run computes. Other arrays (cupy) are returned as they are."""
    if isinstance(arr, np.ndarray):
        arr = arr.view()
        arr.flags.writeable = False
    return arr


class CodegenUnsupported(Exception):
    """The program cannot be compiled into one function (the interpreter runs it instead)."""


class LineInfo:
    """What a generated line runs: the op and the locals holding its inputs (for errors)."""

    __slots__ = ("op", "input_locals")

    def __init__(self, op, input_locals):
        self.op, self.input_locals = op, input_locals


class CompiledProgram:
    """The generated function of a program: ``fn(*feeds) -> list of outputs``.

    Attributes:
        fn: the function; ``feeds`` are the program's inputs, params and constants in order.
        source: its Python source.
        filename: the pseudo file name its code objects carry (tracebacks show its lines).
        lines: ``{line number: LineInfo}`` mapping a failing line back to its op.
        rule_blocks: sub-blocks of structured ops run through their ``"run"`` rule (the
            interpreter runs those, so the executor prepares them).
    """

    def __init__(self, fn, source, filename, lines, rule_blocks=()):
        self.fn, self.source, self.filename, self.lines = fn, source, filename, lines
        self.rule_blocks = list(rule_blocks)

    def locate(self, tb):
        """``(LineInfo or None, frame locals)`` of the innermost generated frame in ``tb``."""
        found = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                found = tb
            tb = tb.tb_next
        if found is None:
            return None, {}
        return self.lines.get(found.tb_lineno), found.tb_frame.f_locals


def small_products(ops, type_of):
    """``(a shape, b shape, dtype)`` of every matrix product inside the loops among ``ops`` (a
    structured op whose layout repeats a block: ``while``, ``scan``) when there is one and all
    have sizes known to be at most ``blas.SMALL_PRODUCT`` multiply-adds, else None; ``type_of(name)``
    gives a var's TensorType (or None)."""
    found = []
    stack = [b for op in ops if _is_loop(op) for b in op.blocks.values()]
    while stack:
        block = stack.pop()
        for sub in block.ops:
            stack.extend(sub.blocks.values())
            opdef = OPS.get(sub.type)
            if opdef is None or opdef.ufunc != "matmul":
                continue
            ta, tb = (type_of(n) for n in sub.inputs[:2])
            if ta is None or tb is None or None in ta.shape or None in tb.shape or ta.dtype != tb.dtype:
                return None
            size = 1
            for d in ta.shape:
                size *= d
            if size * (tb.shape[-1] if len(tb.shape) >= 2 else 1) > blas.SMALL_PRODUCT:
                return None
            found.append((tuple(ta.shape[-2:]), tuple(tb.shape[-2:]), np.dtype(ta.dtype).str))
    return tuple(sorted(set(found))) or None


def _is_loop(op):
    opdef = OPS.get(op.type)
    return opdef is not None and opdef.structured and opdef.layout.repeats


def numpy_ufunc(name):
    """What generated numpy code calls for ufunc ``name``: numpy's, but matrix products go
    through ``blas.matmul`` (the kernel's own call: eager and converted products alike)."""
    return blas.matmul if name == "matmul" else getattr(np, name)


def _out_step(ufunc, shape, dtype):
    """A ufunc writing into a planned dead buffer (see passes/memory_plan.py); the plan is
    static, but the buffer is checked anyway: writing into a wrong one would corrupt data."""
    shape = tuple(shape)

    def run(buf, *args):
        if (type(buf) is not np.ndarray or buf.shape != shape or buf.dtype != dtype
                or not buf.flags.writeable or buf.base is not None):
            return np.asarray(ufunc(*args))
        return ufunc(*args, out=buf)

    return run


def _multi(xp):
    ndarray, asarray = xp.ndarray, xp.asarray

    def multi(results, n):
        """A multi-output kernel's results as ``n`` arrays (missing ones None, as the interpreter)."""
        out = [r if type(r) is ndarray else asarray(r) for r in results][:n]
        return out + [None] * (n - len(out))

    return multi


def _nbytes(t):
    if None in t.shape:
        return None
    n = 1
    for d in t.shape:
        n *= d
    return n * np.dtype(t.dtype).itemsize


class _Codegen:
    """Builds the source of one program (see the module docstring); ``build()`` compiles it."""

    def __init__(self, program, xp, ctx, main_order, memory_plan=None):
        self.program = program
        self.xp = xp
        self.numpy = xp is np
        self.main_order = main_order
        self.memory_plan = memory_plan
        self.loop_limit = getattr(ctx, "max_loop_iterations", None)
        self.types = {n: v.type for b in program.blocks for n, v in b.vars.items()}
        self.g = {"xp": xp, "_nd": xp.ndarray, "_asarray": xp.asarray, "_multi": _multi(xp), "_ctx": ctx}
        self.body = []      # (indent, text, LineInfo or None)
        self.entry = []     # lines run once at function entry (constants, scalar twins)
        self.local = {}     # var name -> local name
        self.twin = {}      # local -> its scalar twin (0-d constants and feeds)
        self.twin_src = {}  # feed local -> expression of its scalar twin (bound at entry on demand)
        self.blas_single = False  # emitting inside a loop that runs BLAS on one thread
        self.fixed = set()  # locals never deleted (constants read from the globals)
        self.rule_blocks = []
        self.dead_input = set()  # locals of the op being emitted that nothing reads after it
        self.sub_dead = frozenset()  # locals the blocks of the op being emitted may consider dead
        self.creations = {}  # var -> value of its creation op made here (see creation_value), or None
        self.hoisted = set()  # vars of creation ops read from the globals (see mark_creations)
        self._next = 0  # the number of the next fresh local
        self._k = count()

    # ------------------------------------------------------------ names
    def fresh(self):
        self._next += 1
        return f"v{self._next - 1}"

    @staticmethod
    def made_since(loc, first):
        """Whether local ``loc`` was made by ``fresh`` after it had handed out ``v<first>``."""
        return loc.startswith("v") and loc[1:].isdigit() and int(loc[1:]) >= first

    def glob(self, prefix, value):
        name = f"{prefix}{next(self._k)}"
        self.g[name] = value
        return name

    def is0d(self, name):
        t = self.types.get(name)
        return t is not None and len(t.shape) == 0

    def maybe0d(self, name):
        """Whether ``name`` may hold a numpy scalar (0-d, or of unknown type)."""
        t = self.types.get(name)
        return t is None or len(t.shape) == 0

    def small(self, name):
        t = self.types.get(name)
        nb = _nbytes(t) if t is not None else None
        return nb is not None and nb <= SMALL_BYTES

    def use(self, name, scalar=False):
        """The local holding var ``name`` (its scalar twin when ``scalar`` and one exists)."""
        loc = self.local[name]
        if not scalar:
            return loc
        tw = self.twin.get(loc)
        if tw is None:
            if loc not in self.twin_src:
                return loc
            tw = self.twin[loc] = loc + "s"
            self.entry.append(f"{tw} = {self.twin_src[loc]}")
        return tw

    def use_array(self, name):
        """``name`` as a kernel argument: 0-d values may be numpy scalars, kernels get arrays."""
        loc = self.local[name]
        return f"_asarray({loc})" if self.numpy and self.maybe0d(name) else loc

    def emit(self, indent, text, info=None):
        self.body.append((indent, text, info))

    def bind(self, names, locs):
        """Var ``names`` are held by locals ``locs`` from here on (a structured op's outputs)."""
        for o, loc in zip(names, locs):
            self.local[o] = loc

    # ------------------------------------------------------------ program
    def build(self):
        prog = self.program
        feeds = list(prog.inputs) + list(prog.params) + list(prog.constants)
        args = []
        for name in feeds:
            loc = self.local[name] = self.fresh()
            args.append(loc)
            if self.numpy and self.is0d(name):
                self.twin_src[loc] = f"{loc}[()]"
        owned = set(feeds) | {o for op in prog.block.ops for o in op.outputs}
        self.emit_ops(prog.block, self.main_order, 1, owned=owned, keep=set(prog.outputs), main=True)
        outs = []
        for name in prog.outputs:
            loc = self.local[name]
            # a 0-d output may be a numpy scalar here: the caller gets an array, as always
            outs.append(f"_asarray({loc})" if self.numpy and self.maybe0d(name) else loc)
        self.emit(1, f"return [{', '.join(outs)}]")
        lines = [f"def program({', '.join(args)}):"]
        lines += ["    " + t for t in self.entry]
        info = {}
        for indent, text, li in self.body:
            lines.append("    " * indent + text)
            if li is not None:
                info[len(lines)] = li
        source = "\n".join(lines) + "\n"
        filename = f"<d2s-codegen-{next(_FILE_IDS)}>"
        try:
            code = compile(source, filename, "exec")
        except (SyntaxError, RecursionError, MemoryError) as e:  # e.g. loops nested > 20 deep
            raise CodegenUnsupported(f"the generated function does not compile: {e}") from e
        ns = dict(self.g)
        exec(code, ns)  # noqa: S102 -- the source holds only generated names (module docstring)
        # tracebacks and debuggers show the generated lines, for as long as the program lives
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        compiled = CompiledProgram(ns["program"], source, filename, info, self.rule_blocks)
        weakref.finalize(compiled, linecache.cache.pop, filename, None)
        return compiled

    # ------------------------------------------------------------ blocks
    def emit_ops(self, block, order, indent, owned, keep, main=False, outer_dead=frozenset()):
        """Emit ``block.ops`` in ``order``. ``owned``: vars this level may free after their
        last use; ``keep``: vars read after the block (its outputs); ``outer_dead``: locals
        the enclosing blocks read no more once this block has run (see ``dead_input``)."""
        ops = [block.ops[i] for i in order]
        # an alias op's output shares its input's local (no line at all), so lifetimes are
        # those of the value it names: ``canon`` maps each alias output to that value
        canon = {}
        for op in ops:
            if self.is_alias(op):
                canon[op.outputs[0]] = canon.get(op.inputs[0], op.inputs[0])
        last = {}
        for pos, op in enumerate(ops):
            for name in op.inputs:  # sub-blocks read outer values only through op inputs
                last[canon.get(name, name)] = pos
        keep = {canon.get(n, n) for n in keep}
        self.mark_creations(ops, canon, keep)
        donors = self.plan_donors(ops, last, canon) if main and self.memory_plan else {}
        donated = set(donors.values())
        frees = [[] for _ in ops]
        for name in owned:
            if name in last and name not in keep and name not in donated and name not in canon:
                frees[last[name]].append(name)
        start = len(self.body)

        # values from outside the block may share a local (a block input bound twice to one
        # outer value): a local is read as long as any of its names is
        outside = {c: self.local[c] for c in last if c in self.local}
        loc_last, loc_kept = {}, {self.local[k] for k in keep if k in self.local}
        for c, loc in outside.items():
            loc_last[loc] = max(loc_last.get(loc, last[c]), last[c])

        def dead_after(name, pos):
            c = canon.get(name, name)
            if last.get(c) != pos or c in keep:
                return False
            if c in outside:  # a value from outside the block
                loc = outside[c]
                return loc_last[loc] == pos and loc not in loc_kept and (c in owned or loc in outer_dead)
            return c in owned

        saved = self.dead_input, self.sub_dead
        for pos, op in enumerate(ops):
            # what op ``pos`` (and, for a cond, its branches) may write in place: its inputs
            # nothing reads after it; a loop's body runs again, so it gets none from here
            dead = {self.local[n] for n in op.inputs if n in self.local and dead_after(n, pos)}
            self.dead_input = dead
            opdef = OPS.get(op.type)
            self.sub_dead = frozenset() if opdef is None or opdef.layout is None or opdef.layout.repeats \
                else frozenset(dead)
            self.emit_op(op, indent, donors.get(op.outputs[0]) if donors and len(op.outputs) == 1 else None)
            self.dead_input, self.sub_dead = saved
            dead = list(frees[pos])
            for o in op.outputs:
                if o not in last and o not in keep and o not in donated and o not in canon:
                    dead.append(o)  # never read: dead right after definition
            donor = donors.get(op.outputs[0]) if donors and len(op.outputs) == 1 else None
            if donor is not None:
                dead.append(donor)
            dels = [self.local[n] for n in dead
                    if n in self.local and self.local[n] not in self.fixed and not self.small(n)]
            if dels:
                self.emit(indent, f"del {', '.join(dict.fromkeys(dels))}")
        return len(self.body) > start

    def plan_donors(self, ops, last, canon):
        """``{receiver var: donor var}`` of the memory plan that is safe to honour here (donors
        seen through aliases: ``canon``, see ``emit_ops``)."""
        reuse = self.memory_plan.get("reuse", {})
        defined = {o for op in ops if op.type != "constant" and not self.is_alias(op) and self.creation_value(op) is None
                   for o in op.outputs}
        keep = {canon.get(n, n) for n in self.program.outputs}
        pos_of = {o: p for p, op in enumerate(ops) for o in op.outputs}
        donors, used = {}, set()
        for pos, op in enumerate(ops):
            opdef = OPS.get(op.type)
            if len(op.outputs) != 1 or opdef is None or not opdef.out_ok:
                continue
            donor = reuse.get(op.outputs[0])
            donor = canon.get(donor, donor) if isinstance(donor, str) else donor
            if (not isinstance(donor, str) or donor not in defined or donor in keep or donor in used
                    or last.get(donor, pos_of.get(donor, pos)) > pos):
                continue
            t = self.types.get(op.outputs[0])
            if t is None or None in t.shape or not t.shape:  # 0-d values may be numpy scalars
                continue
            used.add(donor)
            donors[op.outputs[0]] = donor
        return donors

    def emit_sub(self, block, in_locals, out_locals, indent, owned_inputs=()):
        """Inline sub-block ``block`` with its inputs bound to ``in_locals`` (aliases), then
        assign its outputs to ``out_locals`` (``None``: leave them where they are). Returns the
        locals holding its outputs. ``owned_inputs``: inputs it may free."""
        for name, loc in zip(block.inputs, in_locals):
            self.local[name] = loc
        order, _, _ = topo_order(block)
        first = self._next  # locals numbered from here on are made in this block
        defined = {o for op in block.ops for o in op.outputs}
        owned = defined | set(owned_inputs)
        wrote = self.emit_ops(block, order, indent, owned, keep=set(block.outputs), outer_dead=self.sub_dead)
        missing = [n for n in block.outputs if n not in self.local]
        if missing:
            raise ValueError(f"block output {missing[0]!r} is neither an input of the block nor defined in it")
        srcs = [self.local[n] for n in block.outputs]
        pairs = [(d, s) for d, s in zip(out_locals or (), srcs) if d != s]
        if pairs:
            self.emit(indent, f"{', '.join(d for d, _ in pairs)} = {', '.join(s for _, s in pairs)}")
            # the block's own values, now held by the output locals, drop their second reference
            # (an array held twice is never written in place: see _in_place_step)
            mine = {self.local[n] for n in block.outputs if n in defined and not self.small(n)}
            dels = [s for _, s in pairs if s in mine and self.made_since(s, first) and s not in self.fixed
                    and s not in out_locals]
            if dels:
                self.emit(indent, f"del {', '.join(dict.fromkeys(dels))}")
        elif not wrote:
            self.emit(indent, "pass")
        return srcs

    # ------------------------------------------------------------ ops
    @staticmethod
    def is_alias(op):
        """Whether ``op``'s kernel returns its one input unchanged (``stop_gradient``)."""
        opdef = OPS.get(op.type)
        return (opdef is not None and opdef.alias and not opdef.structured and not op.blocks and len(op.inputs) == 1
                and len(op.outputs) == 1 and not op.attrs)

    def creation_value(self, op):
        """The value of an op that makes an array from its attrs alone, deterministically
        (``full``, ``arange``: no inputs, no draws, no effects), computed here once when it is
        small, else None. Generated code reads it from the globals like a literal, so a loop
        body does not rebuild it every iteration."""
        if not self.numpy or op.inputs or op.blocks or len(op.outputs) != 1 or op.type == "constant":
            return None
        if op.outputs[0] in self.creations:
            return self.creations[op.outputs[0]]
        opdef = OPS.get(op.type)
        t = self.types.get(op.outputs[0])
        value = None
        if (opdef is not None and not opdef.structured and not opdef.random and not opdef.effect
                and not opdef.unique and opdef.n_out == 1 and opdef.kernel is not None and t is not None
                and None not in t.shape and (_nbytes(t) or 0) <= CREATION_BYTES):
            try:
                r = opdef.kernel(np, **op.attrs)
            except Exception:  # left to the run, which reports errors with context
                r = None
            if (isinstance(r, (np.ndarray, np.generic)) and r.dtype == np.dtype(t.dtype)
                    and r.shape == tuple(t.shape)):
                value = read_only(np.array(r))
        self.creations[op.outputs[0]] = value
        return value

    def mark_creations(self, ops, canon, keep):
        """Adds to ``self.hoisted`` the creation ops' outputs (see ``creation_value``) that may be
        read from the globals: read only by ops whose results are new arrays (ufuncs, ``fresh``
        kernels), never an output of the block, so no view of the read-only value escapes."""
        readers = {}
        for op in ops:
            if not self.is_alias(op):
                for n in op.inputs:
                    readers.setdefault(canon.get(n, n), []).append(op)
        for op in ops:
            out = op.outputs[0] if len(op.outputs) == 1 else None
            if out is None or out in keep or self.creation_value(op) is None:
                continue
            if all(not r.blocks and r.type in OPS and not OPS[r.type].structured
                   and (OPS[r.type].ufunc is not None or OPS[r.type].fresh) for r in readers.get(out, ())):
                self.hoisted.add(out)

    def emit_op(self, op, indent, donor=None):
        info = LineInfo(op, [self.local[n] for n in op.inputs])
        if op.type == "constant" and not op.inputs and not op.blocks and len(op.outputs) == 1:
            return self.emit_constant(op)
        value = self.creation_value(op) if op.outputs and op.outputs[0] in self.hoisted else None
        if value is not None:
            loc = self.local[op.outputs[0]] = self.glob("c", value)
            self.fixed.add(loc)
            if value.ndim == 0:
                self.twin[loc] = self.glob("c", value[()])
            return None
        opdef = OPS.get(op.type)
        if opdef is None or opdef.structured or op.blocks:
            return self.emit_structured(op, opdef, indent, info)
        outs = [self.fresh() for _ in op.outputs]
        for o, loc in zip(op.outputs, outs):
            self.local[o] = loc
        if self.is_alias(op):
            # the kernel would return its input (stop_gradient): its local is the input's
            self.local[op.outputs[0]] = self.local[op.inputs[0]]
            return None
        if opdef.n_out != 1 or len(outs) != 1:
            call = self.kernel_call(op, opdef)
            return self.emit(indent, f"{', '.join(outs)}, = _multi({call}, {len(outs)})", info)
        out = outs[0]
        ufunc = opdef.ufunc
        if ufunc is not None and not op.attrs and len(op.inputs) in (1, 2) and hasattr(self.xp, ufunc) \
                and direct_ufunc_ok(op, self.types.__getitem__):
            if donor is not None:
                fn = self.glob("o", _out_step(numpy_ufunc(ufunc), self.types[op.outputs[0]].shape,
                                              np.dtype(self.types[op.outputs[0]].dtype)))
                args = ", ".join(self.local[n] for n in op.inputs)
                return self.emit(indent, f"{out} = {fn}({self.local[donor]}, {args})", info)
            if self.numpy and all(self.is0d(n) for n in op.inputs):
                expr = scalar_expression(opdef, [self.use(n, scalar=True) for n in op.inputs])
                if expr is not None:
                    return self.emit(indent, f"{out} = {expr}", info)
            fn = self.g_ufunc(ufunc)
            args = ", ".join(self.local[n] for n in op.inputs)
            return self.emit(indent, f"{out} = {fn}({args})", info)
        into = opdef.lowering(IN_PLACE_LOWERING) if self.numpy and opdef.writes_input else None
        if (into is not None and op.inputs and self.local[op.inputs[0]] in self.dead_input
                and not self.maybe0d(op.inputs[0]) and self.local[op.inputs[0]] not in self.fixed):
            step = self.glob("o", _in_place_step(opdef.kernel, into, dict(op.attrs)))
            args = ", ".join(["xp", self.local[op.inputs[0]]] + [self.use_array(n) for n in op.inputs[1:]])
            self.emit(indent, f"{out} = {step}({args})", info)
            return self.emit(indent, f"if type({out}) is not _nd: {out} = _asarray({out})", info)
        if self.numpy and op.type == "where" and not op.attrs and self.same_dtype_where(op):
            # (the kernel's own call when both values have the output's dtype: no promotion)
            args = ", ".join(self.local[n] for n in op.inputs)
            return self.emit(indent, f"{out} = {self.g_ufunc('where')}({args})", info)
        view = self.view_method(op)
        if view is not None:
            return self.emit(indent, f"{out} = {self.local[op.inputs[0]]}.{view}", info)
        method = self.method_reduction(op)
        if method is not None:
            return self.emit(indent, f"{out} = {self.local[op.inputs[0]]}.{method}()", info)
        self.emit(indent, f"{out} = {self.kernel_call(op, opdef)}", info)
        # kernels may return non-arrays (Python or numpy scalars): wrap, as the interpreter does
        self.emit(indent, f"if type({out}) is not _nd: {out} = _asarray({out})", info)

    def emit_structured(self, op, opdef, indent, info):
        """A structured op through its ``"codegen"`` lowering (a loop of small products with
        BLAS on one thread where that keeps their bits, see blas.py, restored after it), else
        through its ``"run"`` rule."""
        hook = opdef.lowering(CODEGEN_LOWERING) if opdef is not None and opdef.structured else None
        if hook is None or not opdef.layout.well_formed(op):
            return self.emit_rule(op, opdef, indent, info)
        products = self.small_products(op) if opdef.layout.repeats else None
        if not products:
            return hook(self, op, indent, info)
        self.blas_single = True
        flag = self.fresh()
        self.emit(indent, f"{flag} = {self.g_blas('enter_loop')}({self.glob('a', products)})", info)
        self.emit(indent, "try:", info)
        try:
            hook(self, op, indent + 1, info)
        finally:
            self.blas_single = False
        self.emit(indent, "finally:", info)
        self.emit(indent + 1, f"if {flag}: {self.g_blas('leave')}()", info)

    def g_blas(self, name):
        key = "_blas_" + name  # a fixed prefix plus one of two function names of blas.py
        if key not in self.g:
            self.g[key] = getattr(blas, name)
        return key

    def small_products(self, op):
        """The ``(a shape, b shape, dtype)`` of every product of loop ``op`` (numpy) when all are
        small (``small_products``) and it is not inside such a loop already, else None."""
        if not self.numpy or self.blas_single or not blas.enabled:
            return None
        return small_products([op], self.types.get)

    def g_ufunc(self, name):
        key = "u_" + name  # a fixed prefix plus a ufunc name from this runtime's op registry
        if key not in self.g:
            self.g[key] = numpy_ufunc(name) if self.numpy else getattr(self.xp, name)
        return key

    def kernel_call(self, op, opdef):
        k = self.glob("k", opdef.kernel)
        args = ", ".join(["xp"] + [self.use_array(n) for n in op.inputs])
        if op.attrs:
            args += f", **{self.glob('a', dict(op.attrs))}"
        return f"{k}({args})"

    def same_dtype_where(self, op):
        """Whether ``where(c, a, b)`` has a bool condition and values of the output's dtype."""
        ts = [self.types.get(n) for n in list(op.inputs) + list(op.outputs)]
        if len(op.inputs) != 3 or len(op.outputs) != 1 or None in ts:
            return False
        return ts[0].dtype == "bool" and ts[1].dtype == ts[2].dtype == ts[3].dtype

    def view_method(self, op):
        """``reshape(shape)`` / ``transpose(perm)`` as the array's own method call (what
        np.reshape and np.transpose call), for a numpy array input that cannot be a scalar."""
        if not self.numpy or len(op.inputs) != 1 or self.maybe0d(op.inputs[0]):
            return None
        try:
            if op.type == "reshape" and set(op.attrs) == {"shape"}:
                return f"reshape({self.glob('a', tuple(int(d) for d in op.attrs['shape']))})"
            if op.type == "transpose" and set(op.attrs) <= {"perm"}:
                perm = op.attrs.get("perm")
                return "transpose()" if perm is None else f"transpose({self.glob('a', tuple(int(p) for p in perm))})"
        except (TypeError, ValueError):  # malformed attrs: the kernel's call reports them
            pass
        return None

    def method_reduction(self, op):
        spec = OPS[op.type].method
        if spec is None or len(op.inputs) != 1 or set(op.attrs) - {"axes", "keepdims"}:
            return None
        if op.attrs.get("axes") is not None or op.attrs.get("keepdims", False) is not False:
            return None
        t = self.types.get(op.inputs[0])
        if t is None or len(t.shape) == 0 or np.dtype(t.dtype).kind not in spec[1]:
            return None
        return spec[0]

    def emit_constant(self, op):
        # literals are made once, here, and read from the function's globals (kernels never
        # write into their inputs, and the memory plan never donates a literal)
        value = read_only(self.xp.asarray(OPS["constant"].kernel(self.xp, **op.attrs)))
        loc = self.local[op.outputs[0]] = self.glob("c", value)
        self.fixed.add(loc)
        if self.numpy and value.ndim == 0:
            self.twin[loc] = self.glob("c", value[()])

    def emit_rule(self, op, opdef, indent, info):
        rule = opdef.rule("run") if opdef is not None and opdef.structured else None
        if rule is None:
            raise CodegenUnsupported(f"op {op.type!r} has neither a kernel nor a run rule")
        outs = [self.fresh() for _ in op.outputs]
        for o, loc in zip(op.outputs, outs):
            self.local[o] = loc
        self.rule_blocks += op.blocks.values()
        r, o = self.glob("r", rule), self.glob("o", op)
        args = ", ".join(self.use_array(n) for n in op.inputs)
        call = f"{r}(_ctx, {o}, [{args}])"
        if outs:
            self.emit(indent, f"{', '.join(outs)}, = _multi({call}, {len(outs)})", info)
        else:
            self.emit(indent, call, info)


def compile_program(program, xp, ctx, main_order, memory_plan=None):
    """Compile ``program`` into a :class:`CompiledProgram` (raises CodegenUnsupported).

    Args:
        program: the Program; xp: the array namespace; ctx: the ExecContext fallback rules get
            (their sub-blocks run through its ``run_block``).
        main_order: the global block's op order (feeds: inputs, params, constants).
        memory_plan: the ``memory_plan`` annotation to honour (numpy only), or None.
    """
    try:
        return _Codegen(program, xp, ctx, main_order, memory_plan).build()
    except RecursionError as e:  # sub-blocks nested too deep for the emitter itself
        raise CodegenUnsupported(f"the program nests too deep to compile: {e}") from e
