"""Generation speed of the example's character GPT (examples/char_gpt_model.py), in one run.

    python benchmarks/bench_generate.py [--threads N] [--tokens 128] [--repeat R] [--quick | --tiny]

For batch 1 and 8, 128 new tokens after a 16-token prompt, with and without the static
key/value cache (``generate(..., use_cache=...)``, top-k sampling at temperature 0.8), tokens
per second of:

* ``d2s eager``: the Python loop around the model, op by op;
* ``d2s converted (python)`` / ``(native)``: ``d2s.jit.to_static(model.generate)``, one program
  holding one ``while`` op, on the Python backend and compiled by numba (``backend="native"``;
  a program the native backend cannot lower says why);
* ``torch eager``: the same model file run under PyTorch (its three import lines changed back),
  with the same weights.

The converted programs' tokens are checked against d2s eager's for the same seed (Python
backend: equal; native: equal up to float rounding, so a sample may differ where two
probabilities round differently: the count of differing tokens is shown). The ratios are each
converted column's tokens/s over torch eager's (``py/torch``, ``nat/torch``) and over d2s
eager's (``best/eager``). ``prep`` is the
converted program's preparation: conversion, build, optimization passes and code generation
(its first call runs the loop on the quick interpreter and its second optimizes it; prep counts
neither run), and ``native compile`` the numba compile that the native backend does in the
background (found in the disk cache on a second run). Each timing is the median of
``--repeat`` calls after warm-up, the columns interleaved call by call; the load average is
printed at the start and the end (the machine is shared: compare ratios from one run). No
timing is asserted anywhere.
"""
import argparse
import os
import sys


def _threads_arg(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return 1


THREADS = _threads_arg(sys.argv)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = str(THREADS)

import importlib.util  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODEL_FILE = ROOT / "examples" / "char_gpt_model.py"
CONFIG = dict(vocab_size=96, block_size=256, n_layer=3, n_head=4, n_embd=96)  # examples/char_gpt.py's GPT
TINY_CONFIG = dict(vocab_size=96, block_size=64, n_layer=1, n_head=2, n_embd=16)  # --tiny: the smoke test's
PROMPT, TEMPERATURE, TOP_K = 16, 0.8, 10


def _load_d2s_model():
    spec = importlib.util.spec_from_file_location("char_gpt_model", MODEL_FILE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["char_gpt_model"] = mod  # (dataclasses look the module up by name)
    spec.loader.exec_module(mod)
    return mod


def _load_torch_model():
    """The same model file with its imports naming PyTorch, or None without torch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    src = MODEL_FILE.read_text()
    for ours, theirs in (("import d2s as torch", "import torch"), ("import d2s.nn as nn", "import torch.nn as nn"),
                         ("import d2s.nn.functional as F", "import torch.nn.functional as F")):
        src = src.replace(ours, theirs)
    ns = {"__name__": "char_gpt_model_torch"}
    sys.modules["char_gpt_model_torch"] = type(sys)("char_gpt_model_torch")
    sys.modules["char_gpt_model_torch"].__dict__.update(ns)
    exec(compile(src, str(MODEL_FILE), "exec"), sys.modules["char_gpt_model_torch"].__dict__)
    return sys.modules["char_gpt_model_torch"].__dict__


def _load_average():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _prepare(sf, args, kwargs):
    """Seconds to convert, build, optimize and generate the code of ``sf``'s program for
    ``args`` without running it (``d2s.jit`` internals; None where they moved)."""
    t0 = time.perf_counter()
    sf.get_program(*args, **kwargs)
    entry = max(sf.concrete_programs, key=lambda e: getattr(e, "stamp", 0))
    tiered = getattr(entry, "_tiered", None)
    if tiered is None or not hasattr(tiered, "optimize_now"):
        return None
    tiered.optimize_now()
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=THREADS, help="BLAS/OpenMP threads of every framework (1)")
    p.add_argument("--tokens", type=int, default=128, help="new tokens per call (128)")
    p.add_argument("--repeat", type=int, default=5, help="timed calls per column (median; 5)")
    p.add_argument("--batches", default="1,8", help="batch sizes (1,8)")
    p.add_argument("--no-native", action="store_true", help="skip the native backend")
    p.add_argument("--quick", action="store_true", help="32 tokens, 2 repeats, batch 1")
    p.add_argument("--tiny", action="store_true", help="a 1-layer GPT, 8 tokens, 1 repeat, batch 1, no native: "
                   "the smoke test's run (no meaningful timing)")
    args = p.parse_args(argv)
    n_new, repeat = (32, 2) if args.quick else (8, 1) if args.tiny else (args.tokens, args.repeat)
    batches = [1] if args.quick or args.tiny else [int(b) for b in args.batches.split(",")]
    config = TINY_CONFIG if args.tiny else CONFIG
    native = not (args.no_native or args.tiny)

    import d2s
    cg = _load_d2s_model()
    d2s.manual_seed(0)
    model = cg.GPT(cg.GPTConfig(**config)).eval()
    tns = _load_torch_model()
    torch = None
    if tns is not None:
        import torch
        torch.set_num_threads(args.threads)
        tmodel = tns["GPT"](tns["GPTConfig"](**config)).eval()
        tmodel.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    print(f"bench_generate: the example's GPT {config}, prompt {PROMPT}, {n_new} new tokens, top-k {TOP_K} "
          f"sampling; {args.threads} BLAS thread(s); load average {_load_average()}")
    print(f"{'batch':>5} {'cache':>5} | {'d2s eager':>10} {'conv python':>12} {'conv native':>12} {'torch eager':>12} "
          f"| {'py/torch':>8} {'nat/torch':>9} {'best/eager':>10} | {'prep':>6} {'native compile':>14} | tokens")
    rows = []
    for batch in batches:
        for use_cache in (True, False):
            rows.append(_measure(d2s, model, torch, tmodel if torch else None, batch, use_cache, n_new, repeat,
                                 native, config["vocab_size"]))
    print(f"load average at the end: {_load_average()}")
    return rows


def _measure(d2s, model, torch, tmodel, batch, use_cache, n_new, repeat, native, vocab):
    rng = np.random.default_rng(batch)
    prompt = rng.integers(0, vocab, (batch, PROMPT))
    idx = d2s.tensor(prompt)
    kw = dict(temperature=TEMPERATURE, top_k=TOP_K, use_cache=use_cache)
    args = (idx, n_new)

    sp = d2s.jit.to_static(model.generate, backend="python")
    prep = _prepare(sp, args, kw)
    columns = {"d2s eager": lambda: model.generate(*args, **kw), "conv python": lambda: sp(*args, **kw)}
    compile_s, native_note = None, ""
    if native:
        sn = d2s.jit.to_static(model.generate, backend="native")
        sn(*args, **kw)
        t0 = time.perf_counter()
        sn.wait_native()
        compile_s = time.perf_counter() - t0
        report = sn.backend_report()
        if report.startswith("native"):
            columns["conv native"] = lambda: sn(*args, **kw)
        else:
            native_note = report
    if torch is not None:
        tidx = torch.tensor(prompt)
        columns["torch eager"] = lambda: tmodel.generate(tidx, n_new, **kw)

    # the converted programs' tokens against eager's, for the same seed
    d2s.manual_seed(5)
    want = model.generate(*args, **kw).numpy()
    check = []
    for name in ("conv python", "conv native"):
        if name in columns:
            columns[name]()  # (warm: the second call optimizes)
            d2s.manual_seed(5)
            got = columns[name]().numpy()
            same = got.shape == want.shape and (got == want).all()
            check.append(f"{name.split()[1]}: {'=' if same else f'{np.sum(got != want) if got.shape == want.shape else got.shape} differ'}")
    for fn in columns.values():
        fn()
    times = {name: [] for name in columns}
    for _ in range(repeat):
        for name, fn in columns.items():
            d2s.manual_seed(11)
            if torch is not None:
                torch.manual_seed(11)
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    rate = {name: batch * n_new / float(np.median(ts)) for name, ts in times.items()}

    def cell(name):
        return f"{rate[name]:>10.0f}/s" if name in rate else f"{'-':>12}"

    def ratio(name, peer, width):
        return f"{rate[name] / rate[peer]:>{width - 1}.2f}x" if name in rate and peer in rate else f"{'-':>{width}}"

    best = max(rate.get("conv python", 0), rate.get("conv native", 0))
    print(f"{batch:>5} {'yes' if use_cache else 'no':>5} | {rate['d2s eager']:>8.0f}/s {cell('conv python')} "
          f"{cell('conv native')} {cell('torch eager')} | {ratio('conv python', 'torch eager', 8)} "
          f"{ratio('conv native', 'torch eager', 9)} {best / rate['d2s eager']:>9.2f}x | "
          f"{'-' if prep is None else f'{prep:.2f} s':>6} {'-' if compile_s is None else f'{compile_s:.1f} s':>14} | "
          f"{', '.join(check)}" + (f"\n      native: {native_note}" if native_note else ""))
    return {"batch": batch, "cache": use_cache, "rates": rate, "prep": prep, "native_compile": compile_s,
            "check": check}


if __name__ == "__main__":
    main()
