"""The numba emitter's tensor-stack format, and the builders of the stack ops' hooks.

A stack (``ops/tensor_list.py``: ``buf``, the elements flattened end to end, and ``shapes``, one
row of dims per element) is held here as two growing arrays: ``buf`` with room after its fill
mark, and ``shapes`` of shape ``(room + 1, rank + 3)`` whose row 0 is a header ``[count, fill,
site]`` and whose rows 1..count hold the dims (``_lib.py``). A push writes into the room
(doubling it when full) and a pop moves the header back, so both cost O(element); they do so in
place only when nothing else reads the stack they consume (the stack a ``while`` gradient keeps:
each version read once, by the next push or pop), else they copy first (as the Python backend
forks). Only the stack ops and aliases read this format (checked by the planner: hooks marked
``reads_stacks``); a program's stack outputs are converted back to the Python backend's arrays,
and a stack fed to the program is converted at its first push or pop. Which locals are stacks,
across carries and branches, is the planner's (``Planner.carry_stacks``).
"""
from .emit import StackPool
from .plan import V, check_int


class StackFormat:
    """The stack builders (see the module docstring), a mixin of the Lowerer."""

    def _stack_pair(self, e, buf, shapes):
        """``(buf, shapes)`` in this backend's format (converted if they come from outside)."""
        rb, rs = self.stacks.get(buf.name), self.stacks.get(shapes.name)
        if rb == ("buf", shapes.name) and rs == ("shapes", buf.name):
            return buf, shapes
        if rb is not None or rs is not None:
            e.unsupported("a stack's two arrays come from different stacks")
        b, sh = self.fresh(), self.fresh()
        self.emit(self.indent, f"{b}, {sh} = L.stack_from_py({self.array(buf).name}, {self.array(shapes).name})")
        return self._new_stack(b, sh, buf.dtype)

    def _new_stack(self, b, sh, dtype):
        self.stacks[b] = ("buf", sh)
        self.stacks[sh] = ("shapes", b)
        return self.new_array(b, dtype, (None,)), self.new_array(sh, "int64", (None, None))

    def _stack_in_place(self, e, vals):
        """Whether the stack op ``e`` may update its input stack in place: this op is the only
        reader of both arrays, and their buffers belong to this block."""
        ctx = self._ctx
        for name, v in zip(e._op.inputs, vals):
            if (ctx.uses.get(name, 0) != 1 or name in ctx.outputs or name in ctx.pinned or v.name in ctx.pinned
                    or not (v.name in ctx.fresh or name in ctx.owned) or self.read_later(v)):
                return False
        return True

    def stack_new(self, e, like):
        t_buf, t_sh = e.out_types
        rank = len(t_sh.shape) and t_sh.shape[1]
        rank = check_int(rank, "stack rank")
        b, sh = self.fresh(), self.fresh()
        dt = t_buf.dtype
        arena, slots = self.pool_args(dt)
        site = -1
        if self.top:  # runs once per call: its stack may start in memory the last call's used
            site = self.stack_sites.get(dt, 0)
            self.stack_sites[dt] = site + 1
        self.emit(self.indent, f"{b}, {sh} = L.stack_new({arena}, {slots}, {site}, {rank})")
        return self._new_stack(b, sh, dt)

    def pool_args(self, dtype):
        """The arena and slots arguments of ``dtype``'s pooled stacks (see the stack section of
        ``_lib.py``; the caller passes one set per call in flight)."""
        if dtype not in self.pools:
            self.pools[dtype] = len(self.consts)
            self.const_arg(StackPool(dtype, "arena"))
            self.const_arg(StackPool(dtype, "slots"))
        i = self.pools[dtype]
        return self.const_names[i], self.const_names[i + 1]

    def stack_rows(self, e, buf, width):
        """A stack's elements as rows of ``width``: a view of its buffer, which is pinned (a
        later push or pop of the stack then works on a copy, never in this buffer); a copy
        where the stack is an output of the block. A view that a program output shares is
        copied by ``compile_lowered``'s caller (the buffer may be pooled)."""
        tag = self.stacks.get(buf.name)
        if tag is not None:
            if tag[0] != "buf":
                e.unsupported("reads a stack's shapes, not its elements")
            view = e._op.inputs[0] not in self._ctx.outputs
            if view:
                self.pin(buf)
            name = self.fresh()
            self.emit(self.indent, f"{name} = L.{'stack_buf_view' if view else 'stack_buf_out'}({buf.name}, {tag[1]})")
            buf = self.new_array(name, buf.dtype, (None,))
        return self.reshape(e, buf, [-1, width])

    def stack_push(self, e, buf, shapes, x):
        t_buf = e.out_types[0]
        if x.dtype != t_buf.dtype:
            e.unsupported("element dtype differs from the stack's")
        in_place = self._stack_in_place(e, (buf, shapes))
        buf, shapes = self._stack_pair(e, buf, shapes)
        b, sh = self.fresh(), self.fresh()
        x = self.py_format(self.materialize(x))  # a stack pushed as an element is held as the Python backend holds it
        slots = self.pool_args(t_buf.dtype)[1]
        push = "stack_push0" if x.kind == "s" else "stack_push"
        self.emit(self.indent, f"{b}, {sh} = L.{push}({buf.name}, {shapes.name}, {x.name}, {not in_place}, {slots})")
        return self._new_stack(b, sh, t_buf.dtype)

    def stack_pop(self, e, buf, shapes, shape):
        t_x = e.out_types[2]
        in_place = self._stack_in_place(e, (buf, shapes))
        buf, shapes = self._stack_pair(e, buf, shapes)
        rank = len(t_x.shape)
        b, sh, flat, row = (self.fresh() for _ in range(4))
        self.emit(self.indent, f"{b}, {sh}, {flat}, {row} = L.stack_pop({buf.name}, {shapes.name}, {rank}, "
                               f"{not in_place})")
        nb, nsh = self._new_stack(b, sh, buf.dtype)
        x = self.fresh()
        if rank == 0:
            self.emit(self.indent, f"{x} = {flat}[0]")
            xv = V("s", x, t_x.dtype, ())
        else:
            dims = ", ".join(f"{row}[{j}]" for j in range(rank))
            self.emit(self.indent, f"{x} = {flat}.reshape(({dims},))")
            xv = self.new_array(x, t_x.dtype, tuple(t_x.shape))
        return nb, nsh, xv

    def stack_outputs(self, outs):
        """The program's outputs with stacks in the Python backend's format."""
        return [self.py_format(v) for v in outs]

    def py_format(self, v):
        """``v``, or where it is one of a stack's two arrays, that array in the Python backend's
        format (a copy)."""
        tag = self.stacks.get(v.name)
        if tag is None:
            return v
        name = self.fresh()
        if tag[0] == "buf":
            self.emit(self.indent, f"{name} = L.stack_buf_out({v.name}, {tag[1]})")
        else:
            self.emit(self.indent, f"{name} = L.stack_shapes_out({v.name})")
        return V("a", name, v.dtype, v.shape)
