"""Registering corpus cases and checking one: eager vs converted, value by value.

The rule checked is the one the converter promises: a converted call returns exactly what the
eager call returns (same Python types, same tensor dtypes, shapes and values, same mutations of
its list/dict/tensor arguments) or raises the same exception type. A case listed as REFUSED may
instead raise a clear error that names the user's file and line.
"""
import contextlib
import copy
import math
import signal
import sys

import numpy as np

import d2s

# Names of d2s internals that must never reach a user's error message.
INTERNAL_NAMES = ("TensorArray", "Undefined", "_py_", "_static_", "SymbolicValue", "__d2s",
                  "is not defined in this program", "'retval'")

REGISTRY = {}


class Case:
    """One corpus function: ``fn`` (or a module class ``make``) and the argument tuples to try."""

    def __init__(self, case_id, fn, inputs, make=None, grads=False):
        self.id, self.fn, self.inputs, self.make, self.grads = case_id, fn, inputs, make, grads

    def __repr__(self):
        return f"Case({self.id})"


def _theme(module_name):
    return module_name.rsplit(".", 1)[-1]


def case(*inputs):
    """Registers the decorated function, to be called on each tuple in ``inputs`` (a bare
    value stands for a 1-tuple). Tensors in the inputs are copied afresh for every call."""
    def register(fn):
        cid = f"{_theme(fn.__module__)}.{fn.__name__}"
        assert cid not in REGISTRY, f"duplicate corpus case {cid}"
        REGISTRY[cid] = Case(cid, fn, [a if isinstance(a, tuple) else (a,) for a in inputs])
        return fn
    return register


def module_case(*inputs, grads=True):
    """Registers an ``nn.Module`` class (built with no arguments, same seed for the eager and
    the converted copy); with ``grads`` the parameter gradients are compared too."""
    def register(cls):
        cid = f"{_theme(cls.__module__)}.{cls.__name__}"
        assert cid not in REGISTRY, f"duplicate corpus case {cid}"
        REGISTRY[cid] = Case(cid, None, [a if isinstance(a, tuple) else (a,) for a in inputs], make=cls,
                             grads=grads)
        return cls
    return register


def T(data, dtype=None):
    """A tensor input (floats give float32, ints int64, as ``d2s.tensor``)."""
    return d2s.tensor(data, dtype=dtype)


# ---------------------------------------------------------------------- comparing
def fresh(obj):
    """A deep copy of an argument: tensors re-created from their data, containers rebuilt."""
    if isinstance(obj, d2s.Tensor):
        return d2s.tensor(obj.numpy().copy())
    if isinstance(obj, list):
        return [fresh(o) for o in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(fresh(o) for o in obj)
    if isinstance(obj, dict):
        return {k: fresh(v) for k, v in obj.items()}
    if isinstance(obj, (int, float, str, bool, type(None))):
        return obj
    return copy.deepcopy(obj)


def describe(obj):
    """A short text for messages (tensors as dtype[shape] and values)."""
    if isinstance(obj, d2s.Tensor):
        return f"Tensor({obj.dtype}{list(obj.shape)}: {np.array2string(obj.numpy(), precision=4)})"
    if isinstance(obj, (list, tuple)):
        inner = ", ".join(describe(o) for o in obj)
        return f"[{inner}]" if isinstance(obj, list) else f"({inner})"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in obj.items()) + "}"
    return repr(obj)


def assert_same(got, want, where="result"):
    """Raises AssertionError naming the first place where ``got`` differs from ``want``."""
    if type(got) is not type(want):
        raise AssertionError(f"{where}: type {type(got).__name__} (converted) vs {type(want).__name__} (eager): "
                             f"{describe(got)} vs {describe(want)}")
    if isinstance(want, d2s.Tensor):
        if str(got.dtype) != str(want.dtype):
            raise AssertionError(f"{where}: dtype {got.dtype} (converted) vs {want.dtype} (eager)")
        if tuple(got.shape) != tuple(want.shape):
            raise AssertionError(f"{where}: shape {tuple(got.shape)} (converted) vs {tuple(want.shape)} (eager)")
        _same_array(got.numpy(), want.numpy(), where)
    elif isinstance(want, np.ndarray):
        if got.dtype != want.dtype or got.shape != want.shape:
            raise AssertionError(f"{where}: array {got.dtype}{got.shape} vs {want.dtype}{want.shape}")
        _same_array(got, want, where)
    elif isinstance(want, (list, tuple)):
        if len(got) != len(want):
            raise AssertionError(f"{where}: length {len(got)} (converted) vs {len(want)} (eager): "
                                 f"{describe(got)} vs {describe(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, dict):
        if list(got) != list(want):
            raise AssertionError(f"{where}: keys {list(got)} (converted) vs {list(want)} (eager)")
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, float):
        if not (got == want or (math.isnan(got) and math.isnan(want))):
            raise AssertionError(f"{where}: {got!r} (converted) vs {want!r} (eager)")
    elif want is None or isinstance(want, (int, str, bool, range, slice)):
        if got != want:
            raise AssertionError(f"{where}: {got!r} (converted) vs {want!r} (eager)")
    elif hasattr(want, "__dict__") and not callable(want):
        assert_same(vars(got), vars(want), f"{where}.__dict__")
    else:
        if got != want:
            raise AssertionError(f"{where}: {got!r} (converted) vs {want!r} (eager)")


def _same_array(g, w, where):
    # to the bit (NaNs equal to NaNs): a converted call returns exactly what eager returns
    ok = np.array_equal(g, w, equal_nan=w.dtype.kind in "fc")
    if not ok:
        raise AssertionError(f"{where}: values {g} (converted) vs {w} (eager)")


class Hang(BaseException):
    """A call ran past its time limit. A BaseException, as KeyboardInterrupt is: the code under
    test must not take it for an error of its own (d2s falls back to slower paths on one, and
    the fuzzer then compared what the fallback computed)."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raises ``Hang`` in the running code after ``seconds`` (main thread, POSIX only)."""
    if seconds is None or not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):
        raise Hang(f"no result after {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def outcome(fn, args):
    """('ok', result) or ('raise', exception) of ``fn(*args)``."""
    try:
        return "ok", fn(*args)
    except Hang:
        raise
    except Exception as e:  # every exception type is part of what is compared
        return "raise", e


def same_exception_type(got, want):
    """Whether the converted exception ``got`` is what eager's ``want`` is: the same type, or a
    d2s subclass of it (a program's assert raises ``ProgramAssertionError(AssertionError)``,
    which ``except AssertionError`` still catches)."""
    if type(got) is type(want):
        return True
    return isinstance(got, type(want)) and type(got).__module__.split(".")[0] in ("d2s", "d2s_runtime")


def leaked_names(message, eager_message=""):
    return [n for n in INTERNAL_NAMES if n in message and n not in eager_message]


def _missing_api(exc):
    """An AttributeError for a d2s name: the case uses an API d2s lacks, not Python behaviour."""
    text = str(exc)
    return isinstance(exc, AttributeError) and ("module 'd2s" in text or "'Tensor' object" in text)


def names_user_line(exc, filename):
    """Whether the error text (or its traceback's innermost user frame) points at ``filename``."""
    return filename in str(exc)


# ---------------------------------------------------------------------- running one case
def _float_outputs(out):
    if isinstance(out, d2s.Tensor):
        return [out] if out.dtype.is_floating_point and out.requires_grad else []
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _float_outputs(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _float_outputs(o)]
    return []


def _backward(out):
    ts = _float_outputs(out)
    if not ts:
        return False
    loss = None
    for i, t in enumerate(ts):
        term = (t * (1.0 + 0.25 * i)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    return True


def run_case(c, refused=None, limit=5):
    """Checks case ``c`` on all its inputs; raises AssertionError with the first difference.

    ``refused``: None, or the reason this case may raise a clear error when converted (the
    error must then name the corpus file)."""
    if c.make is not None:
        d2s.manual_seed(0)
        eager_obj = c.make()
        d2s.manual_seed(0)
        static_obj = d2s.jit.to_static(c.make())
        static_obj.load_state_dict(eager_obj.state_dict())
        eager_fn, static_fn = eager_obj, static_obj
        filename = sys.modules[c.make.__module__].__file__
    else:
        eager_fn, static_fn = c.fn, d2s.jit.to_static(c.fn)
        filename = c.fn.__code__.co_filename
    converted_ok = False
    for k, args in enumerate(c.inputs):
        where = f"{c.id} on input #{k} {describe(list(args))}"
        e_args, s_args = fresh(list(args)), fresh(list(args))
        e_kind, e_val = outcome(eager_fn, e_args)
        if e_kind == "raise" and _missing_api(e_val):
            raise AssertionError(f"{where}: the eager call itself fails (an API the case needs is missing): "
                                 f"{type(e_val).__name__}: {e_val}") from e_val
        try:
            with time_limit(limit):
                s_kind, s_val = outcome(static_fn, s_args)
        except Hang as h:
            raise AssertionError(f"{where}: converted call hangs ({h})") from None
        if s_kind == "raise":
            msg = f"{type(s_val).__name__}: {s_val}"
            leaks = leaked_names(str(s_val), str(e_val) if e_kind == "raise" else "")
            if leaks:
                raise AssertionError(f"{where}: internal names {leaks} in the error: {msg}") from s_val
        if refused is not None and s_kind == "raise" and (e_kind == "ok" or not same_exception_type(s_val, e_val)):
            if not names_user_line(s_val, filename):
                raise AssertionError(f"{where}: refused without naming the user's line: "
                                     f"{type(s_val).__name__}: {s_val}") from s_val
            continue
        if e_kind == "raise" and s_kind == "raise":
            if not same_exception_type(s_val, e_val):
                raise AssertionError(f"{where}: converted raises {type(s_val).__name__}: {s_val}; "
                                     f"eager raises {type(e_val).__name__}: {e_val}") from s_val
            continue
        if e_kind == "raise":
            raise AssertionError(f"{where}: eager raises {type(e_val).__name__}: {e_val}; converted returns "
                                 f"{describe(s_val)}")
        if s_kind == "raise":
            raise AssertionError(f"{where}: converted raises {type(s_val).__name__}: {s_val}; eager returns "
                                 f"{describe(e_val)}") from s_val
        converted_ok = True
        assert_same(s_val, e_val, f"{where}: result")
        assert_same(s_args, e_args, f"{where}: arguments after the call")
        if c.make is None:
            # the same call again: a program's first call runs it as built, later ones the
            # optimized program (the passes must not change a bit either)
            again_args = fresh(list(args))
            with time_limit(limit):
                a_kind, a_val = outcome(static_fn, again_args)
            if a_kind == "raise":
                raise AssertionError(f"{where}: the second converted call raises {type(a_val).__name__}: "
                                     f"{a_val}") from a_val
            assert_same(a_val, e_val, f"{where}: result of the second call")
        if c.make is not None and c.grads:
            if _backward(e_val):
                _backward(s_val)
                for (name, pe), (_, ps) in zip(eager_obj.named_parameters(), static_obj.named_parameters()):
                    if (pe.grad is None) != (ps.grad is None):
                        raise AssertionError(f"{where}: .grad of {name} is {'None' if ps.grad is None else 'set'} "
                                             f"(converted) vs {'None' if pe.grad is None else 'set'} (eager)")
                    if pe.grad is not None:
                        _same_array(ps.grad.numpy(), pe.grad.numpy(), f"{where}: grad of {name}")
                for m in (eager_obj, static_obj):  # each input's gradients on their own
                    for p in m.parameters():
                        p.grad = None
    # a case that passes by running eagerly (no program built) would prove nothing
    programs = static_obj.forward.programs if c.make is not None else static_fn.programs
    if converted_ok and not programs:
        raise AssertionError(f"{c.id}: no program was built; the converted calls ran eagerly")
