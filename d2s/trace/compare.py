"""Trace vs source conversion, side by side (``d2s compare FILE::FUNC``).

:func:`compare` runs a function eagerly, through a trace of its first input (classic, and
with guards) and through ``to_static``, on a set of inputs: the given ones, or inputs
generated from shapes (a random draw scaled and shifted several ways, keeping those that take
distinct control-flow paths as the tracer sees them). It reports, per input, whether each
matches eager, and per control-flow point of the source (file:line), what the trace baked in
and what ``to_static`` turned into a graph op.
"""
import ast
import contextlib
import inspect
import os
import textwrap
import warnings

import numpy as np

from ..jit import to_static
from ..nn import Module
from ..static.builder import ProgramBuilder
from ..static.input_spec import spec_from_text
from ..tensor import Tensor, tensor
from ..user_errors import user_frame
from ..guards import TraceGuardError, baked_text, group_by_line, kind_of_line
from .match import outputs_match
from .tracer import Tracer, _as_args, _call_untraced, _describe_inputs, _table, trace

MAX_INPUTS = 6
_SCALES = (1.0, -1.0, 0.1, 10.0, 3.0, -0.1, -10.0, 0.5)
_SHIFTS = (0.0, 2.0, -2.0)


# ---------------------------------------------------------------------------- inputs
def _spec_of(s):
    """(shape, dtype) from an InputSpec, a (shape, dtype) pair, a shape, or 'float32[3,4]'."""
    if hasattr(s, "shape") and hasattr(s, "dtype"):
        return tuple(4 if d is None else d for d in s.shape), str(s.dtype)
    if isinstance(s, str):
        try:
            return _spec_of(spec_from_text(s))
        except ValueError as e:
            raise ValueError(f"d2s.trace.compare: bad shape {s!r}: {e}") from None
    if isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], str):
        return tuple(4 if d is None or d == -1 else d for d in s[0]), s[1]
    shape = (s,) if isinstance(s, int) else tuple(s)
    return tuple(4 if d is None or d == -1 else d for d in shape), "float32"


def path_of(fn, args):
    """The control-flow path ``fn`` takes on ``args``, as the tracer sees it: the values read
    at each place a tensor's value steered Python (a hashable tuple)."""
    tracer = Tracer(guards=False)
    for a in args:
        if isinstance(a, Tensor):
            tracer.add_input(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tracer:
            fn(*args)
    return tuple(d.key() for d in tracer.decisions)


class InputSizeError(ValueError):
    """Shapes whose generated inputs would take more memory than :data:`MAX_INPUT_BYTES`."""


MAX_INPUT_BYTES = 256 << 20  # the float64 draws the inputs are made from, all together


def generate_inputs(fn, shapes, seed=0, max_inputs=MAX_INPUTS):
    """Inputs of the given shapes covering distinct control-flow paths of ``fn``: one random
    draw, scaled and shifted several ways; the first input of each new path is kept. Shapes
    whose draws would pass :data:`MAX_INPUT_BYTES` raise :class:`InputSizeError` before any
    memory is taken."""
    rng = np.random.default_rng(seed)
    specs = [_spec_of(s) for s in shapes]
    need = sum(8 * int(np.prod(shape, dtype=object)) for shape, _ in specs)
    if need > MAX_INPUT_BYTES:
        raise InputSizeError(f"inputs of shapes {', '.join(str(list(s)) for s, _ in specs)} would take "
                             f"{need / 2**30:.1f} GiB; comparing generates at most {MAX_INPUT_BYTES >> 20} MiB "
                             "of inputs: give smaller shapes (the paths taken rarely depend on the size)")
    base = [rng.standard_normal(shape) for shape, _ in specs]
    kept, seen = [], set()
    for shift in _SHIFTS:
        for scale in _SCALES:
            args = tuple(_make(b * scale + shift, dtype) for b, (_, dtype) in zip(base, specs))
            try:
                path = path_of(fn, args)
            except Exception:
                continue  # an input the function rejects (log of a negative, ...) is not a path
            if path not in seen:
                seen.add(path)
                kept.append(args)
                if len(kept) >= max_inputs:
                    return kept
    return kept or [tuple(_make(b, dtype) for b, (_, dtype) in zip(base, specs))]


def _make(arr, dtype):
    arr = np.asarray(arr)
    if dtype.startswith("int"):
        arr = np.round(arr)
    elif dtype == "bool":
        arr = arr > 0
    return tensor(arr.astype(dtype))


def _default_shapes(fn):
    try:
        params = inspect.signature(fn.forward if hasattr(fn, "forward") else fn).parameters.values()
    except (TypeError, ValueError):
        return [(4,)]
    n = sum(1 for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    return [(4,)] * max(n, 1)


# ---------------------------------------------------------------------------- source points
def control_flow_points(fn):
    """[(filename, lineno, kind, source line)] of if/while/for/and/or/ternary in ``fn``'s source."""
    target = getattr(fn, "forward", fn)
    target = inspect.unwrap(getattr(target, "__func__", target))
    try:
        lines, start = inspect.getsourcelines(target)
        filename = inspect.getsourcefile(target)
    except (OSError, TypeError):
        return []
    tree = ast.parse(textwrap.dedent("".join(lines)))
    points = {}
    for node in ast.walk(tree):
        kind = {ast.If: "if", ast.While: "while", ast.For: "for", ast.IfExp: "if-expr",
                ast.BoolOp: "and/or"}.get(type(node))
        if kind is None:
            continue
        line = start + node.lineno - 1
        if line not in points or kind not in ("and/or",):
            points.setdefault(line, kind)
    out = []
    for ln, k in sorted(points.items()):
        src = _strip_comment(lines[ln - start]).strip()
        out.append((filename, ln, "elif" if k == "if" and src.startswith("elif") else k, src))
    return out


def _strip_comment(line):
    """The line without a trailing comment (tokenized, so '#' inside strings stays)."""
    import io
    import tokenize
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return line.strip()[:tok.start[1]]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return line


def static_ops(program, lines_by_op=None):
    """Control-flow ops of a to_static program: [(type, lineno or None)], the line taken from
    ``lines_by_op`` (id(op) -> line, captured while the program was built) or the op's attrs."""
    out = []
    lines_by_op = lines_by_op or {}

    def walk(block):
        for op in block.ops:
            if op.blocks:  # (a structured op: cond, while, scan, ...)
                line = lines_by_op.get(id(op))
                for key in ("lineno", "line", "source_line"):
                    v = op.attrs.get(key)
                    if line is None and isinstance(v, int):
                        line = v
                loc = op.attrs.get("loc") or op.attrs.get("where") or op.attrs.get("source")
                if line is None and isinstance(loc, str) and ":" in loc:
                    tail = loc.rsplit(":", 1)[1]
                    line = int(tail) if tail.isdigit() else None
                out.append((op.type, line))
            for b in op.blocks.values():
                walk(b)

    walk(program.block)
    return out


@contextlib.contextmanager
def _capture_op_lines():
    """While a program is built, note the user's source line of each control-flow op (the
    frame of converted code that appends it: converted code runs under the user's file and lines)."""
    lines = {}
    original = ProgramBuilder.append_op

    def append_op(self, op):
        if op.blocks:
            loc = user_frame()
            if loc is not None:
                lines[id(op)] = loc[1]
        return original(self, op)

    ProgramBuilder.append_op = append_op
    try:
        yield lines
    finally:
        ProgramBuilder.append_op = original


# ---------------------------------------------------------------------------- the comparison
class Comparison:
    """The result of :func:`compare`: ``rows`` (per input), ``points`` (per control-flow point),
    ``static_ops``; ``str()`` gives the printed tables."""

    def __init__(self, name, rows, points, ops_found, static_note):
        self.name, self.rows, self.points = name, rows, points
        self.static_ops, self.static_note = ops_found, static_note

    @property
    def trace_ok(self):
        return all(r["trace"] == "ok" for r in self.rows)

    @property
    def static_ok(self):
        return all(r["to_static"] == "ok" for r in self.rows)

    def __str__(self):
        head = ("#", "input", "path", "trace (guards off)", "trace (guards on)", "to_static")
        rows = [(r["i"], r["input"], r["path"], r["trace"], r["guarded"], r["to_static"]) for r in self.rows]
        out = [f"d2s compare {self.name}: eager vs trace (traced on input #0) vs to_static", "",
               _table(head, rows), ""]
        head = ("where", "kind", "source", "trace baked in", "to_static")
        out.append(_table(head, [(p["where"], p["kind"], _clip(p["source"], 40), p["trace"], p["to_static"])
                                 for p in self.points]) if self.points else "(no control-flow points found in the source)")
        if self.static_note:
            out += ["", self.static_note]
        return "\n".join(out)

    __repr__ = __str__


def _clip(s, n):
    return s if len(s) <= n else s[:n - 3] + "..."


def compare(fn, inputs=None, shapes=None, seed=0):
    """Run ``fn`` eagerly, traced and converted by ``to_static`` on several inputs, side by side.

    Args:
        fn: a function or ``nn.Module``.
        inputs: a list of argument tuples (a single tensor counts as one argument). The first
            is the one traced.
        shapes: instead of ``inputs``, the argument shapes (``InputSpec``s, ``(shape, dtype)``
            pairs, shapes, or strings such as ``'float32[3]'``): inputs are generated to cover
            distinct control-flow paths. With neither, each positional parameter gets
            ``float32[4]``.
        seed: the random seed for generated inputs.

    Returns:
        A :class:`Comparison`; ``print`` it for the tables.
    """
    if inputs is None:
        inputs = generate_inputs(fn, shapes if shapes is not None else _default_shapes(fn), seed)
    inputs = [_as_args(a) for a in inputs]
    name = getattr(fn, "__qualname__", type(fn).__name__)

    paths, labels = [], {}
    for args in inputs:
        try:
            p = path_of(fn, args)
        except Exception:
            p = ("error",)
        paths.append(labels.setdefault(p, f"P{len(labels) + 1}"))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        classic = trace(fn, inputs[0], guards=False)
        guarded = trace(fn, inputs[0], guards=True)

    static_fn, static_note = None, ""
    try:
        # a module's bound forward, so comparing never replaces the user's module.forward
        static_fn = to_static(fn.forward if _is_module(fn) else fn)
    except Exception as e:
        static_note = f"to_static: failed to convert: {type(e).__name__}: {e}"

    # the program is built (and cached) here first, so its ops' source lines are captured
    ops_found, by_line, static_state = [], {}, "n/a"
    if static_fn is not None:
        try:
            with _capture_op_lines() as lines_by_op:
                prog = _static_program(static_fn, inputs[0])
            ops_found = static_ops(prog, lines_by_op)
        except Exception as e:
            static_note = f"to_static: could not inspect the program: {type(e).__name__}: {e}"
        else:
            static_state = "ok"
            counts = {}
            for kind, line in ops_found:
                counts[kind] = counts.get(kind, 0) + 1
                by_line.setdefault(line, []).append(kind)
            found = ", ".join(f"{n} {k}" for k, n in counts.items()) or "none (every condition was a Python value)"
            static_note = f"to_static graph ops (program for input #0): {found}"
            unmapped = by_line.get(None, [])
            if unmapped:
                static_note += f"; {len(unmapped)} not mapped to source lines"

    rows = []
    for i, args in enumerate(inputs):
        expected = _call_untraced(fn, args)
        row = {"i": str(i), "input": _clip(_describe_inputs(args), 34), "path": paths[i]}
        row["trace"] = _run_and_match(classic, args, expected)
        row["guarded"] = _run_and_match(guarded, args, expected)
        row["to_static"] = "n/a" if static_fn is None else _run_and_match(static_fn, args, expected)
        rows.append(row)

    points = _points(fn, guarded, inputs[0], static_state, by_line)
    return Comparison(name, rows, points, ops_found, static_note)


def _is_module(obj):
    return isinstance(obj, Module)


def _static_program(static_fn, args):
    if hasattr(static_fn, "get_program"):
        return static_fn.get_program(*args)
    fwd = getattr(static_fn, "forward", None)
    if fwd is not None and hasattr(fwd, "get_program"):
        return fwd.get_program(*args)
    raise TypeError("to_static returned an object without get_program")


def _run_and_match(f, args, expected):
    try:
        got = f(*args)
    except TraceGuardError as e:
        where = f"{os.path.basename(e.filename)}:{e.lineno}" if e.filename else e.what
        return f"GUARD {where}"
    except Exception as e:
        return f"error: {type(e).__name__}"
    ok, detail = outputs_match(expected, got)
    return "ok" if ok else "WRONG"


def _points(fn, traced, example, static_state, by_line):
    """Per control-flow point of ``fn``'s source: what the trace baked in, what to_static made."""
    groups = {(os.path.realpath(f or ""), ln): ds for (f, ln), ds in group_by_line(traced.decisions).items()}
    executed = _executed_lines(traced.eager, example)
    points, seen = [], set()
    for filename, line, kind, src in control_flow_points(fn):
        key = (os.path.realpath(filename or ""), line)
        seen.add(key)
        ds = groups.get(key)
        if ds:
            baked = baked_text(ds)
        elif key in executed:
            baked = "nothing (a Python value)"
        else:
            baked = "nothing (not reached)"
        points.append(_point(filename, line, kind, src, baked, static_state, by_line))
    for key, ds in groups.items():  # value reads outside the function's own source (in helpers)
        if key not in seen:
            points.append(_point(ds[0].filename, key[1], kind_of_line(ds[0].code) or "value read", ds[0].code,
                                 baked_text(ds),
                                 static_state, by_line))
    return points


def _executed_lines(fn, args):
    """{(realpath, line)} executed by an eager call of ``fn`` on ``args`` (sys.settrace)."""
    import sys
    hits = set()
    own = os.path.realpath(os.path.dirname(os.path.dirname(__file__)))

    def local(frame, event, arg):
        if event == "line":
            hits.add((os.path.realpath(frame.f_code.co_filename), frame.f_lineno))
        return local

    def glob(frame, event, arg):
        return None if os.path.realpath(frame.f_code.co_filename).startswith(own) else local

    prev = sys.gettrace()
    sys.settrace(glob)
    try:
        _call_untraced(fn, args)
    except Exception:
        pass
    finally:
        sys.settrace(prev)
    return hits


def _point(filename, line, kind, src, baked, static_state, by_line):
    if static_state != "ok":
        static = "n/a"
    elif line in by_line:
        static = " + ".join(sorted(set(by_line[line]))) + " op"
    elif None in by_line:
        static = "(ops not mapped to lines)"
    else:
        static = "Python (no graph op)"
    return {"where": f"{os.path.basename(filename or '?')}:{line}", "kind": kind, "source": src,
            "trace": baked, "to_static": static}


def compare_report(fn, shapes=None):
    """The printed tables of :func:`compare` for ``fn`` (what ``d2s compare FILE::FUNC`` prints).

    ``shapes`` are ``InputSpec``s (``None`` dims become 4) or anything :func:`compare` takes;
    without them, ``fn``'s module may define ``COMPARE_INPUTS`` (a list of argument tuples) or
    ``COMPARE_SHAPES``; otherwise each positional parameter gets ``float32[4]``.
    """
    fn = getattr(fn, "eager", fn)
    module = inspect.getmodule(fn)
    if shapes:
        return str(compare(fn, shapes=shapes))
    inputs = getattr(module, "COMPARE_INPUTS", None)
    if inputs is not None:
        return str(compare(fn, inputs=inputs))
    return str(compare(fn, shapes=getattr(module, "COMPARE_SHAPES", None) or _default_shapes(fn)))
