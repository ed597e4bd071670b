"""Eager-mode overhead of d2s against plain numpy, measured in one run and printed as ratios.

    python benchmarks/bench_eager.py [--quick]

1. ``a + b`` on (4,)-shaped float32 tensors: without grad (target <= 1.5 us per add) and with
   autograd recording (target <= 4 us), next to numpy's own ``a + b``.
2. The seed benchmark: ``x = randn(1000, 1000)`` requiring grad, ``(x @ x.T).sum().backward()``,
   20 iterations, against the same forward and backward written by hand in numpy
   (target <= 1.10x).
3. Activation checkpointing: peak traced memory (tracemalloc) of forward + backward of a deep
   tanh chain, with and without ``d2s.utils.checkpoint``.

Timings are best-of-repeats, and the numpy reference is timed interleaved with d2s so that
machine noise hits both alike.
"""
import argparse
import gc
import sys
import time
import timeit
import tracemalloc

import numpy as np

import d2s
from d2s.utils import checkpoint


def _per_call_us(fn, number, repeat):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def bench_add(number, repeat):
    an, bn = np.ones(4, np.float32), np.ones(4, np.float32)
    a, b = d2s.tensor(an), d2s.tensor(bn)
    ag = d2s.tensor(an, requires_grad=True)
    np_us = _per_call_us(lambda: an + bn, number, repeat)
    plain_us = _per_call_us(lambda: a + b, number, repeat)
    grad_us = _per_call_us(lambda: ag + b, number, repeat)
    torch_us = None
    try:
        import torch
        ta, tb = torch.ones(4), torch.ones(4)
        torch_us = _per_call_us(lambda: ta + tb, number, repeat)
    except ImportError:
        pass
    print("a + b on (4,) float32 tensors, per call")
    print(f"  numpy a + b                 {np_us:7.3f} us")
    if torch_us is not None:
        print(f"  torch a + b                 {torch_us:7.3f} us")
    print(f"  d2s a + b (no grad)         {plain_us:7.3f} us   {plain_us / np_us:5.2f}x numpy   "
          f"target <= 1.5 us: {'met' if plain_us <= 1.5 else 'MISSED'}")
    print(f"  d2s a + b (recording grad)  {grad_us:7.3f} us   {grad_us / np_us:5.2f}x numpy   "
          f"target <= 4 us: {'met' if grad_us <= 4.0 else 'MISSED'}")
    return plain_us, grad_us


def _numpy_matmul_step(xn):
    y = xn @ xn.T
    y.sum()
    gy = np.ones_like(y)  # d sum / d y
    return gy @ xn + (xn.T @ gy).T  # both operands of x @ x.T are x


def bench_matmul(iters, rounds):
    d2s.manual_seed(0)
    x = d2s.randn(1000, 1000, requires_grad=True)
    xn = x.numpy().copy()

    def d2s_run():
        for _ in range(iters):
            x.grad = None
            (x @ x.T).sum().backward()

    def numpy_run():
        for _ in range(iters):
            _numpy_matmul_step(xn)

    d2s_run()
    np.testing.assert_allclose(x.grad.numpy(), _numpy_matmul_step(xn), rtol=1e-4, atol=1e-2)
    numpy_run()
    d2s_times, np_times = [], []
    for _ in range(rounds):  # interleaved, so load on the machine hits both alike
        t = time.perf_counter()
        numpy_run()
        np_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        d2s_run()
        d2s_times.append(time.perf_counter() - t)
    d2s_ms, np_ms = min(d2s_times) / iters * 1e3, min(np_times) / iters * 1e3
    ratio = d2s_ms / np_ms
    print(f"(x @ x.T).sum().backward(), x: 1000x1000 float32, {iters} iterations, best of {rounds}")
    print(f"  numpy by hand               {np_ms:7.2f} ms/iter")
    print(f"  d2s eager autograd          {d2s_ms:7.2f} ms/iter   {ratio:5.3f}x numpy   "
          f"target <= 1.10x: {'met' if ratio <= 1.10 else 'MISSED'}")
    return ratio


def bench_checkpoint(depth=64, segments=8, width=256, batch=256):
    rng = np.random.default_rng(0)
    w = d2s.tensor(rng.normal(size=(width, width)).astype(np.float32) * 0.05, requires_grad=True)
    x0 = rng.normal(size=(batch, width)).astype(np.float32)

    def layers(h, n):
        for _ in range(n):
            h = d2s.tanh(h @ w)
        return h

    def peak(use_checkpoint):
        x = d2s.tensor(x0, requires_grad=True)
        gc.collect()
        tracemalloc.start()
        h = x
        per = depth // segments
        for _ in range(segments):
            h = checkpoint(lambda t: layers(t, per), h) if use_checkpoint else layers(h, per)
        h.sum().backward()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top, x.grad.numpy()

    plain, g_plain = peak(False)
    ckpt, g_ckpt = peak(True)
    np.testing.assert_allclose(g_plain, g_ckpt, rtol=1e-5, atol=1e-6)
    act = batch * width * 4
    print(f"checkpointing a {depth}-layer tanh chain ({batch}x{width} activations of {act / 2**20:.2f} MiB) "
          f"in {segments} segments")
    print(f"  peak traced memory, plain        {plain / 2**20:8.2f} MiB")
    print(f"  peak traced memory, checkpointed {ckpt / 2**20:8.2f} MiB   ({plain / ckpt:.1f}x less)")
    return plain, ckpt


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args(argv)
    number, repeat, rounds = (20_000, 3, 2) if args.quick else (200_000, 5, 5)
    print(f"d2s {d2s.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}\n")
    bench_add(number, repeat)
    print()
    bench_matmul(20, rounds)
    print()
    bench_checkpoint()


if __name__ == "__main__":
    main()
