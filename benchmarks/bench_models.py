"""Whole-model steps, d2s side by side with PyTorch (and JAX for the GPT) on the same weights.

    python benchmarks/bench_models.py [--threads N] [--repeat R] [--only NAMES] [--contended KIND]

Workloads (``benchmarks/_workloads.py``: each model written once for either library, so both
run the same architecture):

* ``resnet18``: ResNet-18, batch 8, 64x64: one SGD (momentum 0.9) training step, forward +
  cross-entropy + backward + update;
* ``gpt``: a nanoGPT-style decoder (6 layers, width 256, 4 heads, causal
  ``F.scaled_dot_product_attention``, LayerNorm, GELU MLP), batch 8, sequence 128, vocabulary
  1024: one AdamW training step;
* ``lstm``: a 2-layer LSTM word language model (embedding and hidden 256, vocabulary 1000),
  batch 16, sequence 64: one SGD training step;
* ``mobilenet``: MobileNetV2 (depthwise convolutions, ReLU6) inference, eval mode, batch 1,
  224x224.

Columns: ``d2s eager``; ``d2s static`` (``d2s.jit.to_static(model)``, the Python backend);
``d2s native`` (``to_static(model, backend="native")`` once its background compiles are done:
the programs that lower run natively, the others on the Python backend; what ran where is
printed under the table); ``torch`` (eager, CPU); for the GPT, ``jax`` where installed (the
same model and AdamW written with ``jax.numpy``, ``jax.jit`` of the whole step). Every column
starts from the same weights (PyTorch's initialization copied), and the first steps' losses are
compared so that no column measures a different computation.

Every framework is limited to ``--threads`` threads (BLAS/OpenMP variables set before numpy is
imported, ``torch.set_num_threads``). Each timing is the median of ``--repeat`` steps after two
warm-up steps, the columns interleaved step by step so that machine noise hits them alike;
every ratio printed comes from this one run. ``--contended busy`` runs one busy process beside
the timed one (``busy2``: two; ``loader``: a 2-worker DataLoader producing batches without
pause), started and stopped by this script (``benchmarks/_contention.py``). The load average
is printed at the start and the end: on a shared machine it says how much to trust the
ratios. No timing is asserted anywhere.
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
    return 2


THREADS = _threads_arg(sys.argv)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = str(THREADS)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import time  # noqa: E402

import numpy as np  # noqa: E402

import _workloads as W  # noqa: E402
from _contention import KINDS, Contention  # noqa: E402

# name: (model builder, data, kind of step, description)
WORKLOADS = {
    "resnet18": (W.resnet18, W.resnet18_data, "sgd-outside", "ResNet-18, batch 8, 64x64, SGD step"),
    "gpt": (W.gpt, W.gpt_data, "adamw-inside", "GPT 6x256, batch 8, sequence 128, AdamW step"),
    "lstm": (W.lstm_lm, W.lstm_data, "sgd-inside", "2-layer LSTM LM 256, batch 16, sequence 64, SGD step"),
    "mobilenet": (W.mobilenet_v2, W.mobilenet_data, "inference", "MobileNetV2 inference, batch 1, 224x224"),
}
COLUMNS = ("d2s eager", "d2s static", "d2s native", "torch", "jax")

# --tiny: the same architectures at sizes that only check that every column runs and agrees
TINY = {
    "resnet18": (W.resnet18, lambda: W.resnet18_data(batch=4, size=32)),
    "gpt": (lambda lib: W.gpt(lib, vocab=32, width=16, layers=1, heads=2, block=8),
            lambda: W.gpt_data(batch=2, seq=8, vocab=32)),
    "lstm": (lambda lib: W.lstm_lm(lib, vocab=11, emb=6, hidden=5), lambda: W.lstm_data(batch=3, seq=4, vocab=11)),
    "mobilenet": (W.mobilenet_v2, lambda: W.mobilenet_data(size=32)),
}


# ------------------------------------------------------------------ steps
def _train_step(lib, kind, model, forward, args):
    if kind == "adamw-inside":
        opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    else:
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9 if kind == "sgd-outside" else 0.0)

    def step():
        if kind == "sgd-outside":
            loss = lib.nn.functional.cross_entropy(forward(args[0]), args[1])
        else:
            loss = forward(*args)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return float(loss.item())
    return step


def _inference_step(lib, forward, args):
    def step():
        with lib.no_grad():
            out = forward(*args)
        return float(out.sum().item())
    return step


def _lib_args(lib, arrays):
    return tuple(lib.tensor(a) for a in arrays)


def make_steps(name, columns, native_wait, tiny=False):
    """({column: step function}, {column: note}) for workload ``name``, every column from the
    same weights (``tiny``: the workload at the sizes of ``TINY``)."""
    import d2s
    make, data, kind, _ = WORKLOADS[name]
    if tiny:
        make, data = TINY[name]
    arrays = data()
    steps, notes, state = {}, {}, None
    try:
        import torch
        torch.set_num_threads(THREADS)
        torch.manual_seed(0)
        tm = make(torch)
        state = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
        if "torch" in columns:
            if kind == "inference":
                tm.eval()
                steps["torch"] = _inference_step(torch, tm, _lib_args(torch, arrays))
            else:
                steps["torch"] = _train_step(torch, kind, tm, tm, _lib_args(torch, arrays))
    except ImportError:
        notes["torch"] = "not installed"
    for column in ("d2s eager", "d2s static", "d2s native"):
        if column not in columns:
            continue
        dm = make(d2s)
        if state is not None:
            dm.load_state_dict(state)
        if column != "d2s eager":
            d2s.jit.to_static(dm, backend="native" if column == "d2s native" else "python")
        if kind == "inference":
            dm.eval()
            steps[column] = _inference_step(d2s, dm, _lib_args(d2s, arrays))
        else:
            steps[column] = _train_step(d2s, kind, dm, dm, _lib_args(d2s, arrays))
        if column == "d2s native":
            steps[column] = _NativeStep(steps[column], dm, native_wait)
    if "jax" in columns and name == "gpt" and state is not None:
        try:
            steps["jax"] = _jax_gpt_step(state, arrays)
        except ImportError:
            notes["jax"] = "not installed"
    return steps, notes


class _NativeStep:
    """The native column's step: its first calls run on the Python backend while the programs
    compile in the background; ``settle`` waits for them (the warm-up calls it)."""

    def __init__(self, step, model, wait):
        self.step, self.model, self.wait = step, model, wait

    def __call__(self):
        return self.step()

    def settle(self):
        self.model.forward.wait_native(self.wait)
        self.step()  # a training step's backward program is built (and compiled) at its first backward
        self.model.forward.wait_native(self.wait)
        return self.model.forward.backend_report()


# ------------------------------------------------------------------ the GPT in JAX (a peer)
def _jax_gpt_step(state, arrays, heads=4, lr=3e-4, betas=(0.9, 0.999), eps=1e-8, wd=0.01):
    """The GPT training step in JAX: the same weights and the same AdamW as torch's, one
    ``jax.jit`` of loss, gradient and update."""
    import jax
    import jax.numpy as jnp
    params = {k: jnp.asarray(v) for k, v in state.items()}
    n_layers = len({k.split(".")[1] for k in state if k.startswith("h.")})

    def layer_norm(x, w, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5) * w + b

    def linear(x, p, name, bias=True):
        y = x @ p[name + ".weight"].T
        return y + p[name + ".bias"] if bias else y

    def loss_fn(p, idx, tgt):
        B, T = idx.shape
        x = p["wte.weight"][idx] + p["wpe.weight"][jnp.arange(T)]
        C = x.shape[-1]
        causal = jnp.tril(jnp.ones((T, T), bool))
        for i in range(n_layers):
            pre = f"h.{i}."
            q, k, v = jnp.split(linear(layer_norm(x, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"]), p,
                                       pre + "c_attn"), 3, axis=2)
            q, k, v = (t.reshape(B, T, heads, C // heads).transpose(0, 2, 1, 3) for t in (q, k, v))
            s = jnp.where(causal, q @ k.transpose(0, 1, 3, 2) / np.sqrt(C // heads), -jnp.inf)
            y = (jax.nn.softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
            x = x + linear(y, p, pre + "c_proj")
            h = layer_norm(x, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"])
            x = x + linear(jax.nn.gelu(linear(h, p, pre + "mlp.0"), approximate=False), p, pre + "mlp.2")
        logits = linear(layer_norm(x, p["ln_f.weight"], p["ln_f.bias"]), p, "lm_head", bias=False)
        logp = jax.nn.log_softmax(logits.reshape(-1, logits.shape[-1]), -1)
        return -jnp.take_along_axis(logp, tgt.reshape(-1, 1), 1).mean()

    @jax.jit
    def update(p, m, v, t, idx, tgt):
        loss, g = jax.value_and_grad(loss_fn)(p, idx, tgt)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: m + (g - m) * (1 - betas[0]), m, g)
        v = jax.tree_util.tree_map(lambda v, g: v * betas[1] + (1 - betas[1]) * g * g, v, g)
        c1, c2 = 1 - betas[0] ** t, jnp.sqrt(1 - betas[1] ** t)
        p = jax.tree_util.tree_map(lambda w, m, v: w * (1 - lr * wd) - lr / c1 * m / (jnp.sqrt(v) / c2 + eps),
                                   p, m, v)
        return loss, p, m, v, t

    idx, tgt = (jnp.asarray(a.astype("int32")) for a in arrays)
    box = [params, jax.tree_util.tree_map(jnp.zeros_like, params), jax.tree_util.tree_map(jnp.zeros_like, params),
           jnp.float32(0)]

    def step():
        loss, *box[:] = update(*box, idx, tgt)
        return float(loss)
    return step


# ------------------------------------------------------------------ timing
def run(name, repeat, columns, native_wait, tiny=False):
    steps, notes = make_steps(name, columns, native_wait, tiny)
    first = {}
    for k, f in steps.items():  # warm-up (the conversion, and the native compiles, happen here)
        first[k] = [f(), f()]
        if isinstance(f, _NativeStep):
            notes[k] = f.settle()
    # the losses every column is checked against: torch's, else d2s eager's, else the first column's
    ref = next((first[k] for k in ("torch", "d2s eager", *first) if k in first), None)
    for k, losses in first.items():
        if not np.allclose(losses, ref, rtol=2e-3, atol=1e-4):
            print(f"  warning: {k}'s first losses {losses} differ from {ref}")
            MISMATCHES.append((name, k, losses, ref))
    times = {k: [] for k in steps}
    for _ in range(repeat):
        for k, f in steps.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    base = med.get("torch")
    what = "tiny sizes (--tiny)" if tiny else WORKLOADS[name][3]
    print(f"{name}: {what} (median of {repeat} steps, {THREADS} thread(s))", flush=True)
    for k, v in med.items():
        ratio = f"  {v / base:5.2f}x torch" if base and k != "torch" else ""
        print(f"  {k:<11} {v:9.1f} ms{ratio}  (range {min(times[k]) * 1e3:.1f}-{max(times[k]) * 1e3:.1f})")
    for k, note in notes.items():
        print(f"  {k}: {note}")
    return med


MISMATCHES = []  # (workload, column, its first losses, the reference's) of the runs so far


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads: " + ", ".join(WORKLOADS))
    p.add_argument("--columns", default=",".join(COLUMNS), help="comma-separated columns: " + ", ".join(COLUMNS))
    p.add_argument("--contended", default=None, choices=KINDS,
                   help="time with load beside this process: busy (one spinning process), busy2, loader")
    p.add_argument("--native-wait", type=float, default=600.0,
                   help="seconds to wait for the native background compiles")
    p.add_argument("--tiny", action="store_true", help="tiny sizes: checks that every column runs and agrees")
    args = p.parse_args(argv)
    columns = [c.strip() for c in args.columns.split(",")]
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs); "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    results = {}
    for name in (n.strip() for n in args.only.split(",")):
        if args.contended:
            with Contention(args.contended) as load:
                print(f"contended: {load.describe()}")
                results[name] = run(name, args.repeat, columns, args.native_wait, args.tiny)
        else:
            results[name] = run(name, args.repeat, columns, args.native_wait, args.tiny)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return results


if __name__ == "__main__":
    main()
