"""A differential fuzzer for ``d2s.jit.to_static``: random programs, run eagerly and converted.

Each program is a function ``f(x, y, n, k, flag)`` (``x``, ``y``: float32 tensors of shape
(3,); ``n``: an int64 0-d tensor; ``k``: a Python int; ``flag``: a Python bool) written as
source text with tensor and Python ``if``s, ``while`` and ``for`` loops (tensor and Python
bounds, zero-trip ones), ``break``/``continue``, early returns nested in loops, closures and
lambdas over variables the loops update, a list grown with ``append`` and shrunk with
``pop``, and a dict updated in place. The program is written to a file (to_static reads real
source), imported, and called eagerly and through ``to_static`` on five inputs (one with
``n`` a Python int).

Verdicts, per program (the first input that shows one):

- ``mismatch``: both return, but values, dtype, shape or Python type differ (a silent wrong
  answer, the worst kind);
- ``error``: the converted call raises where eager returns, or raises another exception type;
- ``hang``: the converted call does not finish within the per-program time limit;
- ``leak``: a converted error message names d2s internals (``TensorArray``, ``Undefined``,
  ``_py_``, ...);
- ``grad`` (with ``--grads``): the values agree but the gradients with respect to ``x`` and
  ``y`` differ, or one side has none.

Run ``python -m tests.fuzz 1000 SEED`` from the repository root (``-v`` prints each failing
program, ``--save DIR`` writes them to DIR). Program ``i`` of seed ``s`` depends only on
``(s, i)``, so one program can be regenerated alone: ``python -m tests.fuzz --show s i``.
``--minimize SEED INDEX`` shrinks a failing program to the statements that keep its failure.
``--backend native`` (or ``auto``) converts with that backend and compares the calls made
once every program of the function runs natively (each input is called once first, then the
background compiles are waited for, outside the time limit); the summary says how many
programs ran natively.
``--device gpu`` (or ``strict``, the tests' cupy-like device) runs both calls with that device as d2s's default,
so the programs' tensors and every op run there (a GPU run needs cupy).
``tests/jit/test_random_programs.py`` runs a fixed-seed slice of 100 programs in the suite.
"""
import argparse
import hashlib
import importlib.util
import os
import random
import re
import sys
import tempfile
import time

import numpy as np

import d2s

try:  # as ``tests.fuzz`` (python -m) or as ``fuzz`` (pytest puts tests/ on sys.path)
    from .conformance.harness import Hang, assert_same, leaked_names, same_exception_type, time_limit
except ImportError:
    from conformance.harness import Hang, assert_same, leaked_names, same_exception_type, time_limit

SRC_DIR = tempfile.mkdtemp(prefix="d2s_fuzz_")
TENSORS = ("a", "b")


class ProgramGen:
    """Writes one random function from a ``random.Random``."""

    def __init__(self, rng, closures=True):
        self.r = rng
        self.closures = closures  # False: no calls of g/h (to look past closure-cell bugs)
        self.counter = 0
        self.budget = 14  # statements; keeps programs and their trip counts small

    # ------------------------------------------------------------------ expressions
    def fresh(self, stem):
        self.counter += 1
        return f"{stem}{self.counter}"

    def const(self):
        return repr(self.r.choice([0.5, -0.25, 1.5, 2.0, -1.0, 0.1, 0.75]))

    def expr(self, depth, loop_vars):
        """A float32 tensor expression of shape (3,)."""
        r = self.r
        if depth >= 2 or r.random() < 0.3:
            leaf = r.choice(("x", "y") + TENSORS + tuple(loop_vars))
            if leaf in loop_vars:  # an int: Python in eager code, maybe a tensor in the program
                return r.choice([f"(x * 0.1 * {leaf})", f"(y / ({leaf} + 1))", f"(a + {leaf} * 0.5)"])
            return leaf
        e1 = self.expr(depth + 1, loop_vars)
        kind = r.randrange(11)
        if kind <= 2:
            return f"({e1} {'+-*'[kind]} {self.expr(depth + 1, loop_vars)})"
        if kind == 3:
            return f"({e1} / (1.0 + {self.expr(depth + 1, loop_vars)} ** 2))"
        if kind == 4:
            return f"d2s.{r.choice(['tanh', 'sin', 'sigmoid', 'abs'])}({e1})"
        if kind == 5:
            return f"({e1}.{r.choice(['sum', 'mean', 'max', 'min'])}() * 0.3 + {self.expr(depth + 1, loop_vars)})"
        if kind == 6:
            return f"({e1} * {self.const()})"
        if kind == 7 and self.closures:
            return "g(" + e1 + ")"          # the closure over `c`
        if kind == 8 and self.closures:
            return "h(" + e1 + ")"          # the lambda over `b`
        if kind in (7, 8):
            return f"d2s.cos({e1})"
        if kind == 9:
            return f"({e1} * k)" if r.random() < 0.5 else f"({e1} + (1.0 if flag else -1.0))"
        e2 = self.expr(depth + 1, loop_vars)
        return f"d2s.where({e1} > {e2}, {e1}, {e2})"

    def tensor_pred(self, loop_vars):
        e = self.expr(1, loop_vars)
        form = self.r.randrange(5)
        if form == 0:
            return f"{e}.sum() > {self.const()}"
        if form == 1:
            return f"{e}.mean() < {self.const()}"
        if form == 2:
            return f"{e}[0] > {self.expr(1, loop_vars)}[1]"
        if form == 3:
            return f"({self.tensor_pred(loop_vars)}) and ({e}.max() > {self.const()})"
        return f"not ({e}.min() > {self.const()})"

    def python_pred(self, loop_vars):
        choices = ["flag", "not flag", "k > 1", "k == 0", "len(acc) > 1"]
        choices += [f"{v} % 2 == 0" for v in loop_vars if v.startswith("p")]
        return self.r.choice(choices)

    def pred(self, loop_vars):
        return self.python_pred(loop_vars) if self.r.random() < 0.3 else self.tensor_pred(loop_vars)

    # ------------------------------------------------------------------ statements
    def block(self, ind, depth, in_loop, loop_vars, at_least=1):
        out = []
        for _ in range(self.r.randint(at_least, 3)):
            out += self.stmt(ind, depth, in_loop, loop_vars)
        return out or [ind + "pass"]

    def stmt(self, ind, depth, in_loop, loop_vars):
        if self.budget <= 0:
            return []
        self.budget -= 1
        r = self.r
        kinds = ["assign"] * 3 + ["augassign", "append", "pop", "dict", "closure_var"]
        if depth < 3:
            kinds += ["if"] * 3 + ["while", "for", "for"]
        if in_loop:
            kinds += ["jump"] * 2
        kinds += ["return"]
        if r.random() < 0.15:
            kinds.append("dict_new_key")
        kind = r.choice(kinds)
        if kind == "assign":
            return [f"{ind}{r.choice(TENSORS)} = {self.expr(0, loop_vars)}"]
        if kind == "augassign":
            return [f"{ind}{r.choice(TENSORS)} {r.choice(['+=', '-='])} {self.expr(1, loop_vars)} * 0.5"]
        if kind == "append":
            return [f"{ind}acc.append({self.expr(1, loop_vars)})"]
        if kind == "pop":
            return [f"{ind}if len(acc) > 0:", f"{ind}    {r.choice(TENSORS)} = {r.choice(TENSORS)} + acc.pop() * 0.5"]
        if kind == "dict":
            return [f"{ind}d['s'] = d['s'] + {self.expr(1, loop_vars)} * 0.25"]
        if kind == "dict_new_key":
            return [f"{ind}d['t'] = {self.expr(1, loop_vars)}"]
        if kind == "closure_var":  # rebinding `c`, which the closure g reads (late binding)
            return [f"{ind}c = {self.expr(1, loop_vars)} * 0.5"]
        if kind == "if":
            lines = [f"{ind}if {self.pred(loop_vars)}:"] + self.block(ind + "    ", depth + 1, in_loop, loop_vars)
            if r.random() < 0.4:
                lines += [f"{ind}elif {self.pred(loop_vars)}:"] + self.block(ind + "    ", depth + 1, in_loop, loop_vars)
            if r.random() < 0.5:
                lines += [f"{ind}else:"] + self.block(ind + "    ", depth + 1, in_loop, loop_vars)
            return lines
        if kind == "while":
            w = self.fresh("w")
            bound = r.choice(["n", "k", str(r.randint(0, 3))])
            cond = f"{w} < {bound}"
            if r.random() < 0.5:
                cond += f" and ({self.tensor_pred(loop_vars)})"
            head = [f"{ind}{w} = 0", f"{ind}while {cond}:", f"{ind}    {w} += 1"]
            body = self.block(ind + "    ", depth + 1, True, loop_vars + (w,))
            tail = []
            if r.random() < 0.15:
                tail = [f"{ind}else:", f"{ind}    a = a + 0.125"]
            return head + body + tail
        if kind == "for":
            p = self.fresh("p")
            rng = r.choice(["range(n)", "range(k)", f"range({r.randint(0, 3)})", "range(1, n + 1)"])
            lines = [f"{ind}for {p} in {rng}:"] + self.block(ind + "    ", depth + 1, True, loop_vars + (p,))
            if r.random() < 0.15:
                lines += [f"{ind}else:", f"{ind}    b = b - 0.125"]
            return lines
        if kind == "jump":
            return [f"{ind}if {self.pred(loop_vars)}:", f"{ind}    {r.choice(['break', 'continue'])}"]
        return [f"{ind}if {self.pred(loop_vars)}:", f"{ind}    return {self.result_expr()}"]

    def result_expr(self):
        return self.r.choice(["a + b * 0.5", "a * 0.5 - b + d['s']", "d2s.tanh(a) + b",
                              "g(b) + x" if self.closures else "b - x"])

    def function(self):
        lines = [
            "def f(x, y, n, k, flag):",
            "    a = x * 1.0",
            "    b = y + 0.5",
            "    c = x * 0.0",
            "    acc = []",
            "    d = {'s': x * 0.0}",
            "",
            "    def g(v):",
            "        return v * 0.5 + c",
            "",
            "    h = lambda v: v - b * 0.25  # noqa: E731",
        ]
        lines += self.block("    ", 0, False, (), at_least=2)
        if self.r.random() < 0.1:  # iterating the list after the loops that grew it
            lines += ["    for v in acc:", "        a = a + v * 0.1"]
        lines += ["    tail = d2s.stack(acc).sum(axis=0) if len(acc) > 0 else x * 0.0",
                  "    return a + b * 0.5 + c + d['s'] + tail * 0.25"]
        return "\n".join(lines) + "\n"


def generate(seed, index, closures=True):
    """The source of program ``index`` of ``seed`` (depends on nothing else)."""
    return ProgramGen(random.Random(f"d2s-fuzz:{seed}:{index}"), closures).function()


def inputs(seed, index, count=5):
    """``count`` argument tuples: zero-trip (n == 0, k == 0) and longer runs, both flags; the
    fifth passes ``n`` as a Python int, so every loop and branch runs as plain Python."""
    rng = np.random.default_rng([seed, index])
    sets = []
    for j in range(count):
        x = rng.normal(size=3).astype(np.float32)
        y = rng.normal(size=3).astype(np.float32)
        n = [0, 2, 3, 1, 2][j % 5]
        k = [1, 0, 2, 3, 2][j % 5]
        sets.append((x, y, n, k, j % 2 == 0, j % 5 != 4))
    return sets


PRELUDE = "import d2s\n\n\n"


def load(source, prelude=PRELUDE, prefix="d2s_fuzz_"):
    """Writes ``prelude + source`` to a real file (to_static reads source files) and imports
    its ``f``."""
    name = prefix + hashlib.sha1((prelude + source).encode()).hexdigest()[:16]
    path = os.path.join(SRC_DIR, name + ".py")
    with open(path, "w") as fh:
        fh.write(prelude + source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.f


def _call(fn, args, grads=False):
    """('ok', result[, (dx, dy)]) or ('raise', exception); with ``grads`` the gradients of a
    weighted sum of the result with respect to x and y (None where autograd gives none)."""
    x, y, n, k, flag, n_is_tensor = args
    tx, ty = d2s.tensor(x, requires_grad=grads), d2s.tensor(y, requires_grad=grads)
    try:
        out = fn(tx, ty, d2s.tensor(n) if n_is_tensor else n, k, flag)
        if grads and isinstance(out, d2s.Tensor) and out.requires_grad:
            (out * d2s.tensor([0.7, -1.3, 0.4])).sum().backward()
    except Hang:
        raise
    except Exception as e:  # the exception type is part of what is compared
        return "raise", e, None
    return "ok", out, (tx.grad, ty.grad)


def _grad_difference(got, want, where):
    for name, g, w in zip("xy", got, want):
        if (g is None) != (w is None):
            return f"{where}: d{name} is {'None' if g is None else 'set'} (converted) vs " \
                   f"{'None' if w is None else 'set'} (eager)"
        if w is not None and not np.allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5):
            return f"{where}: d{name} {g.numpy()} (converted) vs {w.numpy()} (eager)"
    return None


# Refusals the issues ask for: a program that cannot write into the caller's tensors refuses
# an in-place update of an input (eagerly, `b = x; b += 1` changes the caller's x) with a clear
# error at the user's line instead of a silently different answer (to_static now copies such
# an update back into the caller's tensor; build_program still refuses it).
_BY_DESIGN = ("in-place update of an input of the converted function",)


def _refused_by_design(err):
    return isinstance(err, RuntimeError) and any(m in str(err) for m in _BY_DESIGN)


NATIVE_REPORTS = []  # backend_report() of each program checked with a backend other than Python


def _tier_up(static, input_sets, limit, grads):
    """Call ``static`` once per input (errors are compared later), then wait for its native
    compiles (not counted in the time limit: numba's compiler, in the background, holds the GIL
    most of the time, so these calls get a generous limit); records its backend_report()."""
    with time_limit(max(limit, 120.0)):
        for args in input_sets:
            _call(static, args, grads)
    static.wait_native(600)
    NATIVE_REPORTS.append(static.backend_report())


def check_program(source, input_sets, limit=10.0, grads=False, backend="python"):
    """(verdict, detail): verdict is 'ok', 'mismatch', 'error', 'hang', 'leak', or with
    ``grads`` 'grad' (values agree, gradients with respect to x and y do not)."""
    fn = load(source)
    try:
        static = d2s.jit.to_static(fn, backend=backend)
        if backend != "python":
            _tier_up(static, input_sets, limit, grads)
        with time_limit(limit):
            for j, args in enumerate(input_sets):
                where = f"input #{j} (n={args[2]}{'' if args[5] else ' (Python int)'}, k={args[3]}, flag={args[4]})"
                e_kind, e_val, e_grad = _call(fn, args, grads)
                s_kind, s_val, s_grad = _call(static, args, grads)
                if s_kind == "raise":
                    leaks = leaked_names(str(s_val), str(e_val) if e_kind == "raise" else "")
                    if leaks:
                        return "leak", f"{where}: {leaks} in {type(s_val).__name__}: {s_val}"
                if e_kind == "raise" or s_kind == "raise":
                    if e_kind == s_kind and same_exception_type(s_val, e_val):
                        continue
                    if s_kind == "raise" and _refused_by_design(s_val):
                        continue
                    eager = f"raises {type(e_val).__name__}: {e_val}" if e_kind == "raise" else "returns"
                    static_s = f"raises {type(s_val).__name__}: {s_val}" if s_kind == "raise" else "returns"
                    return "error", f"{where}: eager {eager}; converted {static_s}"
                try:
                    assert_same(s_val, e_val, where)
                except AssertionError as e:
                    return "mismatch", str(e)
                if grads:
                    diff = _grad_difference(s_grad, e_grad, where)
                    if diff:
                        return "grad", diff
    except Hang as h:
        return "hang", str(h)
    return "ok", ""


def _indent(line):
    return len(line) - len(line.lstrip())


def _without(lines, i):
    """``lines`` less line ``i`` and the block it opens; an emptied block gets ``pass``."""
    end = i + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > _indent(lines[i])):
        end += 1
    out = lines[:i] + lines[end:]
    if i > 0 and out[i - 1].rstrip().endswith(":") and (i >= len(out) or _indent(out[i]) <= _indent(out[i - 1])):
        out.insert(i, " " * (_indent(out[i - 1]) + 4) + "pass")
    return out


def signature(verdict, detail):
    """What a smaller program must keep to count as the same failure: the verdict, and for
    errors and leaks the converted exception type and the start of its message."""
    if verdict in ("ok", "mismatch", "hang", "grad"):
        return verdict
    m = re.search(r"(?:converted raises |\] in )(\w+): (.{0,40})", detail)
    return verdict, re.sub(r"\d+|'[^']*'", "_", m.group(0)) if m else detail


def minimize(source, input_sets, verdict_detail, limit=10.0, grads=False):
    """A smaller program with the same failure (``signature``): statements (with their blocks)
    are deleted one at a time while it stays, until no deletion keeps it."""
    want = signature(*verdict_detail)
    lines = source.rstrip("\n").split("\n")
    changed = True
    while changed:
        changed = False
        for i in range(len(lines) - 1, 0, -1):
            if i >= len(lines) or not lines[i].strip() or lines[i].strip() == "pass":
                continue
            cand = _without(lines, i)
            text = "\n".join(cand) + "\n"
            try:
                compile(text, "<candidate>", "exec")
            except SyntaxError:
                continue
            if signature(*check_program(text, input_sets, limit, grads)) == want:
                lines, changed = cand, True
    return "\n".join(lines) + "\n"


def run(count, seed, first=0, verbose=False, save=None, limit=10.0, input_count=5, closures=True, grads=False,
        backend="python"):
    """Checks programs ``first .. first+count-1`` of ``seed``; returns {index: (verdict, detail)}
    for the failing ones and prints a summary."""
    failures = {}
    t0 = time.time()
    NATIVE_REPORTS.clear()
    for i in range(first, first + count):
        src = generate(seed, i, closures)
        verdict, detail = check_program(src, inputs(seed, i, input_count), limit, grads, backend)
        if verdict != "ok":
            failures[i] = (verdict, detail)
            if verbose:
                print(f"---- program {i}: {verdict}: {detail}\n{src}", flush=True)
            if save:
                os.makedirs(save, exist_ok=True)
                with open(os.path.join(save, f"fuzz_{seed}_{i}_{verdict}.py"), "w") as fh:
                    fh.write(f'"""{verdict}: {detail}"""\n'.replace("\\", "\\\\") + PRELUDE + src)
    verdicts = ("mismatch", "error", "hang", "leak") + (("grad",) if grads else ())
    counts = {v: sum(1 for f in failures.values() if f[0] == v) for v in verdicts}
    print(f"{count} programs (seed {seed}, from #{first}) in {time.time() - t0:.1f} s: "
          + ", ".join(f"{v} {c}" for v, c in counts.items())
          + f", ok {count - len(failures)}")
    if backend != "python":
        native = sum(1 for r in NATIVE_REPORTS if r == "native")
        print(f"backend={backend!r}: {native} of {len(NATIVE_REPORTS)} functions ran all their programs natively")
    return failures


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("count", type=int, nargs="?", default=1000)
    ap.add_argument("seed", type=int, nargs="?", default=0)
    ap.add_argument("--first", type=int, default=0, help="index of the first program")
    ap.add_argument("--limit", type=float, default=10.0, help="seconds allowed per program")
    ap.add_argument("--no-closures", action="store_true",
                    help="programs that never call the closure g or the lambda h")
    ap.add_argument("--grads", action="store_true",
                    help="also compare the gradients with respect to x and y (verdict 'grad')")
    ap.add_argument("--backend", default="python", choices=("python", "native", "auto"),
                    help="to_static's backend (native: compared once the native compiles are done)")
    ap.add_argument("--device", default="cpu", help="d2s's default device for both calls (gpu: cupy)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each failing program")
    ap.add_argument("--save", metavar="DIR", help="write each failing program to DIR")
    ap.add_argument("--show", nargs=2, type=int, metavar=("SEED", "INDEX"), help="print one program and exit")
    ap.add_argument("--minimize", nargs=2, type=int, metavar=("SEED", "INDEX"),
                    help="print a minimal program with the same verdict as program INDEX of SEED")
    args = ap.parse_args(argv)
    if args.show:
        print(generate(*args.show, closures=not args.no_closures), end="")
        return 0
    if args.minimize:
        seed, index = args.minimize
        src, sets = generate(seed, index, not args.no_closures), inputs(seed, index)
        verdict, detail = check_program(src, sets, args.limit, args.grads)
        if verdict == "ok":
            print(f"program {index} of seed {seed} passes")
            return 0
        small = minimize(src, sets, (verdict, detail), args.limit, args.grads)
        print(f"# {verdict}: {check_program(small, sets, args.limit, args.grads)[1]}\n{small}", end="")
        return 1
    if args.device == "strict":  # the tests' cupy-like device (tests/strict_device.py)
        try:
            from . import strict_device
        except ImportError:
            import strict_device
        strict_device.register()
    d2s.set_default_device(args.device)
    failures = run(args.count, args.seed, args.first, args.verbose, args.save, args.limit,
                   closures=not args.no_closures, grads=args.grads, backend=args.backend)
    for i, (verdict, detail) in sorted(failures.items()):
        print(f"#{i} {verdict}: {detail.splitlines()[0][:200]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
