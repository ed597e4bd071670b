"""Whole-model steps, d2s side by side with PyTorch (and JAX for the GPT) on the same weights.

    python benchmarks/bench_models.py [--threads N] [--repeat R] [--settle S] [--only NAMES] [--columns NAMES]
                                      [--contended KIND] [--shared-process] [--tiny]

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
``d2s reassoc`` (the same with ``d2s.jit.config.reassociate = True``: a loop's weight gradients
as one product after it, results no longer equal to eager's to the bit);
``d2s native`` (``to_static(model, backend="native")`` once its background compiles are done,
``--native-wait`` seconds at most: the programs that lower run natively, the others on the
Python backend; what ran where is printed under the table); ``torch`` (eager, CPU); for the
GPT, ``jax`` where installed (the same model and AdamW written with ``jax.numpy``, ``jax.jit``
of the whole step). Every column starts from the same weights (PyTorch's initialization after
``torch.manual_seed(0)``, copied; d2s's after ``d2s.manual_seed(0)`` where torch is not
installed), and the first steps' losses are compared so that no column measures a different
computation.

By default (``--separate``) every column of a workload runs in a fresh process of its own (this
script started again as a worker), so that a column has only its own libraries loaded: in one
process, one library's thread pools slow another's steps down or not depending on what else
the process has loaded (torch's LSTM step took 47-51 ms beside d2s's native column, which loads
MKL, and 111-120 ms without it). A short-lived process builds the weights first and writes
them as numpy arrays, which every worker loads. The parent asks the workers for one step each
in turn, each timed inside its worker, while the others wait on their pipe. Under the table,
the CPU time each step used (all the process's threads) and, with ``--separate``, the CPU time a
worker burned between its steps (idle threads spinning while the other columns ran; near 0
is what the interleaving needs). ``--shared-process`` runs every column in this one process,
as the script did before.

Every framework is limited to ``--threads`` threads (BLAS/OpenMP variables set before numpy is
imported, in the workers too, ``torch.set_num_threads``). Each timing is the median of
``--repeat`` steps after two warm-up steps, the columns interleaved step by step so that
machine noise hits them alike, each step after ``--settle`` seconds of sleep (the previous
column's idle threads stop spinning first); every ratio printed comes from this one run. ``--contended
busy`` runs one busy process beside the timed ones (``busy2``: two; ``loader``: a 2-worker
DataLoader producing batches without pause), started and stopped by this script
(``benchmarks/_contention.py``). The load average is printed at the start and the end: on a
shared machine it says how much to trust the ratios. No timing is asserted anywhere.
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

import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
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
COLUMNS = ("d2s eager", "d2s static", "d2s reassoc", "d2s native", "torch", "jax")
ORDER = ("torch", "d2s eager", "d2s static", "d2s reassoc", "d2s native", "jax")  # the order the columns are built and stepped in

# --tiny: the same architectures at sizes that only check that every column runs and agrees
TINY = {
    "resnet18": (W.resnet18, lambda: W.resnet18_data(batch=4, size=32)),
    "gpt": (lambda lib: W.gpt(lib, vocab=32, width=16, layers=1, heads=2, block=8),
            lambda: W.gpt_data(batch=2, seq=8, vocab=32)),
    "lstm": (lambda lib: W.lstm_lm(lib, vocab=11, emb=6, hidden=5), lambda: W.lstm_data(batch=3, seq=4, vocab=11)),
    "mobilenet": (W.mobilenet_v2, lambda: W.mobilenet_data(size=32)),
}


def _workload(name, tiny):
    make, data, kind, _ = WORKLOADS[name]
    if tiny:
        make, data = TINY[name]
    return make, data, kind


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


def initial_weights(name, tiny=False):
    """(``{parameter or buffer name: numpy array}``, where they come from): workload ``name``'s
    weights as PyTorch initializes them after ``torch.manual_seed(0)``, or where torch is not
    installed as d2s does after ``d2s.manual_seed(0)``."""
    make = _workload(name, tiny)[0]
    try:
        import torch
    except ImportError:
        import d2s
        d2s.manual_seed(0)
        return {k: v.numpy().copy() for k, v in make(d2s).state_dict().items()}, "d2s's initialization"
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    return ({k: v.detach().numpy().copy() for k, v in make(torch).state_dict().items()},
            "torch's initialization")


def build_column(name, column, state, native_wait, tiny=False):
    """The step function of ``column`` on workload ``name`` (``tiny``: at the sizes of
    ``TINY``), its model loaded with ``state``; None where the column does not run this
    workload (jax: the GPT only). Raises ImportError where the column's library is missing."""
    make, data, kind = _workload(name, tiny)
    arrays = data()
    if column == "jax":
        return _jax_gpt_step(state, arrays) if name == "gpt" else None
    if column == "torch":
        import torch
        torch.set_num_threads(THREADS)
        lib = torch
        model = make(torch)
        model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    else:
        import d2s
        lib = d2s
        model = make(d2s)
        model.load_state_dict(state)
        if column != "d2s eager":
            d2s.jit.to_static(model, backend="native" if column == "d2s native" else "python")
    if kind == "inference":
        model.eval()
        step = _inference_step(lib, model, _lib_args(lib, arrays))
    else:
        step = _train_step(lib, kind, model, model, _lib_args(lib, arrays))
    if column == "d2s reassoc":
        step = _reassociating(step)
    return _NativeStep(step, model, native_wait) if column == "d2s native" else step


def _reassociating(step):
    """``step`` with ``d2s.jit.config.reassociate`` on while it runs (programs are optimized at
    their second call, so the setting must hold then, also with every column in one process)."""
    import d2s

    def run(*args):
        before, d2s.jit.config.reassociate = d2s.jit.config.reassociate, True
        try:
            return step(*args)
        finally:
            d2s.jit.config.reassociate = before

    return run


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


def _warm_up(step):
    """(the first two losses, a note or None): the warm-up steps (the conversion, and the native
    compiles, happen here)."""
    first = [step(), step()]
    return first, step.settle() if isinstance(step, _NativeStep) else None


def _timed(step):
    """(wall seconds, CPU seconds of every thread of the process) of one step."""
    c, t = time.process_time(), time.perf_counter()
    step()
    return time.perf_counter() - t, time.process_time() - c


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


# ------------------------------------------------------------------ the columns, in this process or in workers
class InProcess:
    """A column run in this process (``--shared-process``)."""

    def __init__(self, step):
        self.step_fn = step

    def ready(self):
        return _warm_up(self.step_fn)

    def step(self):
        """(wall seconds, CPU seconds, CPU seconds spent since the previous step or None)."""
        return _timed(self.step_fn) + (None,)

    def close(self):
        pass


class Worker:
    """A column run in a fresh process of its own (``--separate``): this script started with
    ``--worker``, which builds the column's model from the weights in ``weights`` (an ``.npz``
    file), warms it up, answers ``ready`` and then runs one timed step per ``step`` line it
    reads (see ``serve``); between steps it blocks reading its pipe."""

    def __init__(self, name, column, weights, native_wait, tiny):
        self.column = column
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", column, "--only", name, "--weights", weights,
               "--native-wait", str(native_wait), "--threads", str(THREADS)] + (["--tiny"] if tiny else [])
        # stderr is this process's: a worker's warnings and tracebacks show where the run is printed
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_child_env())

    def _answer(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.column} worker exited ({self.proc.wait()}); its error is printed above")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def ready(self):
        answer = self._answer()
        if "unavailable" in answer:
            raise ImportError(answer["unavailable"])
        return answer["first"], answer["note"]

    def step(self):
        self.proc.stdin.write("step\n")
        self.proc.stdin.flush()
        answer = self._answer()
        return answer["wall"], answer["cpu"], answer["idle_cpu"]

    def close(self):
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


def _child_env():
    """This process's environment (the thread limits included) with d2s and its runtime first on
    the path, as this process found them (the benchmark may run with d2s on sys.path only)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [here, os.path.join(here, "runtime")] + [p for p in sys.path if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def serve(name, column, weights, native_wait, tiny):
    """A worker's life (``--worker COLUMN``): build ``column`` of workload ``name`` from the
    weights in the ``weights`` file, warm it up, write one JSON line (``first`` losses and a
    ``note``; ``unavailable``; ``error``), then per ``step`` line read on stdin one timed step
    and one JSON line (``wall``, ``cpu``: seconds of the step; ``idle_cpu``: CPU seconds the
    process used since its previous step, while it waited); ``quit`` or the end of stdin ends it."""
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what the libraries print goes to stderr, not into the answers

    def answer(**kw):
        protocol.write(json.dumps(kw) + "\n")
        protocol.flush()

    try:
        with np.load(weights) as z:
            state = {k: z[k] for k in z.files}
        step = build_column(name, column, state, native_wait, tiny)
        first, note = _warm_up(step)
    except ImportError as e:
        answer(unavailable=f"not installed ({e.name})")
        return
    except Exception as e:  # noqa: BLE001 - the parent reports it and goes on with the other columns
        import traceback
        traceback.print_exc()
        answer(error=f"{column}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
        return
    answer(first=first, note=note)
    since = time.process_time()
    for line in sys.stdin:
        if line.strip() != "step":
            break
        idle = time.process_time() - since
        wall, cpu = _timed(step)
        since = time.process_time()
        answer(wall=wall, cpu=cpu, idle_cpu=idle)


def save_weights(folder, names, tiny):
    """``--save-weights FOLDER``: every workload's initial weights into ``FOLDER/NAME.npz``;
    prints ``{name: where they come from}`` as one JSON line."""
    sources = {}
    for name in names:
        state, sources[name] = initial_weights(name, tiny)
        np.savez(os.path.join(folder, f"{name}.npz"), **state)
    print(json.dumps(sources))


def shared_columns(name, columns, native_wait, tiny):
    """{column: InProcess} of workload ``name``, every column in this process; {column: note}."""
    state, _ = initial_weights(name, tiny)
    runners, notes = {}, {}
    for column in ORDER:
        if column in columns:
            try:
                step = build_column(name, column, state, native_wait, tiny)
            except ImportError as e:
                notes[column] = f"not installed ({e.name})"
                continue
            if step is not None:
                runners[column] = InProcess(step)
    return runners, notes


def separate_columns(name, columns, native_wait, tiny, folder):
    """{column: Worker} of workload ``name``, each in a fresh process, started together (their
    set-up is not timed); {column: note}."""
    weights = os.path.join(folder, f"{name}.npz")
    wanted = [c for c in ORDER if c in columns and (c != "jax" or name == "gpt")]
    return {c: Worker(name, c, weights, native_wait, tiny) for c in wanted}, {}


# ------------------------------------------------------------------ timing
def run(name, repeat, runners, notes, tiny=False, settle=0.0):
    """Warm every column of ``runners`` up, check their first losses against each other, time
    ``repeat`` steps of each, interleaved, and print the table; returns {column: median ms}."""
    first = {}
    for k, runner in list(runners.items()):
        try:
            first[k], note = runner.ready()
        except ImportError as e:  # a worker's column whose library is missing
            notes[k] = str(e)
        except RuntimeError as e:
            notes[k] = f"failed: {e}"
            FAILURES.append((name, k, str(e)))
        else:
            if note is not None:
                notes[k] = note
            continue
        runners.pop(k).close()
    # the losses every column is checked against: torch's, else d2s eager's, else the first column's
    ref = next((first[k] for k in ("torch", "d2s eager", *first) if k in first), None)
    for k, losses in first.items():
        if not np.allclose(losses, ref, rtol=2e-3, atol=1e-4):
            print(f"  warning: {k}'s first losses {losses} differ from {ref}")
            MISMATCHES.append((name, k, losses, ref))
    times = {k: [] for k in runners}
    cpus = {k: [] for k in runners}
    idles = {k: [] for k in runners}
    for _ in range(repeat):
        for k, runner in runners.items():
            # the previous column's idle BLAS/OpenMP threads spin for up to ~100 ms after its
            # step (the "CPU used between steps" line): on 2 cores a step started meanwhile would
            # lose a core to them (measured: d2s static's LSTM step 148 ms right after d2s
            # eager's, 105-109 ms alone); every column waits alike
            time.sleep(settle)
            wall, cpu, idle = runner.step()
            times[k].append(wall)
            cpus[k].append(cpu)
            if idle is not None:
                idles[k].append(idle)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    base = med.get("torch")
    what = "tiny sizes (--tiny)" if tiny else WORKLOADS[name][3]
    print(f"{name}: {what} (median of {repeat} steps, {THREADS} thread(s))", flush=True)
    for k, v in med.items():
        ratio = f"  {v / base:5.2f}x torch" if base and k != "torch" else ""
        print(f"  {k:<11} {v:9.1f} ms{ratio}  (range {min(times[k]) * 1e3:.1f}-{max(times[k]) * 1e3:.1f})")
    if med:
        print("  CPU per step (median, all threads): "
              + ", ".join(f"{k} {np.median(v) * 1e3:.1f} ms" for k, v in cpus.items()))
    if any(idles.values()):
        print("  CPU used between steps while waiting (median): "
              + ", ".join(f"{k} {np.median(v) * 1e3:.1f} ms" for k, v in idles.items() if v))
    for k, note in notes.items():
        print(f"  {k}: {note}")
    return med


MISMATCHES = []  # (workload, column, its first losses, the reference's) of the runs so far
FAILURES = []  # (workload, column, error) of the columns that failed to start in the runs so far


def _timed_workload(name, args, columns, folder):
    runners, notes = (separate_columns(name, columns, args.native_wait, args.tiny, folder) if args.separate
                      else shared_columns(name, columns, args.native_wait, args.tiny))
    try:
        return run(name, args.repeat, runners, notes, args.tiny, args.settle)
    finally:
        for runner in runners.values():
            runner.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2,
                   help="threads every framework may use, in every worker (default 2; set before numpy is imported)")
    p.add_argument("--repeat", type=int, default=7, help="timed steps per column, after two warm-up steps (default 7)")
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads: " + ", ".join(WORKLOADS))
    p.add_argument("--columns", default=",".join(COLUMNS), help="comma-separated columns: " + ", ".join(COLUMNS))
    p.add_argument("--contended", default=None, choices=KINDS,
                   help="time with load beside the timed processes: busy (one spinning process), busy2, loader")
    p.add_argument("--native-wait", type=float, default=600.0,
                   help="seconds to wait for the native background compiles")
    p.add_argument("--tiny", action="store_true", help="tiny sizes: checks that every column runs and agrees")
    p.add_argument("--settle", type=float, default=0.25,
                   help="seconds of sleep before each timed step, so the previous column's idle threads stop "
                        "spinning first (default 0.25; 0: back to back)")
    p.add_argument("--separate", dest="separate", action="store_true", default=True,
                   help="each column in a fresh process of its own, the steps still interleaved (the default)")
    p.add_argument("--shared-process", dest="separate", action="store_false",
                   help="every column in this one process (their libraries' thread pools then interact)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--weights", default=None, help=argparse.SUPPRESS)
    p.add_argument("--save-weights", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    if args.worker:
        return serve(names[0], args.worker, args.weights, args.native_wait, args.tiny)
    if args.save_weights:
        return save_weights(args.save_weights, names, args.tiny)
    columns = [c.strip() for c in args.columns.split(",")]
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs); "
          f"{time.strftime('%Y-%m-%d %H:%M')}; "
          + ("each column in a process of its own (--separate)" if args.separate
             else "every column in this process (--shared-process)"), flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench_models_") as folder:
        if args.separate:
            # the weights are built in a process of their own, so that this one loads no framework
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--save-weights", folder,
                                  "--only", ",".join(names), "--threads", str(THREADS)]
                                 + (["--tiny"] if args.tiny else []), stdout=subprocess.PIPE, text=True, check=True,
                                 env=_child_env())
            sources = set(json.loads(out.stdout.strip().splitlines()[-1]).values())
            print(f"weights: {', '.join(sorted(sources))}, the same in every column", flush=True)
        for name in names:
            if args.contended:
                with Contention(args.contended) as load:
                    print(f"contended: {load.describe()}")
                    results[name] = _timed_workload(name, args, columns, folder)
            else:
                results[name] = _timed_workload(name, args, columns, folder)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return results


if __name__ == "__main__":
    main()
