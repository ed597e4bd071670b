"""Whole-program capture: a program run once under a graph backend's recorder, so that later
calls replay it with no launch from Python and no host read.

:class:`Capture` walks the program as the interpreter does, but every computation goes
through the recorder of a :class:`GraphBackend` (``backends.py`` for the protocol):

* a run of element-wise ops (and a reduction reading them) runs as the kernels the CUDA C
  emitter makes of it (``fusion.py``, ``rec.fused``): one graph node per kernel, not per op;
* any other primitive op runs its kernel inside ``rec.op`` (on a GPU the kernels cupy launches on the
  capturing stream are recorded; on the strict test device each op becomes a thunk writing into
  the same buffer at every replay). Kernels get :class:`CaptureNamespace`: the device's ``xp``
  whose matrix products go to the backend's own GEMM (cupy refuses cuBLAS during capture);
* an op with a ``"graph"`` lowering (declared beside the op: the checks ``assert``, ``guard``,
  ``list_index_check``; the tensor-stack ops) builds its results with :class:`GraphEmit`;
* a structured op is dispatched on its block *layout* (``ops/control_flow.py``), never its
  name: a branch layout becomes an IF/ELSE node (both blocks write the same output buffers),
  a while layout a WHILE node (the cond block, then the body writing fixed carry buffers and
  the cond block again), a scan layout a counted WHILE over a device step counter;
* a random op draws from its stream's key and offset in device buffers (``rng.py``), so each
  replay draws new numbers, the ones the Python backend would draw;
* ops with no inputs and no effects (literals, fills) are computed once before the capture:
  a graph cannot copy host data to the device;
* errors a program raises on purpose (a failed assert or guard, a pop from an empty stack,
  the loop limit) and a device stack outgrowing its capacity set bits of a device **error
  word**, read once after each replay; a set word makes the call run again on the Python
  backend, which raises the exact error (or, for a full stack, returns the right answer; the
  next capture takes the capacity that call needed).

Anything else that cannot be captured (a host read, a host-to-device copy, a library call the
backend refuses, a random draw inside a loop or branch, a shape that changes across loop
iterations) raises
:class:`CaptureRefused` naming the op: the program stays on the Python backend and
``backend_report()`` says why.
"""
from ..ops import OPS
from ..ops.control_flow import BranchLayout, ScanLayout, WhileLayout
from ..schedule import FeedView, topo_order
from .counts import StackFacts
from .fusion import plan_groups
from .rng import GraphDraws
from ..ops.random import RNG

# bits of the device error word
ERR_PROGRAM = 1   # a check failed: the Python backend raises the error
ERR_CAPACITY = 2  # a device stack outgrew its capacity (or a full read found it short)

DEFAULT_STACK_CAPACITY = 16


class CaptureRefused(Exception):
    """The program cannot be captured; ``str(e)`` says why in one line."""


def where_of(op):
    return f"op {op.type} (output {op.outputs[0] if op.outputs else '-'})"


def one_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


class CaptureNamespace:
    """The namespace kernels get while captured: the device's ``xp`` with the matrix products
    (``matmul``, ``dot``) going to the backend's GEMM, which may run inside a capture."""

    def __init__(self, xp, gemm):
        self._xp = xp
        self.matmul = gemm
        self.ndarray = xp.ndarray

        def dot(a, b):
            if a.ndim <= 2 and b.ndim <= 2 and a.ndim and b.ndim:
                return gemm(a, b)
            return xp.dot(a, b)

        self.dot = dot

    def __getattr__(self, name):
        return getattr(self._xp, name)


class DeviceStack:
    """A tensor stack in graph form: ``capacity`` elements of a fixed shape in one device
    buffer, and a device-side ``count``. Pushes and pops change the buffer and the count in
    place (the stack ops are linear in programs: a stack value is read once, by the op that
    makes the next one), so a loop carries the same object.

    ``peak`` (device) is the largest count reached, read back only when the error word says a
    stack overflowed (to size the next capture)."""

    __slots__ = ("key", "buf", "count", "peak", "capacity", "elem_shape", "dtype", "exact", "static")

    def __init__(self, key, buf, count, peak, capacity, elem_shape, dtype):
        self.key, self.buf, self.count, self.peak = key, buf, count, peak
        self.capacity, self.elem_shape, self.dtype = capacity, elem_shape, dtype
        self.exact = False  # read whole (stack_rows): the count must equal the capacity
        self.static = False  # its capacity is proven (counts.py): it cannot overflow


class GraphEmit:
    """What an op's ``"graph"`` lowering gets (``hook(g, *inputs, **attrs)``): the op, the
    capture namespace, recorded computations and the capture's own vocabulary (checks into the
    error word, device stacks)."""

    def __init__(self, capture, op):
        self._c, self.op = capture, op
        self.xp = capture.gxp

    def unsupported(self, why):
        raise CaptureRefused(f"{where_of(self.op)}: {why}")

    def run(self, fn, *args):
        """``fn(*args)`` (device arrays in, device arrays out), recorded."""
        return self._c.rec.op(fn, *args)

    def check(self, ok):
        """Record ``ok`` (a 0-d bool device array): where it is false, the call fails and runs
        again on the Python backend, which raises the op's error."""
        self._c.flag(ok, ERR_PROGRAM)

    def const_check(self, ok):
        """A check known at capture (static shapes): a failing one keeps the program on Python."""
        if not ok:
            self.unsupported("its check fails for these shapes")

    # ---------------------------------------------------------------- device stacks
    def stack_new(self, like):
        return self._c.stack_new(self.op, like)

    def stack_push(self, buf, shapes, x):
        st = self._stack(buf, shapes)
        self._c.stack_push(st, x)
        return st, st

    def stack_pop(self, buf, shapes, shape):
        st = self._stack(buf, shapes)
        if shape is None or st.elem_shape is None or tuple(shape) != st.elem_shape:
            self.unsupported(f"pops an element of shape {shape}, the stack holds {st.elem_shape}")
        return st, st, self._c.stack_pop(st, self.op)

    def stack_rows(self, buf, width):
        st = self._stack(buf, None)
        return self._c.stack_rows(st, width, self.op)

    def _stack(self, buf, shapes):
        if type(buf) is not DeviceStack or (shapes is not None and shapes is not buf):
            self.unsupported("a tensor stack that was not made in this program (passed in, or split)")
        return buf


class Capture:
    """One program prepared for capture (see the module docstring).

    Args:
        program: the Program (its global block is fed inputs, params, constants in order).
        max_loop_iterations: the executor's bound (None: none), checked on the device.
        capacities: ``{stack key: capacity}`` learned from earlier calls.
    """

    def __init__(self, program, max_loop_iterations=None, capacities=None, fuse=True):
        self.program = program
        self.fuse = fuse
        self.fused = 0         # fused groups recorded by the last capture
        self._groups = {}
        self.limit = max_loop_iterations
        self.capacities = dict(capacities or {})
        self.stacks = []       # the DeviceStacks of the last capture
        self.checks = 0        # flags recorded into the error word
        self.rec = self.gxp = self.err = None
        self._orders = {}
        self._refuse_early(program.block)
        # what needs no device check: pops that cannot find their stack empty, capacities
        # that cannot be outgrown (so a while gradient's call reads no error word)
        self.facts = StackFacts(program)

    # ---------------------------------------------------------------- before capturing
    def _refuse_early(self, block, nested=False):
        for op in block.ops:
            opdef = OPS.get(op.type)
            if opdef is None:
                raise CaptureRefused(f"op {op.type!r} is not registered")
            if opdef.random and nested:
                raise CaptureRefused(f"{where_of(op)} draws random numbers inside a loop or branch: how far it "
                                     "moves the generator depends on the data, which the host cannot follow")
            if opdef.structured and not isinstance(opdef.layout, (BranchLayout, WhileLayout, ScanLayout)):
                raise CaptureRefused(f"{where_of(op)}: no graph form for its block layout")
            if opdef.structured and not opdef.layout.well_formed(op):
                raise CaptureRefused(f"{where_of(op)}: malformed")
            for sub in op.blocks.values():
                self._refuse_early(sub, True)

    def literals(self, xp):
        """Values of the ops with no inputs and no effects (literals, fills), computed now,
        outside any capture (``{id(op): [outputs]}``)."""
        out = {}

        def walk(block):
            for op in block.ops:
                opdef = OPS[op.type]
                if not op.inputs and not opdef.structured and not opdef.effect and not opdef.random \
                        and not opdef.lowering("graph"):
                    r = opdef.kernel(xp, **op.attrs)
                    rs = list(r) if isinstance(r, (tuple, list)) else [r]
                    out[id(op)] = [self._array(xp, v, self._type(block, n).dtype) for v, n in zip(rs, op.outputs)]
                for sub in op.blocks.values():
                    walk(sub)

        walk(self.program.block)
        return out

    @staticmethod
    def _type(block, name):
        return block.lookup(name).type

    @staticmethod
    def _array(xp, v, dtype):
        if type(v) is xp.ndarray:
            return v
        return xp.full((), v, dtype=dtype)  # a fill kernel: no host-to-device copy

    # ---------------------------------------------------------------- capturing
    def run(self, rec, feeds, literals):
        """Record the program on ``rec`` with its global block fed ``feeds`` (device arrays at
        their captured addresses); returns the output values (arrays, DeviceStacks)."""
        self.rec, self.pre = rec, literals
        self.gxp = CaptureNamespace(rec.xp, rec.gemm)
        self.stacks, self.checks, self.fused = [], 0, 0
        self.rng = GraphDraws(rec)
        xp = rec.xp
        self.err = rec.op(lambda: xp.zeros((), dtype="int32"))
        prog = self.program
        names = list(prog.inputs) + list(prog.params) + list(prog.constants)
        return self.block(prog.block, feeds, names)

    def flag(self, ok, bit):
        """Set ``bit`` of the error word where the 0-d bool ``ok`` is false (recorded)."""
        xp, err = self.rec.xp, self.err
        b = xp.int32(bit) if hasattr(xp, "int32") else bit

        def set_bit(e, ok):
            bad = xp.logical_not(ok).astype("int32") * b
            return xp.bitwise_or(e, bad, out=e)

        self.rec.op(set_bit, err, ok)
        self.checks += 1

    def block(self, block, values, names=None):
        names = list(block.inputs if names is None else names)
        if len(values) != len(names):
            raise CaptureRefused(f"a block takes {len(names)} values, got {len(values)}")
        env = dict(zip(names, values))
        order = self._orders.get(id(block))
        if order is None:
            order = self._orders[id(block)] = topo_order(FeedView(block, names))[0]
            self._groups[id(block)] = plan_groups(block, order) if self.fuse else {}
        groups, skip = self._groups[id(block)], ()
        for i in order:
            if i in skip:
                continue
            group = groups.get(i)
            if group is not None and not any(type(env[n]) is DeviceStack for n in group.inputs):
                try:
                    outs = self.run_group(block, group, env)
                except Exception as e:  # noqa: BLE001 - as for one op
                    raise CaptureRefused(f"{where_of(group.ops[0])} (a fused group): {one_line(e)}") from e
                env.update(zip(group.outputs, outs))
                skip = group.members
                continue
            op = block.ops[i]
            try:
                outs = self.op(block, op, env)
            except CaptureRefused:
                raise
            except Exception as e:  # noqa: BLE001 - a host read, a refused call, a shape error: Python runs it
                raise CaptureRefused(f"{where_of(op)}: {one_line(e)}") from e
            if len(outs) != len(op.outputs):
                raise CaptureRefused(f"{where_of(op)}: gave {len(outs)} outputs")
            env.update(zip(op.outputs, outs))
        return [env[n] for n in block.outputs]

    def run_group(self, block, group, env):
        """A fused group (``fusion.py``), recorded as its kernels: the backend runs the plan's
        CUDA C; a backend without kernels of its own runs ``run`` (the ops' kernels in turn)."""
        gxp, ndarray, array = self.gxp, self.rec.xp.ndarray, self._array
        steps = [(OPS[op.type].kernel, list(op.inputs), list(op.outputs), dict(op.attrs),
                  [self._type(block, n).dtype for n in op.outputs]) for op in group.ops]
        names, outputs = list(group.inputs), list(group.outputs)

        def run(*arrays):
            vals = dict(zip(names, arrays))
            for kernel, ins, outs, attrs, dtypes in steps:
                r = kernel(gxp, *[vals[n] for n in ins], **attrs)
                rs = list(r) if isinstance(r, (tuple, list)) else [r]
                for n, v, dt in zip(outs, rs, dtypes):
                    vals[n] = v if type(v) is ndarray else array(gxp, v, dt)
            return tuple(vals[n] for n in outputs)

        self.fused += 1
        return list(self.rec.fused(group.plan, run, *[env[n] for n in names]))

    def op(self, block, op, env):
        pre = self.pre.get(id(op))
        if pre is not None:
            return pre
        opdef = OPS[op.type]
        ins = [env[n] for n in op.inputs]
        if opdef.structured:
            layout = opdef.layout
            if isinstance(layout, WhileLayout):
                return self.while_(op, ins)
            if isinstance(layout, ScanLayout):
                return self.scan(op, ins)
            return self.branches(op, ins, layout.branches(op))
        if opdef.alias and len(op.outputs) == 1 and ins:
            return [ins[0]]  # the kernel returns its input itself: nothing to compute (a stack too)
        hook = opdef.lowering("graph")
        if hook is not None:
            r = hook(GraphEmit(self, op), *ins, **op.attrs)
            return list(r) if isinstance(r, (tuple, list)) else [r]
        if any(type(v) is DeviceStack for v in ins):
            raise CaptureRefused(f"{where_of(op)} reads a tensor stack (only the stack ops have a graph form)")
        kernel, attrs, gxp = opdef.kernel, dict(op.attrs), self.gxp
        ndarray = self.rec.xp.ndarray
        dtypes = [self._type(block, n).dtype for n in op.outputs]
        array = self._array

        def run_kernel(*args):
            r = kernel(gxp, *args, **attrs)
            rs = list(r) if isinstance(r, (tuple, list)) else [r]
            return tuple(v if type(v) is ndarray else array(gxp, v, dt) for v, dt in zip(rs, dtypes))

        if opdef.random:  # its draws: the stream's device buffers (rng.py), at capture and replay
            hook, plain = self.rng.hook(attrs.get("generator")), run_kernel

            def run_kernel(*args):
                with RNG.graph_draws(hook):
                    return plain(*args)

        return list(self.rec.op(run_kernel, *ins))

    # ---------------------------------------------------------------- control flow
    def _carry_buffers(self, op, values):
        """Fixed buffers for loop carries: a recorded copy of each initial value (a stack is
        carried as itself)."""
        xp = self.rec.xp
        out = []
        for v in values:
            if type(v) is DeviceStack:
                out.append(v)
            else:
                out.append(self.rec.op(lambda a: xp.array(a, copy=True), v))
        return out

    def _write_carries(self, op, bufs, new):
        """Record the carries' update from a body's results ``new`` (values that alias a carry
        buffer are copied aside first: ``a, b = b, a``)."""
        xp = self.rec.xp
        staged = []
        for k, (b, v) in enumerate(zip(bufs, new)):
            if type(b) is DeviceStack:
                if v is not b:
                    raise CaptureRefused(f"{where_of(op)}: tensor stack carry {k} is replaced by another stack")
                staged.append(None)
                continue
            if type(v) is DeviceStack:
                raise CaptureRefused(f"{where_of(op)}: carry {k} becomes a tensor stack")
            if tuple(v.shape) != tuple(b.shape) or v.dtype != b.dtype:
                raise CaptureRefused(f"{where_of(op)}: carry {k} changes from {b.dtype}{tuple(b.shape)} to "
                                     f"{v.dtype}{tuple(v.shape)} across iterations; a graph needs fixed shapes")
            if v is b:
                staged.append(None)
                continue
            aliased = any(j != k and type(o) is not DeviceStack and xp.may_share_memory(v, o)
                          for j, o in enumerate(bufs))
            staged.append(self.rec.op(lambda a: xp.array(a, copy=True), v) if aliased else v)
        for b, v in zip(bufs, staged):
            if v is not None:
                self.rec.copy(b, v)

    def _loop_counter(self, op):
        """With ``max_loop_iterations``: a device counter the body increments and checks."""
        if self.limit is None:
            return None
        xp = self.rec.xp
        return self.rec.op(lambda: xp.zeros((), dtype="int64"))

    def _count(self, counter):
        if counter is None:
            return
        xp, limit = self.rec.xp, self.limit

        def bump(c):
            return xp.add(c, 1, out=c)

        self.rec.op(bump, counter)
        self.flag(self.rec.op(lambda c: c <= limit, counter), ERR_PROGRAM)

    def while_(self, op, ins):
        n = len(op.outputs)
        bufs = self._carry_buffers(op, ins[:n])
        caps = ins[n:]
        cond_blk, body_blk = op.blocks["cond"], op.blocks["body"]
        counter = self._loop_counter(op)

        def cond():
            (pred,) = self.block(cond_blk, bufs + caps)
            return self._pred(op, pred)

        def body():
            self._count(counter)
            self._write_carries(op, bufs, self.block(body_blk, bufs + caps))

        self.rec.while_loop(cond, body)
        return bufs

    def _pred(self, op, pred):
        if type(pred) is DeviceStack or tuple(pred.shape) != () or pred.dtype != bool:
            raise CaptureRefused(f"{where_of(op)}: the predicate is not a 0-d bool")
        return pred

    def branches(self, op, ins, blocks):
        if len(blocks) != 2:
            raise CaptureRefused(f"{where_of(op)}: only two-way branches have a graph form")
        pred = self._pred(op, ins[0])
        operands = ins[1:]
        bufs = []

        def branch(blk):
            def record():
                res = self.block(blk, operands)
                if not bufs:
                    for k, v in enumerate(res):
                        if type(v) is DeviceStack:
                            raise CaptureRefused(f"{where_of(op)}: output {k} is a tensor stack")
                        bufs.append(self.rec.empty(v.shape, v.dtype))
                for k, (b, v) in enumerate(zip(bufs, res)):
                    if type(v) is DeviceStack or tuple(v.shape) != tuple(b.shape) or v.dtype != b.dtype:
                        raise CaptureRefused(f"{where_of(op)}: the branches give output {k} different types "
                                             f"({b.dtype}{tuple(b.shape)} and {getattr(v, 'dtype', '')}"
                                             f"{tuple(getattr(v, 'shape', ()))}); a graph needs one")
                    self.rec.copy(b, v)
            return record

        self.rec.if_else(pred, branch(blocks[0]), branch(blocks[1]))
        return bufs

    def scan(self, op, ins):
        a = op.attrs
        nc, nx, reverse = a["n_carry"], a["n_xs"], bool(a.get("reverse", False))
        xp = self.rec.xp
        bufs = self._carry_buffers(op, ins[:nc])
        xs, caps = ins[nc:nc + nx], ins[nc + nx:]
        for x in xs:
            if type(x) is DeviceStack:
                raise CaptureRefused(f"{where_of(op)} scans over a tensor stack")
        lens = {int(x.shape[0]) for x in xs} if xs else {int(a["length"])}
        if len(lens) != 1:
            raise CaptureRefused(f"{where_of(op)}: xs have different leading dims {sorted(lens)}")
        length = lens.pop()
        start, step = (length - 1, -1) if reverse else (0, 1)
        t = self.rec.op(lambda: xp.full((), start, dtype="int64"))
        ys = []
        body = op.blocks["body"]

        def cond():
            if reverse:
                return self.rec.op(lambda i: i >= 0, t)
            return self.rec.op(lambda i: i < length, t)

        def step_body():
            slices = [self.rec.op(lambda x, i: x[i], x, t) for x in xs]
            res = self.block(body, bufs + slices + caps)
            new, yv = res[:nc], res[nc:]
            if not ys:
                for v in yv:
                    if type(v) is DeviceStack:
                        raise CaptureRefused(f"{where_of(op)}: a tensor stack is a scan output")
                    ys.append(self.rec.empty((length,) + tuple(v.shape), v.dtype))
            for y, v in zip(ys, yv):
                def store(y, v, i):
                    y[i] = v
                    return y
                self.rec.op(store, y, v, t)
            self._write_carries(op, bufs, new)
            self.rec.op(lambda i: xp.add(i, step, out=i), t)

        self.rec.while_loop(cond, step_body)
        if not ys and len(op.outputs) > nc:
            raise CaptureRefused(f"{where_of(op)}: its outputs were not typed at capture")
        return bufs + ys

    # ---------------------------------------------------------------- device stacks
    def stack_new(self, op, like):
        """A device stack; its buffer is made at its first push, whose element shape it takes
        (``like`` gives the dtype and rank only)."""
        key = op.outputs[0]
        static = self.facts.capacity.get(key)
        cap = static if static is not None else self.capacities.get(key, DEFAULT_STACK_CAPACITY)
        xp = self.rec.xp
        count = self.rec.op(lambda: xp.zeros((), dtype="int64"))
        peak = self.rec.op(lambda: xp.zeros((), dtype="int64"))
        st = DeviceStack(key, None, count, peak, cap, None, like.dtype)
        st.static = static is not None
        self.stacks.append(st)
        return st, st

    def stack_push(self, st, x):
        if st.buf is None:
            st.elem_shape = tuple(x.shape)
            st.buf = self.rec.empty((st.capacity,) + st.elem_shape, st.dtype)
        if tuple(x.shape) != st.elem_shape or x.dtype != st.dtype:
            raise CaptureRefused(f"a tensor stack of {st.dtype}{st.elem_shape} elements gets a {x.dtype}"
                                 f"{tuple(x.shape)} one; a graph needs elements of one shape")
        xp, cap = self.rec.xp, st.capacity

        def push(buf, count, peak, x):
            if cap:  # (a stack sized 0 by a call that pushed nothing only counts: it overflows)
                i = xp.minimum(count, cap - 1)
                buf[i] = xp.where(count < cap, x, buf[i])
            xp.add(count, 1, out=count)
            xp.maximum(peak, count, out=peak)
            return buf, count, peak

        self.rec.op(push, st.buf, st.count, st.peak, x)
        if st.static:
            self.rec.assume(lambda p: p <= cap, st.peak, f"stack {st.key} outgrew its proven capacity {cap}")
        else:
            self.flag(self.rec.op(lambda p: p <= cap, st.peak), ERR_CAPACITY)

    def stack_pop(self, st, op):
        xp = self.rec.xp
        if st.buf is None:
            raise CaptureRefused("a tensor stack is popped before any push")
        if id(op) in self.facts.safe_pops:
            self.rec.assume(lambda c: c > 0, st.count, f"{where_of(op)} found its stack empty")
        else:
            self.flag(self.rec.op(lambda c: c > 0, st.count), ERR_PROGRAM)
        cap, elem = st.capacity, st.elem_shape

        def pop(buf, count):
            xp.subtract(count, 1, out=count)
            if not cap:
                return xp.zeros(elem, dtype=buf.dtype)
            return xp.array(buf[xp.clip(count, 0, cap - 1)], copy=True)

        return self.rec.op(pop, st.buf, st.count)

    def stack_rows(self, st, width, op):
        if st.buf is None:
            raise CaptureRefused("a tensor stack is read before any push")
        size = 1
        for d in st.elem_shape:
            size *= d
        if width <= 0 or (st.capacity * size) % width:
            raise CaptureRefused(f"stack_rows: elements of shape {st.elem_shape} are not rows of {width}")
        st.exact = True
        cap = st.capacity
        if st.static and self.facts.exact_rows.get(id(op)) == cap:
            self.rec.assume(lambda c: c == cap, st.count, f"{where_of(op)}: the stack is not full")
        else:
            self.flag(self.rec.op(lambda c: c == cap, st.count), ERR_CAPACITY)
        return self.rec.op(lambda b: b.reshape(-1, width), st.buf)
