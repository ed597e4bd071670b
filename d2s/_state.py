"""Mode flags read on every op call, one set per thread (kept in one object so the check is cheap).

``hooked`` is true while anything other than plain eager execution must see ops: a program
builder (symbolic tensors) or a tracer (recording concrete runs).

The flags are thread-local, as grad mode is in PyTorch and trace state in JAX: a program being
built in one thread must never receive ops from another thread's eager calls or builds, and
``no_grad()`` in one thread does not change what another records. A new thread starts with
grad mode on, no builder and no tracer.

Reading a thread-local attribute costs several times a plain one, so the hottest checks
first read ``HOOKED_THREADS[0]`` (how many threads have a builder or tracer, a plain global)
and look at their own ``STATE.hooked`` only when it is not zero.
"""
import threading

from d2s_runtime import forksafe

HOOKED_THREADS = [0]
_COUNT_LOCK = forksafe.Lock()


class _State(threading.local):
    # threading.local runs __init__ once per thread, on its first access from that thread
    def __init__(self):
        self.grad_enabled = True
        self.grad_stack = []  # the modes to restore when the grad-mode blocks entered exit
        self.builder = None
        self.tracer = None
        self.hooked = False
        self.anomaly = None  # the active detect_anomaly() settings, or None
        self.inference = False  # inside d2s.inference_mode()
        self.inference_stack = []
        self.in_backward = 0  # backward passes running in this thread (d2s.autograd.engine)

    def refresh(self):
        hooked = self.builder is not None or self.tracer is not None
        if hooked != self.hooked:
            with _COUNT_LOCK:
                HOOKED_THREADS[0] += 1 if hooked else -1
            self.hooked = hooked


STATE = _State()
