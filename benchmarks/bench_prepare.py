"""Preparation time of converted functions: value and training programs, by nesting depth and
function length (issue 27).

    python benchmarks/bench_prepare.py [--quick] [--regressions DIR]

Preparing a program is everything a first call does before the program's own work: source
conversion, tracing (every tensor ``if`` traces both branches, every tensor loop its body),
and for a training call (inputs that require grad, then ``.backward()``) the gradient program:
the forward replayed through the gradient rules (a loop's rule replays its body, the loops
nested in it included), partial evaluation into a forward and a backward, and the passes.

1. Nesting depth 1..6: tensor ``while`` loops (and, alternately, ``for`` over a tensor range)
   nested in each other, each level holding a tensor ``if``. A loop's gradient replays the
   loops inside it, so the training program of depth d holds ~d^2 ops: its preparation may grow
   quadratically with the depth (target: slope <= 2), never exponentially.
2. Function length: 4..32 blocks one after another (a tensor ``while`` holding a tensor ``if``
   each): preparation should grow linearly (target: slope ~1).
3. A tensor ``if`` inside an unrolled Python loop, ``for i in range(n): if x.sum() > i: x =
   x - 1.0``, n = 50..400: near-linear (it was n^4: 17.8 s at n = 100); target < 1 s at n = 200.
4. With ``--regressions DIR`` (``../shared/regressions``): the training preparation of each
   ``slow_grad_*.py`` there (target < 5 s each; they once took minutes).

Each row is the best of a few fresh conversions (a new module each time, so no cache helps),
in CPU seconds of this process (the machine may be shared) and wall seconds. Slopes are the
exponent k of time ~ size^k between consecutive sizes, and over the whole range (least squares
on the logs).
"""
import argparse
import glob
import importlib.util
import math
import os
import sys
import tempfile
import time

import numpy as np

import d2s

_TMP = tempfile.mkdtemp(prefix="d2s_bench_prepare_")
_N = [0]


def fresh(src, name="f"):
    """A new function object from ``src`` (a new module file each time)."""
    _N[0] += 1
    mod = f"d2s_prepare_{_N[0]}"
    path = os.path.join(_TMP, mod + ".py")
    with open(path, "w") as fh:
        fh.write(src + f"\n# variant {_N[0]}\n")
    spec = importlib.util.spec_from_file_location(mod, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


def nested_source(depth):
    """Loops nested ``depth`` deep (while, for over a tensor range, alternately), each level
    holding a tensor ``if``."""
    lines = ["import d2s", "", "", "def f(x, y, n):"]
    ind = "    "
    for level in range(1, depth + 1):
        if level % 2:
            lines += [f"{ind}k{level} = d2s.tensor(0)", f"{ind}while k{level} < n:",
                      f"{ind}    k{level} = k{level} + 1"]
        else:
            lines += [f"{ind}for i{level} in range(n):"]
        ind += "    "
        lines += [f"{ind}if x.sum() > {0.1 * level:.1f}:", f"{ind}    x = d2s.tanh(x * 0.9 + y)",
                  f"{ind}else:", f"{ind}    y = d2s.sin(y) * 0.5 + x"]
    lines.append("    return x + y")
    return "\n".join(lines) + "\n"


def long_source(blocks):
    """``blocks`` tensor loops one after another, each holding a tensor ``if``."""
    lines = ["import d2s", "", "", "def f(x, y, n):"]
    for b in range(blocks):
        lines += [f"    k{b} = d2s.tensor(0)", f"    while k{b} < n:", f"        k{b} = k{b} + 1",
                  f"        if (x * {b % 3 + 1}).sum() > y.sum():", "            x = d2s.tanh(x * 0.9 + y)",
                  "        else:", "            y = d2s.sin(y) * 0.5 + x * 0.1"]
    lines.append("    return x + y")
    return "\n".join(lines) + "\n"


def unrolled_source(n):
    return f"""import d2s


def f(x):
    for i in range({n}):
        if x.sum() > i:
            x = x - 1.0
    return x
"""


def _inputs(requires_grad):
    x = d2s.tensor([0.1, -0.2, 0.3], requires_grad=requires_grad)
    y = d2s.tensor([0.5, 0.1, -0.3], requires_grad=requires_grad)
    return x, y, d2s.tensor(2)


def prepare(src, training, runs, args=None):
    """(best CPU seconds, best wall seconds) of a first call of ``to_static`` of a fresh copy of
    ``src``'s ``f`` (with ``training``: on inputs requiring grad, then ``.backward()``)."""
    cpu, wall = [], []
    for _ in range(runs):
        static = d2s.jit.to_static(fresh(src))
        call_args = args(training) if args is not None else _inputs(training)
        c, w = time.process_time(), time.perf_counter()
        out = static(*call_args)
        if training:
            out.sum().backward()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def slopes(sizes, times):
    """Exponents between consecutive sizes, and the least-squares exponent over all of them."""
    pairs = [math.log(t2 / t1) / math.log(s2 / s1)
             for (s1, t1), (s2, t2) in zip(zip(sizes, times), zip(sizes[1:], times[1:]))]
    xs, ys = np.log(sizes), np.log(times)
    fit = float(np.polyfit(xs, ys, 1)[0]) if len(sizes) > 1 else float("nan")
    return pairs, fit


def _table(title, label, sizes, make_src, runs, training_too=True, args=None, target=None):
    print(title)
    value, train = [], []
    for s in sizes:
        src = make_src(s)
        v = prepare(src, False, runs, args)
        value.append(v[0])
        row = f"  {label} {s:>4}   value {v[0]:7.3f} s cpu ({v[1]:7.3f} s wall)"
        if training_too:
            t = prepare(src, True, runs, args)
            train.append(t[0])
            row += f"   training {t[0]:7.3f} s cpu ({t[1]:7.3f} s wall)"
        print(row, flush=True)
    for name, times in (("value", value), ("training", train)):
        if not times:
            continue
        pairs, fit = slopes(sizes, [max(t, 1e-4) for t in times])
        ok = "" if target is None else f"   target slope <= {target}: {'ok' if fit <= target else 'MISSED'}"
        print(f"  slope ({name}): {', '.join(f'{k:.2f}' for k in pairs)}; fit {fit:.2f}{ok}")
    return value, train


def bench_regressions(directory, runs):
    """Training preparation of the slow_grad_*.py regressions in ``directory``."""
    print(f"4. training preparation of {directory}/slow_grad_*.py (target < 5 s each)")
    sys.path.insert(0, directory)
    rng = np.random.default_rng(0)
    for path in sorted(glob.glob(os.path.join(directory, "slow_grad_*.py"))):
        name = os.path.basename(path)[:-3]
        with open(path) as fh:
            src = fh.read()
        best = None
        for _ in range(runs):
            fn = fresh(src, name)
            xs = [d2s.tensor(rng.normal(size=3).astype(np.float32), requires_grad=True) for _ in range(3)]
            c, w = time.process_time(), time.perf_counter()
            d2s.jit.to_static(fn)(*xs, d2s.tensor(int(rng.integers(0, 4)))).sum().backward()
            got = (time.process_time() - c, time.perf_counter() - w)
            best = got if best is None or got[0] < best[0] else best
        print(f"  {name:<14} training {best[0]:7.3f} s cpu ({best[1]:7.3f} s wall)   "
              f"{'ok' if best[0] < 5 else 'MISSED'}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one run per size, shorter functions")
    ap.add_argument("--regressions", metavar="DIR", help="also time the slow_grad_*.py programs in DIR")
    args = ap.parse_args(argv)
    runs = 1 if args.quick else 3
    prepare(nested_source(2), True, 1)  # imports and first-use caches, not timed
    _table("1. nesting depth (loops nested d deep, a tensor if at each level)", "depth", list(range(1, 7)),
           nested_source, runs, target=2.0)
    _table("2. function length (tensor loops one after another)", "blocks",
           [4, 8, 16] if args.quick else [4, 8, 16, 32], long_source, runs, target=1.3)
    value, _ = _table("3. a tensor if in an unrolled Python loop of n iterations", "n",
                      [50, 100, 200] if args.quick else [50, 100, 200, 400], unrolled_source, runs,
                      training_too=False, args=lambda training: (d2s.tensor([10.0, 20.0, 30.0]),),
                      target=1.3)
    print(f"  n = 200: {value[2]:.3f} s cpu   target < 1 s: {'ok' if value[2] < 1 else 'MISSED'}")
    if args.regressions:
        bench_regressions(args.regressions, runs)


if __name__ == "__main__":
    main()
