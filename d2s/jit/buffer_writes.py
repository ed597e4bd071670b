"""Module buffers a converted function updates in place other than by assigning the attribute
(``self.buf[0] = v``, ``self.buf[:, i].add_(v)``, through a view or another name): the builder
made each one name a var of the program (``ProgramBuilder.symbolize``); its final value becomes
an extra program output, copied into the buffer's own array after each call, as eager code
writes into it."""
from .. import views
from ..tensor import Tensor


class _BufferWrite:
    """A module buffer (or tensor attribute) the function updated in place through a view or
    an index (``self.buf[0] = v``, ``self.buf[:, i].add_(v)``): its final value is an extra
    program output, copied into the buffer's own array after each call, as eager code writes
    into it (the buffer object stays the same)."""

    __slots__ = ("buffer", "tensors", "start")

    def __init__(self, buffer, tensor):
        self.buffer, self.tensors, self.start = buffer, [tensor], 0

    def apply(self, outputs, leaves=None):
        self.buffer.array[...] = outputs[self.start].array
        self.buffer._version += 1


def buffer_writes(builder, leaves):
    """``(leaves, [_BufferWrite])`` once the concrete tensors the function updated in place
    (``ProgramBuilder.symbolize``) have their arrays back: an output that is one of them is
    replaced by its final value, and each module buffer or tensor attribute gets a write."""
    for t in leaves:
        if isinstance(t, Tensor):
            views.fresh(t)  # a view of such a tensor reads it before it is given back
    finals = builder.unsymbolize()
    if not finals:
        return leaves, []
    by_id = {id(t): f for t, f in finals}
    leaves = [by_id.get(id(t), t) if isinstance(t, Tensor) else t for t in leaves]
    top = builder.program.block
    writes = [_BufferWrite(t, f) for t, f in finals if builder.reads_as_param(t) and not t.requires_grad
              and builder.defined_in.get(f._var.name) is top and f._var.name not in builder.program.params]
    return leaves, writes
