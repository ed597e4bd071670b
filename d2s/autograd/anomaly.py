"""Finding where NaN/inf first appears: ``detect_anomaly()`` (backward); the forward check
behind ``to_static(..., check_numerics=True)`` is ``d2s.jit.numerics``.

``detect_anomaly`` (like ``torch.autograd.detect_anomaly``) remembers, for every autograd node
recorded inside it, the user's source line that ran the op, and checks every gradient the
backward computes: the first node whose gradient holds NaN or inf raises ``RuntimeError``
naming the backward function, the forward op and that line. For a to_static program (whose
backward is one ``RunProgramBackward0``) a non-finite gradient makes the program be replayed
op by op, with each op attributed to the line of the user's source that built it, so the error
names the op and line inside the program, as in eager mode.

The mode is per thread, as every mode flag is (see ``d2s/_state.py``); ``ACTIVE_THREADS[0]``
lets the hot paths skip the thread-local look-up while no thread uses it.
"""
import os
import sys
import weakref

from d2s_runtime.device import xp_of
from d2s_runtime import forksafe

from .._state import STATE

ACTIVE_THREADS = [0]
_COUNT_LOCK = forksafe.Lock()
_SITES = weakref.WeakKeyDictionary()  # autograd node -> (file, line) of the op's user call

_D2S_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_DIRS = (_D2S_DIR + os.sep, os.path.join(os.path.dirname(_D2S_DIR), "runtime") + os.sep)


class NumericsError(RuntimeError):
    """A NaN or inf found by ``detect_anomaly`` or ``to_static(..., check_numerics=True)``."""


def user_site(skip=1):
    """``(file, line)`` of the innermost frame outside d2s (the user's code; converted code runs
    under the user's own file and line numbers), or None."""
    frame = sys._getframe(skip)
    while frame is not None:
        f = frame.f_code.co_filename
        if not f.startswith(_SKIP_DIRS) and "importlib" not in f and not f.startswith("<frozen"):
            return f, frame.f_lineno
        frame = frame.f_back
    return None


def describe_site(site):
    """``'file:line: source text'`` for a site from :func:`user_site`."""
    if site is None:
        return "an unknown line (run the forward pass inside detect_anomaly() too to know where)"
    import linecache
    f, ln = site
    text = linecache.getline(f, ln).strip()
    return f"{f}:{ln}" + (f": {text}" if text else "")


class detect_anomaly:
    """Context manager (and decorator) finding the op whose backward first makes NaN or inf.

    Inside it, the forward remembers which line of the user's code ran each op, and backward
    checks every gradient it computes: the first non-finite one raises ``RuntimeError``
    (:class:`NumericsError`) naming the backward function (``'LogBackward0'``), the forward op
    and the user's line, for eager code and for to_static programs alike. It slows both passes
    down; use it to debug.

    Args:
        check_nan: check gradients for NaN/inf (``False``: only remember the lines).
    """

    def __init__(self, check_nan=True):
        self.check_nan = bool(check_nan)

    def __enter__(self):
        # this thread's mode is a fresh object holding the previous one, so a single
        # detect_anomaly object may be entered by several threads at once
        prev = STATE.anomaly
        if prev is None:
            with _COUNT_LOCK:
                ACTIVE_THREADS[0] += 1
        STATE.anomaly = _AnomalyMode(self.check_nan, prev)
        return self

    def __exit__(self, *exc):
        STATE.anomaly = STATE.anomaly.prev
        if STATE.anomaly is None:
            with _COUNT_LOCK:
                ACTIVE_THREADS[0] -= 1
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper



class _AnomalyMode:
    """One thread's active detect_anomaly, and what a program replay needs to know."""

    def __init__(self, check_nan, prev):
        self.check_nan, self.prev = check_nan, prev
        self.site = None  # while a program is replayed: the line that built the current op
        self.locations = None  # ... and its ops' user lines, by output name

    def before_op(self, op):
        if self.locations is not None and op.outputs:
            self.site = self.locations.get(op.outputs[0])

    def after_op(self, op, outs, args):
        self.site = None


def remember(node, site=None):
    """Record the user's line for a node being created (anomaly mode is on)."""
    mode = STATE.anomaly
    if mode is None:
        return
    _SITES[node] = site or mode.site or user_site(3)


def site_of(node):
    return _SITES.get(node)


def nonfinite(t):
    d = getattr(t, "_data", None)
    if d is None or getattr(d, "dtype", None) is None or d.dtype.kind not in "fc":
        return None
    xp = xp_of(d)
    bad = ~xp.isfinite(d)
    if not bool(bad.any()):
        return None
    return "nan" if bool(xp.isnan(d).any()) else "inf"


def check_gradients(node, out_grads, in_grads):
    """Raise if a gradient ``node``'s backward returned (``in_grads``, for output gradients
    ``out_grads``) holds NaN or inf (anomaly mode)."""
    mode = STATE.anomaly
    if mode is None or not getattr(mode, "check_nan", False):
        return
    for i, g in enumerate(in_grads):
        kind = nonfinite(g) if g is not None else None
        if kind is None:
            continue
        if node.op == "run_program":
            _locate_in_program(node, out_grads)  # raises naming the op inside the program
        raise NumericsError(
            f"Function '{node.name()}' returned {kind} values in its {i}th output; the forward op "
            f"{node.op!r} ran at {describe_site(site_of(node))}. Its backward turned finite gradients "
            f"into {kind}: check that line's inputs (log or sqrt of 0, division by 0, overflow), or "
            "clip the gradients (d2s.nn.utils.clip_grad_norm_)")


def _locate_in_program(node, out_grads):
    """A to_static program's backward gave NaN/inf: replay its forward op by op (each op
    attributed to the line that built it) and differentiate that replay with the eager
    rules, so the failing op raises by name."""
    if node.saved is None or any(g is None for g in out_grads):
        return
    mode = STATE.anomaly
    mode.locations = getattr(node.entry.raw_program, "op_locations", {})
    prev = STATE.grad_enabled
    STATE.grad_enabled = True
    try:
        # with grad mode on, the node's rule is that differentiable replay (jit/concrete.py)
        node.rule(node, *out_grads)
    finally:
        STATE.grad_enabled = prev
        mode.locations = None
