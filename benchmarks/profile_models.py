"""Where a ``bench_models.py`` workload's converted programs spend their time, op by op.

    python benchmarks/profile_models.py gpt [--steps 3] [--threads 1] [--top 30] [--detail OPS] [--tiny]

Runs the workload's ``d2s static`` column with every program on the step interpreter, each
op's kernel timed by the thread's CPU time (not wall time: on a shared machine the wall
clock charges other processes' work to whatever runs), and prints the ops by total time,
grouped by op type and output shape, for the forward and backward programs together. The
interpreter runs the same kernels as the generated code (which inlines ufunc calls), so the
ranking holds for both; the per-call overhead of the interpreter is not part of any op's time.
"""
import argparse
import os
import sys

if __name__ == "__main__":
    _t = "1"
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            _t = sys.argv[i + 1]
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _t
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import collections  # noqa: E402
import time  # noqa: E402


def _layout(a):
    return f"{tuple(a.shape)}{'' if a.flags.c_contiguous else ' strides ' + str(a.strides)}"


def _timed_run_steps(totals, detail=()):
    """A replacement for ``Executor._run_steps`` charging each step's thread CPU time to
    ``totals[(op type, output shape)]`` (for the op types in ``detail``, to their inputs'
    shapes and strides)."""
    from d2s_runtime.executor import KERNEL, MULTI, OUT, UFUNC1, UFUNC2

    def run_steps(self, plan, env):
        xp, ndarray, clock = self.xp, self._ndarray, time.thread_time
        for s, v in plan.presets:
            env[s] = v
        for s in plan.free_first:
            env[s] = None
        ops = plan.block.ops
        for pos, step in enumerate(plan.steps):
            kind, fn, ins, out, attrs, frees = step
            op = ops[plan.order[pos]]
            layouts = (" @ ".join(_layout(env[i]) for i in ins if hasattr(env[i], "strides"))
                       if op.type in detail else None)
            t = clock()
            if kind == UFUNC2:
                r = fn(env[ins[0]], env[ins[1]])
                env[out] = r if type(r) is ndarray else xp.asarray(r)
            elif kind == UFUNC1:
                r = fn(env[ins[0]])
                env[out] = r if type(r) is ndarray else xp.asarray(r)
            elif kind == KERNEL:
                r = fn(xp, *[env[i] for i in ins], **attrs)
                env[out] = r if type(r) is ndarray else xp.asarray(r)
            elif kind == MULTI:
                for o, r in zip(out, fn(xp, *[env[i] for i in ins], **attrs)):
                    env[o] = r if type(r) is ndarray else xp.asarray(r)
            elif kind == OUT:
                env[out] = fn(env, [env[i] for i in ins])
            dt = clock() - t
            if not op.blocks:  # (a structured op's body ops are counted themselves)
                first = env[out[0] if isinstance(out, tuple) else out]
                key = (op.type, layouts or tuple(getattr(first, "shape", ())))
                totals[key][0] += dt
                totals[key][1] += 1
            for s in frees:
                env[s] = None
        return [env[s] for s in plan.output_slots]

    return run_steps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--detail", default="", help="comma-separated op types grouped by their inputs' layouts")
    p.add_argument("--tiny", action="store_true", help="the workload at bench_models.py's tiny sizes (a check)")
    args = p.parse_args(argv)
    saved, sys.argv = sys.argv, [sys.argv[0], "--threads", str(args.threads)]
    import bench_models as B
    sys.argv = saved
    from d2s_runtime import Executor
    from d2s_runtime.tiers import TieredRunner
    orig, orig_steps = TieredRunner.__init__, Executor._run_steps

    def interpreted(self, program, device="cpu", backend=None, **kw):
        orig(self, program, device, "python", **{**kw, "mode": "interp"})
    TieredRunner.__init__ = interpreted
    totals = collections.defaultdict(lambda: [0.0, 0])
    Executor._run_steps = _timed_run_steps(totals, set(args.detail.split(",")))
    try:
        state, _ = B.initial_weights(args.workload, args.tiny)
        f = B.build_column(args.workload, "d2s static", state, 0, args.tiny)
        f()
        f()
        totals.clear()
        c0 = time.process_time()
        for _ in range(args.steps):
            f()
        cpu = (time.process_time() - c0) / args.steps
    finally:  # (the patches are undone also when the workload fails)
        TieredRunner.__init__, Executor._run_steps = orig, orig_steps
    by_type = collections.defaultdict(float)
    for (t, _), (s, _) in totals.items():
        by_type[t] += s / args.steps
    timed = sum(by_type.values())
    print(f"{args.workload}: {cpu * 1e3:.1f} ms process CPU per step ({args.threads} BLAS thread(s)); "
          f"ops {timed * 1e3:.1f} ms, the rest (eager loss/optimizer/autograd, interpreter) {(cpu - timed) * 1e3:.1f} ms")
    print("by op type:")
    for t, s in sorted(by_type.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {s * 1e3:8.2f} ms  {t}")
    print("by op type and output shape (inputs' layouts for --detail ops):")
    for (t, shape), (s, n) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {s / args.steps * 1e3:8.2f} ms  {n // args.steps:4d}x  {t} {shape}")


if __name__ == "__main__":
    main()
