"""Process-wide mode flags read on every op call (kept in one object so the check is cheap).

``hooked`` is true while anything other than plain eager execution must see ops: a program
builder (symbolic tensors) or a tracer (recording concrete runs).
"""


class _State:
    __slots__ = ("grad_enabled", "builder", "tracer", "hooked")

    def __init__(self):
        self.grad_enabled = True
        self.builder = None
        self.tracer = None
        self.hooked = False

    def refresh(self):
        self.hooked = self.builder is not None or self.tracer is not None


STATE = _State()
