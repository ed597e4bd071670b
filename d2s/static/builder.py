"""The program builder: while active, op calls append ops to the current Block.

``dispatch.apply`` hands every op to :meth:`ProgramBuilder.append`, which turns the op's
inputs into vars visible in the current block (Python scalars and concrete arrays become
constants, parameters become program params, vars of enclosing blocks become explicit
captures of the sub-block), infers output types with the op's shape rule, and returns
symbolic tensors.
"""
import contextlib
import functools

import numpy as np

from d2s_runtime.device import to_host
from d2s_runtime.ir import Block, Op, Program
from d2s_runtime.dtypes import DTYPES, float_of, operand_result_type, scalar_result, types_result, convert_ints
from d2s_runtime.ops import ShapeError, TensorType

from .. import pytree, views
from .._state import STATE
from ..autograd.anomaly import user_site
from ..ops import logical_and, logical_or, where
from ..tensor import Tensor
from ..user_errors import at_user_line, where_text
from .. import layouts
from .input_spec import InputSpec
from .tensor_array import NumberList, TensorArray, TupleList

SMALL_CONSTANT = 16  # elements; larger captured arrays live in program.constants
# program.annotations key: names of the `where` ops that carry an in-place update to the
# objects that may be the updated one (``after_inplace``), which reach analysis treats as selects
ALIAS_SELECTS = "alias_selects"


_INDEXING = ("getitem", "setitem")


class IndexOutOfRange(ShapeError, IndexError):
    """A static index out of range, found while a program is built: the ShapeError of the op's
    shape rule, and the IndexError eager code raises there."""


class NameGen:
    """Short unique names a, b, ..., z, ba, bb, ... as in a jaxpr."""

    def __init__(self, reserved=()):
        self.n = 0
        self.reserved = set(reserved)  # names taken by the caller (never generated)

    def __call__(self):
        while True:
            n, s = self.n, ""
            self.n += 1
            while True:
                s = chr(ord("a") + n % 26) + s
                n //= 26
                if n == 0:
                    break
            if s not in self.reserved:
                return s


def is_param(t):
    return t.requires_grad or getattr(t, "_d2s_parameter", False)


class ProgramBuilder:
    """Builds one Program; use as a context manager (``with ProgramBuilder() as b:``)."""

    def __init__(self, device="cpu"):
        self.program = Program()
        self.block = self.program.block
        self.device = device
        self.new_name = NameGen()
        self.defined_in = {}       # var name -> Block defining it
        self.captures = {}         # Block -> {outer name: inner name}
        self.capture_tensors = {}  # Block -> {outer name: the Tensor it was captured from}
        self.dim_sources = {}      # var name of a `dim` op's output -> (input var name, axis)
        # in-place updates (``a += v``, ``a[i] = v``) of tensor objects made outside the sub-block
        # being built: one {id: (tensor, its state before)} per open sub-block (see note_inplace)
        self._inplace_logs = []
        self.inplace_writes = {}   # Block -> [(tensor, its value at the end of the block)]
        self.block_leaves = {}     # Block -> the tensors a traced function returned (control_flow)
        # id(tensor) -> (tensor, [(other tensor, flag, block)]): objects that eager code holds as
        # one object exactly when the bool tensor ``flag`` holds (a name rebound in one branch of
        # a tensor `if` only), or on some runs only (flag None); see link_maybe_alias
        self.maybe_aliases = {}
        # id(tensor) -> (tensor, its concrete state): concrete tensors (a module buffer, a tensor
        # made while building) that an in-place update made name a var (see symbolize)
        self.symbolized = {}
        # False while a replay of IR blocks builds ops (d2s.static.replay): IR has no in-place
        # updates, so the objects a replayed op returns never need maybe-alias links
        self.track_aliases = True
        # id(tensor) -> (tensor, TensorArray, the array's data right after it, block): tensor objects
        # appended to a tensor list, which in eager code holds the object (see note_appended)
        self.appended = {}
        # id -> tensor: plain tensors that are module state (``self.running = ...``), read as
        # params rather than folded into constants, since a forward may replace them
        self.state_tensors = {}
        self.param_tensors = {}    # param var name -> the concrete Parameter it reads
        self._param_vars = {}      # id(concrete tensor) -> symbolic tensor in the global block
        self._const_vars = {}      # id(array), or a small value's dtype, shape and bytes -> (value, var name)
        # forward_only: building a forward program to differentiate later (to_static): run with
        # grad mode on but record no autograd nodes, and cut the ops the user's code runs under
        # ``no_grad()`` from the gradient with ``stop_gradient`` (static backward replays them)
        self.forward_only = False
        # grad_inputs: in a forward-only build, params and the inputs marked requires_grad still
        # record autograd nodes, because the function differentiates them itself (d2s.grad(y, x))
        self.grad_inputs = False
        # var name -> the layout eager code gives its value where that is not row-major (see
        # d2s/layouts.py): whether a reshape of it shares its elements
        self.layouts = {}
        # never_differentiated: a forward-only build for a call made under no_grad() or
        # inference_mode (its program is never differentiated, so no stop_gradient marks the
        # ops that run without grad: all of them do)
        self.never_differentiated = False
        self._prev = None
        # var name of each op's first output -> (file, line) of the user's call that made the
        # op, for detect_anomaly and check_numerics to name lines inside a program
        self.program.op_locations = {}

    # ------------------------------------------------------------ context
    def __enter__(self):
        self._prev = STATE.builder
        STATE.builder = self
        STATE.refresh()
        return self

    def __exit__(self, *exc):
        self.unsymbolize()
        STATE.builder = self._prev
        STATE.refresh()
        return False

    # ------------------------------------------------------------ vars
    def _new_var(self, type, block=None):
        block = block or self.block
        name = self.new_name()
        v = block.add_var(name, type)
        self.defined_in[name] = block
        return v

    def symbolic(self, var, requires_grad=False):
        t = Tensor._make(None, var)
        t.requires_grad = requires_grad
        return t

    def reads_as_param(self, t):
        """Whether concrete tensor ``t`` becomes a program param (read at every call)."""
        return is_param(t) or self.state_tensors.get(id(t)) is t

    def add_input(self, shape, dtype, name=None, requires_grad=False, layout=None):
        """A program input fed by the caller; returns its symbolic tensor. ``layout``: the
        caller's array's layout where it is not row-major (see d2s/layouts.py)."""
        v = self._new_var(TensorType(shape, dtype), self.program.block)
        if layout is not None:
            self.layouts[v.name] = layout
        self.program.inputs.append(v.name)
        self.program.block.inputs.append(v.name)
        return self.symbolic(v, requires_grad)

    def param(self, t):
        """The symbolic tensor reading concrete parameter ``t`` (one program param per tensor)."""
        s = self._param_vars.get(id(t))
        if s is None:
            v = self._new_var(TensorType(t.shape, str(t.dtype)), self.program.block)
            self.program.params.append(v.name)
            self.program.block.inputs.append(v.name)
            self.param_tensors[v.name] = t
            s = self._param_vars[id(t)] = self.symbolic(v, t.requires_grad and self._params_record())
        return s

    def _params_record(self):
        return not self.forward_only or self.grad_inputs

    def constant(self, value, dtype=None):
        """A var holding ``value`` (Python scalar or array) in the global block."""
        arr = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
        if arr.dtype.name not in DTYPES:
            arr = arr.astype(np.int64 if arr.dtype.kind in "iu" else np.float32)
        if arr.size <= SMALL_CONSTANT:
            # one var per small value: every trace of a branch or loop body (retries, probes,
            # traces thrown away) would otherwise leave constant ops of its own here
            key = ("small", arr.dtype.name, arr.shape, arr.tobytes())
        else:
            key = id(value)
        if key in self._const_vars:
            return self._const_vars[key][1]
        gb = self.program.block
        v = self._new_var(TensorType(arr.shape, arr.dtype.name), gb)
        if arr.size <= SMALL_CONSTANT:
            op = Op("constant", [], [v.name], {"value": arr.tolist(), "dtype": arr.dtype.name, "shape": list(arr.shape)})
            gb.ops.insert(self._const_insert_point(), op)
        else:
            self.program.constants[v.name] = arr
            gb.inputs.append(v.name)
        self._const_vars[key] = (value, v.name)
        return v.name

    def _const_insert_point(self):
        # constants go before any op of the global block that is still open, so they are
        # defined before every use, including uses inside sub-blocks being built
        return len(self.program.block.ops)

    def resolve(self, name, block=None, tensor=None):
        """The name under which var ``name`` is visible in ``block``, capturing it if it is
        defined in an enclosing block (a sub-block reads outer values only as its inputs).
        ``tensor`` (the symbolic Tensor naming ``name``) is remembered with the capture, so
        control-flow ops can record autograd edges to captured values."""
        block = block or self.block
        home = self.defined_in.get(name)
        if home is block or home is None:
            return name
        caps = self.captures.setdefault(block, {})
        if name in caps:
            return caps[name]
        if block.parent is None:
            raise KeyError(f"var {name} is not defined in this program (a tensor from another program?)")
        self.resolve(name, block.parent, tensor)
        v = self._new_var(self.defined_in_var(name).type, block)
        block.inputs.append(v.name)
        caps[name] = v.name
        if tensor is None:
            tensor = self.symbolic(self.defined_in_var(name))
        self.capture_tensors.setdefault(block, {})[name] = tensor
        return v.name

    def defined_in_var(self, name):
        return self.defined_in[name].vars[name]

    def var_of(self, x, scalar_dtype=None):
        """Name of a var visible in the current block that holds op input ``x``."""
        if isinstance(x, Tensor):
            vi = x._view
            if vi is not None and vi.version != vi.root._version:
                views.fresh(x)  # its root was updated in place since (d2s/views.py)
            if x.is_symbolic:
                return self.resolve(x._var.name, tensor=x)
            if self.reads_as_param(x):
                p = self.param(x)
                return self.resolve(p._var.name, tensor=p)
            return self.resolve(self.constant(to_host(x.array)))
        if isinstance(x, (bool, int, float, np.generic)) and not isinstance(x, np.ndarray):
            return self.resolve(self.constant(x, scalar_dtype))
        return self.resolve(self.constant(np.asarray(x)))

    # ------------------------------------------------------------ ops
    def append(self, opdef, inputs, attrs):
        """Append ``opdef`` on ``inputs``; returns (output tensors, inputs as symbolic tensors)."""
        sdt = operands_scalar_dtype(inputs)
        if opdef.elementwise and not opdef.float_inputs and sdt is not None and sdt != "bool" and \
                any(str(getattr(x, "dtype", "bool")) != "bool" for x in inputs):
            # a Python int meeting an integer tensor: converted to its dtype as the eager kernel
            # (and PyTorch) does (with only bool tensors, int64 holds it or it is refused)
            inputs = convert_ints(inputs, sdt, opdef.wraps_ints, pow_=opdef.name == "pow")
        names = [self.var_of(x, sdt) for x in inputs]
        types = [self.block.lookup(n).type for n in names]
        if opdef.refuses_bool:  # on the operands as given (a Python bool's constant took sdt)
            try:
                opdef.infer(*[TensorType((), "bool") if type(x) is bool else t for x, t in zip(inputs, types)],
                            **attrs)
            except ShapeError as e:
                raise ShapeError(f"{e}{where_text()}") from None
        if opdef.promotes != () or opdef.float_inputs:
            self._promote(opdef, names, types)
        try:
            out_types = opdef.infer(*types, **attrs)
        except ShapeError as e:
            # an index out of range is eager's IndexError (its kernel raises one), which a tensor
            # branch or loop body also defers to the runs that reach it
            cls = IndexOutOfRange if "out of range" in str(e) and opdef.name in _INDEXING else ShapeError
            raise cls(f"{e}{where_text()}") from None
        if isinstance(out_types, TensorType):
            out_types = (out_types,)
        outs = [self._new_var(t) for t in out_types]
        self.block.ops.append(Op(opdef.name, names, [v.name for v in outs], plain_attrs(attrs)))
        if outs:
            self.program.op_locations[outs[0].name] = user_site(2)
        lays = layouts.result_layouts(opdef, inputs, attrs, out_types, views.layout_of)
        if self.forward_only and not STATE.grad_enabled and opdef.name != "stop_gradient" \
                and not self.never_differentiated:
            outs = [self._stop_gradient(v) for v in outs]
        if lays is not None:
            for v, lay in zip(outs, lays):
                if not layouts.is_row_major(lay):
                    self.layouts[v.name] = lay
        if opdef.name == "dim":
            self.dim_sources[outs[0].name] = (names[0], attrs.get("axis"))
        sym_inputs = tuple(self._as_symbolic(x, n) for x, n in zip(inputs, names))
        return tuple(self.symbolic(v) for v in outs), sym_inputs

    def _stop_gradient(self, v):
        if not v.type.dtype.startswith("float"):
            return v
        out = self._new_var(v.type)
        self.block.ops.append(Op("stop_gradient", [v.name], [out.name], {}))
        return out

    def _promote(self, opdef, names, types):
        """Insert the casts that bring ``opdef``'s inputs to their common dtype (in place):
        those its ``promotes`` trait names, else (a ``float_inputs`` op) input 0."""
        spec = opdef.promotes
        positions = range(len(names)) if spec is None else spec if spec else (0,)
        positions = [i for i in positions if i < len(names)]
        if not positions:
            return
        target = types_result(*(types[i] for i in positions))
        if opdef.float_inputs:
            target = float_of(target)
        for i in positions:
            if types[i].dtype != target:
                t = TensorType(types[i].shape, target)
                v = self._new_var(t)
                self.block.ops.append(Op("cast", [names[i]], [v.name], {"dtype": target}))
                names[i], types[i] = v.name, t

    def _as_symbolic(self, x, name):
        if isinstance(x, Tensor) and x.is_symbolic:
            return x
        if isinstance(x, Tensor) and self.reads_as_param(x):
            return self._param_vars[id(x)] if self.block is self.program.block else \
                self.symbolic(self.block.lookup(name), x.requires_grad and self._params_record())
        return self.symbolic(self.block.lookup(name))

    def append_op(self, op):
        """Append a fully formed Op (used by control-flow builders)."""
        self.block.ops.append(op)
        return op

    def note_inplace(self, t):
        """Called just before symbolic tensor object ``t`` is re-pointed to a new var by an
        in-place update. An object made outside the sub-block being built (its var lives in an
        enclosing block) takes the update only while the sub-block is built: it is re-pointed
        back when the block ends, so code outside never sees a var of the block, and the
        control-flow op built from the block carries the object's final value as an extra
        output and re-points the object to it (``inplace_writes``): every name or container
        holding the object then sees the update, as in eager code."""
        if not self._inplace_logs or not t.is_symbolic:
            return
        log = self._inplace_logs[-1]
        if id(t) in log or self.defined_in.get(t._var.name) is self.block:
            return
        log[id(t)] = (t, _tensor_state(t))

    def symbolize(self, t):
        """Concrete tensor ``t`` (a module buffer, a tensor made while building) is about to be
        updated in place (through a view: ``self.buf[0] = v``): from now on the object names a
        var of the global block holding its value (a param for module state, read at every call;
        a constant otherwise), so the update is carried out of branches and loops like any
        other (note_inplace). :meth:`unsymbolize` gives the object its array back when the build
        ends (to_static first writes a module buffer's final value back after each call)."""
        if id(t) in self.symbolized or t.is_symbolic:
            return
        if self.reads_as_param(t):
            var = self.param(t)._var
        else:
            var = self.program.block.lookup(self.constant(to_host(t.array)))
        self.symbolized[id(t)] = (t, _tensor_state(t))
        t.array, t._var = None, var

    def unsymbolize(self):
        """Give the tensors made symbolic by :meth:`symbolize` their arrays back; returns
        ``[(tensor, its final value: a symbolic tensor)]``."""
        out = []
        for t, state in self.symbolized.values():
            final = Tensor._make(None, t._var)
            final.requires_grad, final.grad_fn, final._out_idx = t.requires_grad, t.grad_fn, t._out_idx
            out.append((t, final))
            _set_tensor_state(t, state)
        self.symbolized.clear()
        return out

    def undo_inplace(self):
        """Undo the in-place updates of outside tensors made so far in the sub-block being built
        (a branch that failed half-way runs another function in its place)."""
        if self._inplace_logs:
            for t, before in self._inplace_logs[-1].values():
                _set_tensor_state(t, before)
            self._inplace_logs[-1].clear()

    def link_maybe_alias(self, a, b, flag):
        """Tensor objects ``a`` and ``b`` are one object in eager code when ``flag`` (a bool
        scalar tensor of the current block) holds, and two otherwise; ``flag`` None: on some
        runs only, which the program does not know. An in-place update of one later reaches
        the other where the flag holds (``after_inplace``)."""
        if not self.track_aliases:
            return
        for x, y in ((a, b), (b, a)):
            self.maybe_aliases.setdefault(id(x), (x, []))[1].append((y, flag, self.block))

    def note_appended(self, t, array):
        """Tensor object ``t`` was just appended to tensor list ``array``: in eager code the list
        holds the object, so an in-place update of ``t`` while it is still the list's last
        element (in this block) writes the new value there too; elsewhere it is refused."""
        self.appended[id(t)] = (t, array, array.data, self.block)

    def _update_appended(self, t, through_alias=False):
        t_, array, data, blk = self.appended[id(t)]
        # (appended in a trace that was thrown away; or, for an object updated through a link
        # to another one, in a block that is done: a `where` on a flag that is false when the
        # loop rebound the name, as a peeled first iteration leaves it)
        if t_ is not t or not (self._visible(blk) or (self._in_program(blk) and not through_alias)):
            return
        if array.data is not data or blk is not self.block:
            raise at_user_line(
                "in-place update of a tensor that a list holds (it was appended to a list grown in a tensor loop "
                "or branch, which keeps the value it had then): eager code would change the list's element too. "
                "Append a copy (xs.append(t.clone())) or update the tensor out of place (t = t + v)")
        array[-1] = t
        self.appended[id(t)] = (t, array, array.data, blk)

    def after_inplace(self, t, carried_out=False):
        """Called just after tensor object ``t`` took an in-place update: the objects it may be
        (``link_maybe_alias``) take the new value where they are ``t`` in eager code. An object
        reached by several chains of links is ``t`` where any of the chains nearest to ``t`` holds
        (each link is exact: one chain of it holding says the objects are one). ``carried_out``:
        the update is one a control-flow op carries out of its block (made and seen there)."""
        if id(t) in self.appended and not carried_out:
            self._update_appended(t)
        if not self.maybe_aliases:
            return
        cond, order, layer = {id(t): True}, [], [t]
        while layer:
            nxt = {}
            for src in layer:
                for other, flag, blk in self.maybe_aliases.get(id(src), (None, ()))[1]:
                    if id(other) in cond or not self._visible(blk):
                        continue
                    if flag is None:
                        raise at_user_line(
                            "in-place update of a tensor that another name holds on some runs of a tensor loop "
                            "only (an alias taken inside the loop); the program cannot tell which: copy it where "
                            "the alias is taken (a = b.clone()) or update it out of place (a = a + x)")
                    c = cond[id(src)]
                    term = flag if c is True else logical_and(flag, c)
                    prev = nxt.get(id(other))
                    nxt[id(other)] = (other, term if prev is None else logical_or(prev[1], term))
            for k, (other, c) in nxt.items():
                cond[k] = c
                order.append((other, c))
            layer = [other for other, _ in nxt.values()]
        for other, c in order:
            new = where(c, t, other)
            # a select, not a user's `where`: reachability (static/reach.py) lets only the
            # side the flag picks reach it, as eagerly only that object is in the graph
            self.program.annotations.setdefault(ALIAS_SELECTS, set()).add(new._var.name)
            if new.dtype != other.dtype:
                new = new.cast(other.dtype)
            self.note_inplace(other)
            other.array, other._var = None, new._var
            other.requires_grad, other.grad_fn, other._out_idx = new.requires_grad, new.grad_fn, new._out_idx
            other._version += 1
            if id(other) in self.appended and not carried_out:
                self._update_appended(other, through_alias=True)

    def _in_program(self, blk):
        """Whether block ``blk`` (closed) belongs to an op of a block the current one sees, not to
        a trace thrown away."""
        while blk is not None and not self._visible(blk):
            parent = blk.parent
            if parent is None or not any(blk in op.blocks.values() for op in parent.ops if op.blocks):
                return False
            blk = parent
        return blk is not None

    def _visible(self, blk):
        b = self.block
        while b is not None:
            if b is blk:
                return True
            b = b.parent
        return False

    @contextlib.contextmanager
    def sub_block(self):
        """Build ops into a fresh Block nested in the current one."""
        blk = Block(parent=self.block)
        prev = self.block
        self.block = blk
        self._inplace_logs.append({})
        try:
            yield blk
        finally:
            log = self._inplace_logs.pop()
            if log:
                writes = []
                for t, before in log.values():
                    final = Tensor._make(None, t._var)
                    final.requires_grad, final.grad_fn, final._out_idx = t.requires_grad, t.grad_fn, t._out_idx
                    writes.append((t, final))
                    _set_tensor_state(t, before)
                self.inplace_writes[blk] = writes
            self.block = prev


def _tensor_state(t):
    # (a view's history is as current as its root's version it last read: see d2s/views.py)
    return (t.array, t._var, t.requires_grad, t.grad_fn, t._out_idx, t._version,
            None if t._view is None else t._view.version)


def _set_tensor_state(t, state):
    t.array, t._var, t.requires_grad, t.grad_fn, t._out_idx, t._version, view_version = state
    if view_version is not None:
        t._view.version = view_version


def operands_scalar_dtype(inputs):
    """dtype for Python-scalar inputs: weak scalars against the tensor inputs (see
    ``d2s_runtime.dtypes.scalar_result``), so a program computes what eager kernels do."""
    scalars = [x for x in inputs if isinstance(x, (bool, int, float))]
    if not scalars:
        return None
    tensors = [x for x in inputs if isinstance(x, (Tensor, np.ndarray, np.generic))]
    if not tensors:
        return None
    target = operand_result_type([str(x.dtype) for x in tensors], [np.ndim(x) if not isinstance(x, Tensor) else x.ndim
                                                                  for x in tensors])
    for s in scalars:
        target = scalar_result(target, s)
    return target


def plain_attrs(attrs):
    out = {}
    for k, v in attrs.items():
        if isinstance(v, tuple):
            v = list(v)
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def python_number_type(t):
    """``int``, ``float`` or ``bool`` when tensor ``t`` stands for a Python number of converted
    code (a weak number: a loop counter, a number carried by a tensor loop or merged by a
    tensor `if`), else None."""
    # d2s.static.weak_index's WeakNumber says so by a class flag (it builds on ops, above the builder)
    if not getattr(type(t), "_d2s_stands_for_number", False):
        return None
    if t.dtype == "bool":
        return bool
    return float if t.dtype.is_floating_point else int


def as_python_number(v, py, broadcast=False):
    """A program's concrete output ``v`` as the Python number (of type ``py``) that eager code
    returns; a symbolic or non-scalar value stays as it is. ``broadcast``: ``v`` is known to be
    a number broadcast to its shape (a loop variable's start on a zero-trip run)."""
    if isinstance(v, Tensor) and not v.is_symbolic and (v.ndim == 0 or v.numel() == 1 or
                                                          (broadcast and v.numel() > 0)):
        return py(v.numpy().reshape(-1)[0].item())
    return v


def flatten_outputs(obj, same_objects=False):
    """The tensors in ``obj`` (a function's result: a pytree, see ``d2s.pytree``), in order, and
    a function ``rebuild(values)`` giving back what eager code returns when ``values`` (one per
    tensor) are what the program computed for them: the same structure, Python numbers where
    eager code holds numbers, Python lists for lists grown in tensor loops. ``same_objects``: a
    tensor object found twice is one leaf, rebuilt as one object twice (as eager returns it)."""
    leaves = []
    return leaves, _output_tree(obj, leaves, {} if same_objects else None)


def _output_tree(obj, leaves, seen):
    parts, treedef = pytree.tree_flatten(obj, is_leaf=_is_output_part)
    decoders = [_output_part(o, leaves, seen) for o in parts]
    if treedef.node_type is None:  # one part (a tensor, most often): no structure to rebuild
        return decoders[0]
    return lambda values: pytree.tree_unflatten(treedef, [decode(values) for decode in decoders])


def _is_output_part(o):
    """Values whose program outputs are rebuilt by ``_output_part`` rather than as a pytree."""
    return isinstance(o, (Tensor, TensorArray)) or hasattr(type(o), "_d2s_from_output")


def _output_part(o, leaves, seen):
    """Add the tensors of output part ``o`` to ``leaves``; returns the function that rebuilds
    it from the program's values (anything else is a constant of the result). ``seen`` (id ->
    leaf index, or None) makes a plain tensor object found twice one leaf."""
    i = len(leaves)
    if isinstance(o, Tensor) and hasattr(o, "is_number"):  # a Python number on some runs only
        leaves.extend((o, o.is_number))
        pytype, else_type = o.pytype, o.else_type
        number = getattr(o, "number", None)  # the number exactly, where the tensor may round it
        if isinstance(number, Tensor):
            leaves.append(number)

        def number_or_tensor(values):
            flag = values[i + 1]
            if isinstance(flag, Tensor) and not flag.is_symbolic and bool(flag.numpy().all()):
                if number is None:
                    return as_python_number(values[i], pytype, broadcast=True)
                if not isinstance(number, Tensor):
                    return pytype(number)
                return as_python_number(values[i + 2], pytype)
            return values[i] if else_type is None else as_python_number(values[i], else_type)

        return number_or_tensor
    if isinstance(o, Tensor):
        py = python_number_type(o)
        if py is None and seen is not None:
            i = seen.setdefault(id(o), i)
            if i < len(leaves):  # this very object is an earlier leaf: the same object again
                return lambda values: values[i]
        leaves.append(o)
        if py is None:
            return lambda values: values[i]
        # what eager code holds as a Python number: that number, run by run
        return lambda values: as_python_number(values[i], py)
    if hasattr(type(o), "_d2s_from_output"):  # a converted-code value (d2s.convert.undefined)
        # decided from the run's values (None, or the value)
        children = [_output_tree(x, leaves, seen) for x in o._d2s_children()]
        return lambda values: type(o)._d2s_from_output([c(values) for c in children])
    if isinstance(o, TensorArray):
        # a list grown in a tensor loop or branch: the program returns its elements as one
        # tensor, and the caller gets back a Python list of them, as eager code would
        if o.data is None:
            return lambda values: []
        if isinstance(o, TupleList):
            leaves.extend(o.parts)
            return functools.partial(_tuple_list_output, type(o), i, len(o.parts))
        leaves.append(o.data)
        return functools.partial(_list_output, isinstance(o, NumberList), i)
    return lambda values: o


def _tuple_list_output(cls, start, count, values):
    parts = values[start:start + count]
    if not all(isinstance(p, Tensor) and not p.is_symbolic for p in parts):
        return cls(parts)
    return [cls(parts)[k] for k in range(parts[0].shape[0])]


def _list_output(numbers, i, values):
    rows = values[i]
    if not isinstance(rows, Tensor) or rows.is_symbolic:
        return (NumberList if numbers else TensorArray)(rows)
    if numbers:
        return rows.numpy().tolist()
    return [rows[k] for k in range(rows.shape[0])]


def build_program(fn, *args, device="cpu"):
    """Run ``fn`` on symbolic inputs and return its Program (like ``jax.make_jaxpr``).

    ``args`` are tensors (their shape and dtype are used), ``InputSpec``s, or other Python
    values passed through unchanged. No source conversion happens here: Python control flow
    on a symbolic tensor raises an error that says where.
    """
    builder = ProgramBuilder(device)
    with builder:
        sym_args = []
        for i, a in enumerate(args):
            if isinstance(a, InputSpec):
                sym_args.append(builder.add_input(a.shape, str(a.dtype), a.name))
            elif isinstance(a, Tensor):
                sym_args.append(builder.add_input(a.shape, str(a.dtype)))
            elif isinstance(a, np.ndarray):  # arrays are inputs too, as in to_static
                sym_args.append(builder.add_input(a.shape, a.dtype.name))
            else:
                sym_args.append(a)
        out = fn(*sym_args)
        leaves, _ = flatten_outputs(out)
        builder.program.outputs = [builder.var_of(t) for t in leaves]
    builder.program.block.outputs = list(builder.program.outputs)
    return builder.program
