"""Static training: converting only the forward vs eager vs the whole step converted.

    python benchmarks/bench_static_training.py [--quick] [--one-thread]

For an MLP (784-512-512-10, softmax cross-entropy) at batches 32/128/512 and an Elman RNN
(T=64, B=32, D=64, H=256; its Python ``for`` over ``range(T)`` unrolls into the program; the
same RNN with a tensor ``while`` keeps one loop, whose gradient pops the carries the forward
pushed), one training step's forward and backward computed three ways:

* eager: the d2s module run eagerly, ``loss.backward()``;
* forward-only: ``d2s.jit.to_static(model)``, ``loss.backward()`` on its output (the forward
  program keeps the residuals its backward needs, so the backward does not recompute it);
* whole step: ``d2s.jit.to_static`` of a function returning ``d2s.func.value_and_grad`` of
  the loss (one program for forward and backward).

It prints each time per step, the ratios forward-only / eager and forward-only / whole step,
and the peak traced memory (tracemalloc) of one step in each form. Timings are best of
repeats, the forms interleaved so that machine noise hits them alike. ``--one-thread`` runs
BLAS on one thread: on a loaded machine, BLAS threads waiting for busy cores make the matmul
times (and every ratio) swing by large factors; ``--cpu-time`` then times by process CPU time.
"""
import argparse
import gc
import os
import sys
import time
import tracemalloc

if __name__ == "__main__" and "--one-thread" in sys.argv:  # before numpy loads BLAS
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"

import numpy as np

import d2s
import d2s.nn.functional as F
from d2s import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)

    def forward(self, x, y):
        h = F.relu(self.l1(x))
        h = F.relu(self.l2(h))
        return F.cross_entropy(self.l3(h), y)


class RNN(nn.Module):
    def __init__(self, d=64, h=256):
        super().__init__()
        self.wx, self.wh, self.out = nn.Linear(d, h), nn.Linear(h, h), nn.Linear(h, 1)
        self.h = h

    def forward(self, xs):
        h = d2s.zeros([xs.shape[1], self.h])
        for t in range(xs.shape[0]):
            h = d2s.tanh(self.wx(xs[t]) + self.wh(h))
        return (self.out(h) ** 2).mean()


class LoopRNN(RNN):
    """The RNN with a tensor loop counter: one ``while`` in the program, not T unrolled steps."""

    def forward(self, xs):
        h = d2s.zeros([xs.shape[1], self.h])
        t = d2s.tensor(0)
        while t < xs.shape[0]:
            h = d2s.tanh(self.wx(xs[t]) + self.wh(h))
            t = t + 1
        return (self.out(h) ** 2).mean()


def _set(module, dotted, value):
    *path, leaf = dotted.split(".")
    for p in path:
        module = getattr(module, p)
    module._parameters[leaf] = value


CLOCK = [time.perf_counter]


def best_time(fns, repeat):
    clock = CLOCK[0]
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t = clock()
            f()
            best[i] = min(best[i], clock() - t)
    return best


def peak_bytes(fn):
    fn()
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def forms(make_model, args):
    """(eager step, forward-only step, whole-step step) closures over fresh copies of one model."""
    d2s.manual_seed(0)
    eager_model = make_model()
    fwd_model = make_model()
    fwd_model.load_state_dict(eager_model.state_dict())
    fwd_model = d2s.jit.to_static(fwd_model)
    whole_model = make_model()
    whole_model.load_state_dict(eager_model.state_dict())
    names = [n for n, _ in whole_model.named_parameters()]
    params = [p.detach() for _, p in whole_model.named_parameters()]

    def loss_of(ps, *a):
        # the module's forward on the parameter values ``ps`` (a functional call)
        saved = {n: p for n, p in whole_model.named_parameters()}
        try:
            for n, p in zip(names, ps):
                _set(whole_model, n, p)
            return whole_model(*a)
        finally:
            for n, p in saved.items():
                _set(whole_model, n, p)

    # one program for the whole step: the transform is applied inside it
    whole = d2s.jit.to_static(d2s.func.value_and_grad(loss_of))

    # gradients cleared through lists held once, as optimizer.zero_grad() does (walking the
    # module tree each step would cost as much as the whole step's own call overhead)
    eager_params, fwd_params = list(eager_model.parameters()), list(fwd_model.parameters())

    def eager_step():
        for p in eager_params:
            p.grad = None
        eager_model(*args).backward()

    def fwd_step():
        for p in fwd_params:
            p.grad = None
        fwd_model(*args).backward()

    def whole_step():
        whole(params, *args)

    return eager_step, fwd_step, whole_step


def report(label, make_model, args, repeat):
    eager_step, fwd_step, whole_step = forms(make_model, args)
    for f in (eager_step, fwd_step, whole_step):  # build and tier up the programs
        f(), f(), f()
    te, tf, tw = best_time([eager_step, fwd_step, whole_step], repeat)
    pe, pf, pw = (peak_bytes(f) for f in (eager_step, fwd_step, whole_step))
    print(f"{label:<26} eager {te * 1e3:7.2f} ms  forward-only {tf * 1e3:7.2f} ms  whole step {tw * 1e3:7.2f} ms  "
          f"fwd/eager {tf / te:5.2f}x  fwd/whole {tf / tw:5.2f}x  "
          f"peak MiB eager {pe / 2**20:6.1f} fwd {pf / 2**20:6.1f} whole {pw / 2**20:6.1f}")
    return tf / te, tf / tw


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--one-thread", action="store_true", help="BLAS on one thread (set before numpy loads)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time steps by process CPU time (with --one-thread: not counting time other processes "
                         "hold the cores on a loaded machine)")
    a = ap.parse_args(argv)
    if a.cpu_time:
        CLOCK[0] = time.process_time
    repeat = 5 if a.quick else 20
    rng = np.random.default_rng(0)
    for batch in (32, 128, 512):
        x = d2s.tensor(rng.standard_normal((batch, 784)).astype(np.float32))
        y = d2s.tensor(rng.integers(0, 10, batch))
        report(f"MLP batch {batch}", MLP, (x, y), repeat)
    xs = d2s.tensor(rng.standard_normal((64, 32, 64)).astype(np.float32))
    report("RNN T=64 B=32 H=256", RNN, (xs,), max(3, repeat // 4))
    report("RNN T=64, tensor while", LoopRNN, (xs,), max(3, repeat // 4))
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
