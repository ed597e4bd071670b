"""Tiered native compilation and per-call overhead of to_static (issue 12, items 3 and 4).

    python benchmarks/bench_tiers.py

Prints, each from fresh processes (the median of --runs):
  * the first call of a converted function (conversion, build, preparation, one run) on the
    python backend, on the native backend with a cold disk cache (the compile runs in the
    background: the call itself runs on Python) and with a warm one (a second process loads
    the compiled function and runs natively from its first call), the same for "auto" (whose
    first call never waits for numba: a warm entry loads in the background), what `import d2s`
    costs, and how long after the first call the native function is ready;
  * numba's own start-up in a fresh process (``import numba``, then the target context that
    numba builds before it can load any cached machine code), the floor of a warm native
    first call;
  * the per-call cost of `to_static(triv)` with `def triv(x): return x + 1` on a (16,)
    float32 tensor, against the raw numpy work, in CPU time of the calling thread.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time
t0 = time.perf_counter()
import numpy as np
import d2s
t1 = time.perf_counter()

def loop(x, n):
    s = d2s.zeros_like(x)
    i = 0
    while i < n:
        if x.sum() > 0:
            s = s + x * 0.5
        else:
            s = s - x
        x = d2s.tanh(x) - 0.1
        i += 1
    return s

# (a tree without backends, for --root: the python backend is all it has)
sf = d2s.jit.to_static(loop, backend=sys.argv[1]) if sys.argv[1] != "python" else d2s.jit.to_static(loop)
x = d2s.tensor(np.linspace(-1, 1, 16, dtype="float32"))
n = d2s.tensor(200)
t2 = time.perf_counter()
sf(x, n)
t3 = time.perf_counter()
report = sf.backend_report() if hasattr(sf, "backend_report") else "python"
if hasattr(sf, "wait_native"):
    # until the native function is ready ("auto" prepares it when the program is reused)
    for _ in range(5):
        sf.wait_native()
        sf(x, n)
        if "pending" not in sf.backend_report():
            break
t4 = time.perf_counter()
print(f"{t1 - t0} {t3 - t2} {report.split(' ')[0]} {t4 - t3}")
"""

NUMBA_STARTUP = r"""
import time
t0 = time.perf_counter()
import numba
t1 = time.perf_counter()
from numba.core.registry import cpu_target
cpu_target.target_context.refresh()  # what numba's cache does before loading an entry
t2 = time.perf_counter()
print(f"{t1 - t0} {t2 - t1}")
"""

PER_CALL = r"""
import time, timeit
import numpy as np
import d2s

@d2s.jit.to_static
def triv(x):
    return x + 1

x = d2s.tensor(np.random.randn(16).astype("float32"))
for _ in range(3):
    triv(x)
a, one = x._data, np.float32(1)
N = 20000
def t(f):
    return min(timeit.repeat(f, number=N, repeat=15, timer=time.thread_time)) / N * 1e6
call, raw = t(lambda: triv(x)), t(lambda: a + one)
with d2s.no_grad():
    nograd = t(lambda: triv(x))
print(f"{call} {nograd} {raw}")
"""


def _run(code, args, env):
    # from a file: to_static converts source it can read (``python -c`` code would run eagerly)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    try:
        out = subprocess.run([sys.executable, f.name, *args], env=env, capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    return out.stdout.split()


def main():
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs)")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the d2s source tree to time (another checkout: --python-only)")
    ap.add_argument("--python-only", action="store_true", help="time the python backend only")
    args = ap.parse_args()
    root = args.root
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, os.path.join(root, "runtime"), env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory() as tmp:
        rows = {}
        cases = [("python", "python", False)]
        if not args.python_only:
            cases += [("native, cold cache", "native", False), ("native, warm cache", "native", True),
                      ("auto, cold cache", "auto", False), ("auto, warm cache", "auto", True)]
        samples = {label: ([], [], [], set()) for label, _, _ in cases}
        if not args.python_only:
            env["D2S_CACHE_DIR"] = os.path.join(tmp, "warm")
            _run(CHILD, ["native"], env)  # fills the warm cache
        # the cases interleaved run by run, so that changes in the machine's load hit them alike
        for r in range(args.runs):
            for label, backend, warm in cases:
                env["D2S_CACHE_DIR"] = os.path.join(tmp, "warm" if warm else f"cold-{backend}{r}")
                imp, first, report, ready = _run(CHILD, [backend], env)
                imports, firsts, readies, reports = samples[label]
                imports.append(float(imp))
                firsts.append(float(first))
                readies.append(float(ready))
                reports.add(report)
        for label, (imports, firsts, readies, reports) in samples.items():
            rows[label] = (statistics.median(imports), statistics.median(firsts), "/".join(sorted(reports)),
                           statistics.median(readies))
        print("first call of a converted 200-step control loop (fresh processes, median of "
              f"{args.runs}):")
        for label, (imp, first, report, ready) in rows.items():
            after = f"; native ready {ready * 1e3:7.1f} ms after it" if label != "python" else ""
            print(f"  {label:20s} first call {first * 1e3:8.1f} ms  (import d2s {imp * 1e3:6.1f} ms; "
                  f"first call ran on {report}{after})")
        base = rows["python"][1]
        for label in [c[0] for c in cases[1:]]:
            print(f"  {label} / python: {rows[label][1] / base:.2f}x")
        if not args.python_only:
            starts = [[float(v) for v in _run(NUMBA_STARTUP, [], env)] for _ in range(args.runs)]
            imp = statistics.median(s[0] for s in starts)
            ctx = statistics.median(s[1] for s in starts)
            print(f"numba start-up in a fresh process (median of {args.runs}): import numba {imp * 1e3:.1f} ms, "
                  f"its target context {ctx * 1e3:.1f} ms (imports scipy.linalg for BLAS): {(imp + ctx) * 1e3:.1f} ms "
                  "before any cached machine code can load")
    call, nograd, raw = (float(v) for v in _run(PER_CALL, [], env))
    print(f"to_static(triv) per call (thread CPU time): {call:.2f} us, under no_grad {nograd:.2f} us; "
          f"raw numpy x + 1: {raw:.2f} us; overhead {call - raw:.2f} us")
    print(f"load average at end:   {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
