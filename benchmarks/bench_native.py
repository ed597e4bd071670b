"""d2s's Python and native backends side by side with numpy by hand and (``--peers``) JAX,
PyTorch and TensorFlow, on the workloads of the native-backend issue.

    python benchmarks/bench_native.py [--quick] [--peers] [--tf-python PATH] [--only NAMES]

Workloads (every framework computes the same function on the same inputs):

* ``control``: a 200-step loop on a float32 (16,) tensor, ``if x.sum() > 0: s = s + x * 0.5
  else: s = s - x``, then ``x = tanh(x) - 0.1``; also at 50 / 1,000 / 5,000 steps for the cost
  per iteration (the slope between the shortest and the longest run);
* ``mlp``: one training step of an MLP 784-512-512-10 (softmax cross-entropy, SGD update),
  batch 128 (as in bench_static.py);
* ``rnn``: an Elman RNN, T=64, B=32, D=64, H=256, ``h = tanh(x_t @ W + h @ U + b)``, loss
  ``sum_t sum(h_t ** 2)``, its value and gradients w.r.t. W, U, b (every step feeds the loss, so
  the gradient flowing back does not decay into float32 denormals, whose slow arithmetic would
  make the cost per step depend on T for reasons that have nothing to do with the program);
* ``seed``: ``(x @ x.T).sum()`` and its gradient for a 1000x1000 float32 ``x``;
* ``rnn-slope``: the RNN's forward+backward at T = 64, 256, 1024, printed per time step: a
  loop gradient costs O(T), so time/T must stay flat.

Columns: ``d2s-py`` (``d2s.jit.to_static``, the Python backend), ``d2s-native``
(``to_static(fn, backend="native")`` once its background compile is done; ``n/a (reason)``
where this d2s has no native backend or the program does not run natively), ``d2s-auto``
(``backend="auto"`` once it has chosen a backend; the choice and its reason are printed under
the tables: it must be the faster of the two), ``numpy`` (the
function written by hand), and with ``--peers``: ``jax`` (``jax.jit``; loops as
``lax.while_loop``/``lax.cond``/``lax.scan``), ``torch`` (eager, CPU) and ``tf``
(``tf.function``). TensorFlow runs in a subprocess started once (``--tf-python``: an
interpreter that can import it, such as a separate virtual environment, since it may need
another numpy; default: this interpreter if it can import tensorflow, else the column is
skipped with a note), which takes its samples when the parent asks, interleaved with the other
columns'.

``--contended KIND`` times everything with load beside this process, started and stopped by
this script (``benchmarks/_contention.py``): ``busy``, one process spinning in a Python loop;
``busy2``, two; ``loader``, a d2s DataLoader whose 2 worker processes produce batches without
pause. A framework whose threads wait for a core another process holds slows down much more
than by the CPU share it loses (issue 26); d2s's native backend sizes its products' thread
count from what the machine has free (``d2s_runtime/threads.py``).

Every framework is limited to 2 threads (``--threads``; BLAS/OpenMP environment variables set before numpy is
imported, ``torch.set_num_threads``, TensorFlow's threading config, and the process pinned to 2
CPUs where it has more). Each timing is the median of ``--repeat`` samples taken after a
warm-up, the frameworks interleaved sample by sample (TensorFlow's too) so that machine noise
hits them alike, and every column sampled the same way: ``--settle`` seconds of sleep, one
untimed call, then the timed calls (``--settle 0``: back to back). ``--separate`` runs each
column in a process of its own, still sampled in turn: no framework's spinning threads then
share a process with another's.
Each column's outputs are compared with numpy by hand (max abs difference, with the largest
reference magnitude for scale) so that no column measures a different program. The load
average is printed at the start and the end: on a shared machine it says how much to trust
the ratios. No timing is asserted anywhere; ratios are from this one run.
"""
import os
import sys

def _threads_arg(argv):
    """``--threads N`` read before numpy is imported (BLAS reads its thread count at import)."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return 2


THREADS = _threads_arg(sys.argv)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
    os.environ[_var] = str(THREADS)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _contention import KINDS, Contention  # noqa: E402

LR = 0.01
MLP_SIZES = (784, 512, 512, 10)
CONTROL_STEPS = (50, 200, 1000, 5000)
RNN_SLOPE_T = (64, 256, 1024)


class Unavailable(Exception):
    """A column that cannot run here (the reason is printed in its cell)."""


def pin_threads():
    """Keep this process (and the threads every framework starts) on THREADS CPUs."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > THREADS:
            os.sched_setaffinity(0, cpus[:THREADS])
    except (AttributeError, OSError):
        pass


# ---------------------------------------------------------------- inputs and numpy by hand
def control_inputs(steps):
    x = np.random.default_rng(0).standard_normal(16).astype("float32")
    return {"x": x, "n": np.array(steps, "int64")}


def control_numpy(x, n):
    s = np.zeros_like(x)
    half, tenth = np.float32(0.5), np.float32(0.1)
    for _ in range(int(n)):
        if x.sum() > 0:
            s = s + x * half
        else:
            s = s - x
        x = np.tanh(x) - tenth
    return [s]


def mlp_inputs(batch=128, sizes=MLP_SIZES):
    rng = np.random.default_rng(1)
    arrays = {}
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:])):
        arrays[f"W{k}"] = (rng.standard_normal((i, o)) / np.sqrt(i)).astype("float32")
        arrays[f"b{k}"] = (rng.standard_normal(o) * 0.1).astype("float32")
    arrays["x"] = rng.standard_normal((batch, sizes[0])).astype("float32")
    arrays["y"] = np.eye(sizes[-1], dtype="float32")[rng.integers(0, sizes[-1], batch)]
    return arrays


def mlp_param_names(inputs):
    return sorted(k for k in inputs if k[0] in "Wb" and k[1:].isdigit())


def _mlp_params(inputs):
    n = len(mlp_param_names(inputs)) // 2
    return [inputs[f"{c}{k}"] for k in range(n) for c in "Wb"]


def mlp_numpy(**inputs):
    x, y, params = inputs["x"], inputs["y"], _mlp_params(inputs)
    batch = np.float32(x.shape[0])
    zs, hs = [], [x]
    h = x
    for i in range(0, len(params), 2):
        z = h @ params[i] + params[i + 1]
        zs.append(z)
        h = np.maximum(z, 0) if i + 2 < len(params) else z
        hs.append(h)
    z = zs[-1]
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=1, keepdims=True)
    loss = -((z - m - np.log(s)) * y).sum() / batch
    dz = (e / s * y.sum(axis=1, keepdims=True) - y) / batch
    grads = [None] * len(params)
    for i in range(len(params) - 2, -1, -2):
        grads[i], grads[i + 1] = hs[i // 2].T @ dz, dz.sum(0)
        if i:
            dz = (dz @ params[i].T) * (zs[i // 2 - 1] > 0)
    return [loss] + [p - np.float32(LR) * g for p, g in zip(params, grads)]


def rnn_inputs(T=64, B=32, D=64, H=256):
    rng = np.random.default_rng(2)
    return {"xs": rng.standard_normal((T, B, D)).astype("float32"),
            "h0": np.zeros((B, H), "float32"),
            "W": (rng.standard_normal((D, H)) / np.sqrt(D)).astype("float32"),
            "U": (rng.standard_normal((H, H)) * (0.9 / np.sqrt(H))).astype("float32"),
            "b": (rng.standard_normal(H) * 0.1).astype("float32"),
            "n": np.array(T, "int64")}


def rnn_numpy(xs, h0, W, U, b, n):
    hs = [h0]
    h = h0
    loss = np.float32(0)
    for t in range(int(n)):
        h = np.tanh(xs[t] @ W + h @ U + b)
        hs.append(h)
        loss = loss + (h * h).sum()
    dh = np.zeros_like(h0)
    gW, gU, gb = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    for t in range(int(n) - 1, -1, -1):
        dh = dh + 2 * hs[t + 1]
        dz = dh * (1 - hs[t + 1] * hs[t + 1])
        gW += xs[t].T @ dz
        gU += hs[t].T @ dz
        gb += dz.sum(0)
        dh = dz @ U.T
    return [loss, gW, gU, gb]


def seed_inputs(size=1000):
    return {"x": np.random.default_rng(3).standard_normal((size, size)).astype("float32")}


def seed_numpy(x):
    value = (x @ x.T).sum()
    ones = np.ones((x.shape[0], x.shape[0]), x.dtype)
    return [value, ones @ x + (x.T @ ones).T]


NUMPY = {"control": control_numpy, "mlp": mlp_numpy, "rnn": rnn_numpy, "seed": seed_numpy}


# ---------------------------------------------------------------- d2s (both backends)
def d2s_functions():
    """The workloads written with d2s (imported here: the TensorFlow worker has no d2s)."""
    import d2s

    def control(x, n):
        s = d2s.zeros_like(x)
        i = d2s.zeros([], dtype="int64")
        while i < n:
            if x.sum() > 0:
                s = s + x * 0.5
            else:
                s = s - x
            x = d2s.tanh(x) - 0.1
            i = i + 1
        return s

    def mlp_loss(params, x, y):
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = d2s.relu(h)
        return -(d2s.log_softmax(h, axis=-1) * y).sum() / x.shape[0]

    mlp_vg = d2s.func.value_and_grad(mlp_loss)

    def mlp(params, x, y):
        loss, grads = mlp_vg(params, x, y)
        return loss, [p - LR * g for p, g in zip(params, grads)]

    def rnn_loss(params, xs, h0, n):
        W, U, b = params
        h = h0
        loss = (h0 * 0).sum()
        t = d2s.zeros([], dtype="int64")
        while t < n:
            h = d2s.tanh(xs[t] @ W + h @ U + b)
            loss = loss + (h * h).sum()
            t = t + 1
        return loss

    rnn = d2s.func.value_and_grad(rnn_loss)

    def seed_loss(x):
        return (x @ x.T).sum()

    seed = d2s.func.value_and_grad(seed_loss)
    return {"control": control, "mlp": mlp, "rnn": rnn, "seed": seed}


def _d2s_args(name, inputs):
    import d2s
    t = {k: d2s.tensor(v) for k, v in inputs.items()}
    if name == "control":
        return (t["x"], t["n"])
    if name == "mlp":
        return ([d2s.tensor(p) for p in _mlp_params(inputs)], t["x"], t["y"])
    if name == "rnn":
        return ([t["W"], t["U"], t["b"]], t["xs"], t["h0"], t["n"])
    return (t["x"],)


def _flat(out):
    """The outputs of any framework as a flat list of numpy arrays."""
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in _flat(o)]
    if hasattr(out, "numpy"):
        out = out.numpy() if not hasattr(out, "detach") else out.detach().numpy()
    return [np.asarray(out)]


AUTO_CHOICES = {}  # workload -> backend_report() of its "auto" function once it has chosen


def d2s_runner(name, inputs, backend, native_wait):
    """A no-argument callable running workload ``name`` with d2s's ``backend`` ('python',
    'native' or 'auto'); raises Unavailable (with the reason) where that backend cannot run it."""
    import d2s
    fn = d2s_functions()[name]
    if backend == "python":
        static = d2s.jit.to_static(fn)
    else:
        try:
            static = d2s.jit.to_static(fn, backend=backend)
        except TypeError as e:
            raise Unavailable("no native backend in this d2s") from e
    args = _d2s_args(name, inputs)
    with d2s.no_grad():
        static(*args)
        if backend == "native":
            wait = getattr(static, "wait_native", None)
            if wait is None:
                raise Unavailable("StaticFunction has no wait_native()")
            wait(native_wait)
            static(*args)
            report = static.backend_report()
            if report != "native":
                raise Unavailable(report)
        elif backend == "auto":
            # "auto" prepares its native function when the program is reused, then times both
            # backends on the next calls: run until it has chosen
            for _ in range(60):
                static.wait_native(native_wait)
                static(*args)
                report = static.backend_report()
                if "timing both backends" not in report and "pending" not in report:
                    break
            AUTO_CHOICES[name] = report

    def run():
        with d2s.no_grad():
            return static(*args)

    return run


# ---------------------------------------------------------------- peers
def jax_runner(name, inputs):
    import jax
    import jax.numpy as jnp
    from jax import lax
    jax.config.update("jax_enable_x64", False)
    if name == "control":
        @jax.jit
        def f(x, n):
            def body(c):
                i, x, s = c
                s = lax.cond(x.sum() > 0, lambda: s + x * 0.5, lambda: s - x)
                return i + 1, jnp.tanh(x) - 0.1, s
            return lax.while_loop(lambda c: c[0] < n, body, (jnp.int32(0), x, jnp.zeros_like(x)))[2]
        args = (jnp.asarray(inputs["x"]), jnp.int32(int(inputs["n"])))
    elif name == "mlp":
        def loss(params, x, y):
            h = x
            for i in range(0, len(params), 2):
                h = h @ params[i] + params[i + 1]
                if i + 2 < len(params):
                    h = jax.nn.relu(h)
            return -(jax.nn.log_softmax(h, axis=-1) * y).sum() / x.shape[0]

        @jax.jit
        def f(params, x, y):
            value, grads = jax.value_and_grad(loss)(params, x, y)
            return value, [p - LR * g for p, g in zip(params, grads)]
        args = ([jnp.asarray(p) for p in _mlp_params(inputs)], jnp.asarray(inputs["x"]), jnp.asarray(inputs["y"]))
    elif name == "rnn":
        def loss(params, xs, h0):
            W, U, b = params
            def step(c, x):
                h, loss = c
                h = jnp.tanh(x @ W + h @ U + b)
                return (h, loss + (h * h).sum()), None
            (_, loss), _ = lax.scan(step, (h0, jnp.float32(0)), xs)
            return loss
        f = jax.jit(jax.value_and_grad(loss))
        args = ([jnp.asarray(inputs[k]) for k in "WUb"], jnp.asarray(inputs["xs"]), jnp.asarray(inputs["h0"]))
    else:
        f = jax.jit(jax.value_and_grad(lambda x: (x @ x.T).sum()))
        args = (jnp.asarray(inputs["x"]),)
    return lambda: jax.block_until_ready(f(*args))


def torch_runner(name, inputs, device="cpu"):
    """Workload ``name`` in torch eager on ``device`` (``benchmarks/bench_gpu.py`` passes "cuda")."""
    import torch
    torch.set_num_threads(THREADS)
    T = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device) for k, v in inputs.items()}
    if name == "control":
        def f():
            with torch.no_grad():
                x = T["x"]
                s = torch.zeros_like(x)
                for _ in range(int(inputs["n"])):
                    if x.sum() > 0:
                        s = s + x * 0.5
                    else:
                        s = s - x
                    x = torch.tanh(x) - 0.1
                return s
    elif name == "mlp":
        params = [torch.from_numpy(p.copy()).to(device).requires_grad_() for p in _mlp_params(inputs)]

        def f():
            h = T["x"]
            for i in range(0, len(params), 2):
                h = h @ params[i] + params[i + 1]
                if i + 2 < len(params):
                    h = torch.relu(h)
            loss = -(torch.log_softmax(h, dim=-1) * T["y"]).sum() / h.shape[0]
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                return [loss.detach()] + [p - LR * g for p, g in zip(params, grads)]
    elif name == "rnn":
        params = [T[k].clone().requires_grad_() for k in "WUb"]

        def f():
            W, U, b = params
            h = T["h0"]
            loss = (h * 0).sum()
            for t in range(int(inputs["n"])):
                h = torch.tanh(T["xs"][t] @ W + h @ U + b)
                loss = loss + (h * h).sum()
            return [loss.detach()] + list(torch.autograd.grad(loss, params))
    else:
        x = T["x"].clone().requires_grad_()

        def f():
            value = (x @ x.T).sum()
            return [value.detach(), torch.autograd.grad(value, x)[0]]
    return f


def tf_runner(name, inputs):
    import tensorflow as tf
    C = {k: tf.constant(v) for k, v in inputs.items()}
    if name == "control":
        @tf.function
        def f(x, n):
            s = tf.zeros_like(x)
            i = tf.constant(0, tf.int64)
            while i < n:
                if tf.reduce_sum(x) > 0:
                    s = s + x * 0.5
                else:
                    s = s - x
                x = tf.tanh(x) - 0.1
                i += 1
            return s
        return lambda: f(C["x"], C["n"])
    if name == "mlp":
        params = [tf.constant(p) for p in _mlp_params(inputs)]

        @tf.function
        def f(params, x, y):
            with tf.GradientTape() as tape:
                tape.watch(params)
                h = x
                for i in range(0, len(params), 2):
                    h = h @ params[i] + params[i + 1]
                    if i + 2 < len(params):
                        h = tf.nn.relu(h)
                loss = -tf.reduce_sum(tf.nn.log_softmax(h, axis=-1) * y) / h.shape[0]
            grads = tape.gradient(loss, params)
            return [loss] + [p - LR * g for p, g in zip(params, grads)]
        return lambda: f(params, C["x"], C["y"])
    if name == "rnn":
        params = [C[k] for k in "WUb"]

        @tf.function
        def f(params, xs, h0, n):
            W, U, b = params
            with tf.GradientTape() as tape:
                tape.watch(params)
                h = h0
                loss = tf.constant(0.0)
                for t in tf.range(n):
                    h = tf.tanh(xs[t] @ W + h @ U + b)
                    loss = loss + tf.reduce_sum(h * h)
            return [loss] + tape.gradient(loss, params)
        return lambda: f(params, C["xs"], C["h0"], C["n"])

    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = tf.reduce_sum(x @ tf.transpose(x))
        return [value, tape.gradient(value, x)]
    return lambda: f(C["x"])


# ---------------------------------------------------------------- timing
# Seconds to wait before each sample: after its last call, a framework's worker threads
# (OpenBLAS's, OpenMP's in torch) spin for up to about 0.1-0.2 s waiting for more work, and on
# 2 cores a sample taken meanwhile would charge that spinning to the next framework (measured:
# torch's RNN 107 ms interleaved without the wait, 32-38 ms alone). Each sample then starts
# with one untimed call. Every column waits alike, TensorFlow's too although its process runs
# nothing else: on this machine, calls that use two threads run slower for a few hundred ms
# after a pause, for every framework (measured on the RNN: tf.function 8.1 ms back to back,
# 11.0 ms sampled this way; d2s native 10.0 and 11.4 ms; a one-thread loop is not slowed), so
# a column timed back to back while the others pause would be favoured. ``--settle 0`` times
# every column back to back.
SETTLE = 0.25


class Sampler:
    """Times one runner the way every column is timed: ``prepare`` (two warm-up calls, then how
    many calls fill ``budget`` seconds), then ``sample``: ``settle`` seconds of sleep, one
    untimed call, and the timed calls; returns (seconds per call, CPU seconds per call)."""

    def __init__(self, f):
        self.f = f
        self.number = 1

    def prepare(self, budget):
        self.f()
        if budget:
            t = time.perf_counter()
            self.f()
            self.number = max(1, int(budget / max(time.perf_counter() - t, 1e-7)))

    def sample(self, settle):
        if settle:
            time.sleep(settle)
            self.f()  # untimed: the other runners' calls have evicted this one's data from the caches
        t, c = time.perf_counter(), time.process_time()
        for _ in range(self.number):
            self.f()
        return (time.perf_counter() - t) / self.number, (time.process_time() - c) / self.number


def median_times(runners, repeat, budget=0.05, settle=SETTLE):
    """Median seconds per call of each runner (a dict name -> callable, or a Sampler such as the
    TensorFlow process's): warm-up, then ``repeat`` samples, the runners interleaved, each sample
    after ``settle`` seconds of sleep and one untimed call; each sample runs enough calls to
    last about ``budget`` seconds."""
    samplers = {k: f if hasattr(f, "sample") else Sampler(f) for k, f in runners.items()}
    for s in samplers.values():
        s.prepare(budget)
    samples = {k: [] for k in runners}
    cpu = {k: [] for k in runners}
    for _ in range(repeat):
        for k, s in samplers.items():
            wall, c = s.sample(settle)
            samples[k].append(wall)
            cpu[k].append(c)
    CPU_TIMES.clear()
    CPU_TIMES.update({k: statistics.median(v) for k, v in cpu.items()})
    return {k: statistics.median(v) for k, v in samples.items()}


CPU_TIMES = {}  # the process CPU seconds per call of the last median_times (less sensitive to load)


def max_diff(got, want):
    """(max abs difference over all outputs, max abs reference value)."""
    got, want = _flat(got), _flat(want)
    if len(got) != len(want):
        return float("inf"), 0.0
    d = max((float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64)))) if np.size(w) else 0.0
             for g, w in zip(got, want)), default=0.0)
    m = max((float(np.max(np.abs(w))) if np.size(w) else 0.0 for w in want), default=0.0)
    return d, m


def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


# ---------------------------------------------------------------- the TensorFlow subprocess
def tf_serve(folder, column="tf", native_wait=300.0):
    """Run in a column's own interpreter (TensorFlow's, or with ``--separate`` any column's):
    answer the parent's commands, one per line on stdin, with one line each on stdout:
    ``init CASE BUDGET`` (build the case from ``folder``, write its outputs there, prepare its
    Sampler; answers ``ok VERSION``), ``sample CASE SETTLE`` (answers ``time WALL CPU``) and
    ``quit``; a failure answers ``error MESSAGE``. The parent interleaves its samples with the
    other columns' (see ``TfSampler``)."""
    pin_threads()
    if column == "tf":
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        tf.config.threading.set_inter_op_parallelism_threads(THREADS)
        version = tf.__version__
    else:
        version = column
    samplers = {}
    for line in sys.stdin:
        cmd, *rest = line.split()
        try:
            if cmd == "quit":
                return
            case = rest[0]
            if cmd == "init":
                with np.load(os.path.join(folder, f"in_{case}.npz")) as z:
                    inputs = {k: z[k] for k in z.files}
                name = case.split("@")[0]
                f = tf_runner(name, inputs) if column == "tf" else column_runner(column, name, inputs, native_wait)
                np.savez(os.path.join(folder, f"out_{case}.npz"), *_flat(f()))
                samplers[case] = Sampler(f)
                samplers[case].prepare(float(rest[1]))
                answer = f"ok {version}"
            else:
                answer = "time %r %r" % samplers[case].sample(float(rest[1]))
        except Exception as e:  # noqa: BLE001 - one failing workload must not hide the others
            answer = "error " + f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
        print(answer, flush=True)


class TfServer:
    """A column's own process (``tf_serve``), started once per run: TensorFlow's (it may need
    another numpy than this process's), or with ``--separate`` any column's."""

    def __init__(self, tf_python, column="tf", native_wait=300.0):
        self.folder = tempfile.TemporaryDirectory()
        env = dict(os.environ, PYTHONPATH="") if column == "tf" else None
        # its stderr goes to a file: TensorFlow's logging could fill a pipe nobody reads meanwhile
        self.log = open(os.path.join(self.folder.name, "stderr.txt"), "w+")
        self.proc = subprocess.Popen([tf_python, os.path.abspath(__file__), "--tf-serve", self.folder.name,
                                      "--serve-column", column, "--native-wait", str(native_wait),
                                      "--threads", str(THREADS)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=env)
        self.column = column
        self.version = None

    def ask(self, line):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline().strip()
        except (BrokenPipeError, OSError):
            answer = ""
        if not answer:
            self.log.seek(0)
            why = self.log.read().strip().splitlines() or ["no output"]
            raise Unavailable(f"{self.column} worker failed: {why[-1][:160]}")
        if answer.startswith("error "):
            raise Unavailable(answer[len("error "):])
        return answer

    def runner(self, case, inputs, budget):
        """(a TfSampler for ``case``, TensorFlow's outputs) or raises Unavailable."""
        np.savez(os.path.join(self.folder.name, f"in_{case}.npz"), **inputs)
        self.version = self.ask(f"init {case} {budget!r}").split(" ", 1)[1]
        with np.load(os.path.join(self.folder.name, f"out_{case}.npz")) as z:
            outs = [z[f"arr_{i}"] for i in range(len(z.files))]
        return TfSampler(self, case), outs

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.wait(timeout=30)
        self.log.close()
        self.folder.cleanup()


class TfSampler:
    """A Sampler whose calls run in the TensorFlow process (timed there)."""

    def __init__(self, server, case):
        self.server, self.case = server, case

    def prepare(self, budget):
        pass  # done by ``init``

    def sample(self, settle):
        _, wall, cpu = self.server.ask(f"sample {self.case} {settle!r}").split()
        return float(wall), float(cpu)


def find_tf_python(path):
    if path:
        return path, None
    try:
        import importlib.util
        if importlib.util.find_spec("tensorflow") is not None:
            return sys.executable, None
    except (ImportError, ValueError):
        pass
    return None, ("tensorflow is not importable here; pass --tf-python PATH (an interpreter with "
                  "tensorflow, e.g. a separate venv: python -m venv venv-tf && venv-tf/bin/pip install tensorflow-cpu)")


# ---------------------------------------------------------------- --alone: steady state
ALONE_WARM = 1.0  # seconds of untimed calls before an --alone column's samples


def column_runner(col, name, inputs, native_wait):
    """A no-argument callable running workload ``name`` in column ``col`` (raises Unavailable
    or ImportError where that column cannot run here)."""
    if col == "numpy":
        return lambda: NUMPY[name](**inputs)
    if col.startswith("d2s-"):
        return d2s_runner(name, inputs, {"d2s-py": "python"}.get(col, col[4:]), native_wait)
    return {"jax": jax_runner, "torch": torch_runner, "tf": tf_runner}[col](name, inputs)


def alone_child(args):
    """In a fresh interpreter: column ``args.alone_child`` only, each case warmed up for
    ``ALONE_WARM`` s, then timed back to back; prints one ``ALONE {json}`` line."""
    if args.alone_child == "tf":
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        tf.config.threading.set_inter_op_parallelism_threads(THREADS)
    result = {}
    for case, (name, inputs) in cases_for([w.strip() for w in args.only.split(",")], args.quick).items():
        try:
            f = column_runner(args.alone_child, name, inputs, args.native_wait)
        except (Unavailable, ImportError) as e:
            result[case] = f"n/a ({e})"
            continue
        end = time.perf_counter() + ALONE_WARM
        while time.perf_counter() < end:
            f()
        result[case] = median_times({args.alone_child: f}, args.repeat or 5, settle=0.0)[args.alone_child]
    print("ALONE " + json.dumps(result), flush=True)


def native_blas():
    """Which BLAS the native backend's matrix products call in this process."""
    try:
        from d2s_runtime.native import mkl
    except ImportError:
        return "none (no native backend)"
    return mkl.blas_name()


def alone(args):
    """Every column in a process of its own, timed back to back after a warm-up (the steady
    state of a training loop; no other framework's threads anywhere), the columns run one after
    another in ``--rounds`` rounds; the time is the median of the rounds' medians."""
    only = ",".join(w for w in args.only.split(",") if w.strip() and w.strip() != "rnn-slope")
    columns = ["d2s-py", "d2s-native", "numpy"] + (["jax", "torch", "tf"] if args.peers else [])
    tf_python = find_tf_python(args.tf_python)[0] if args.peers else None
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}  ({os.cpu_count()} CPUs; "
          f"--alone: each column in its own process, {THREADS} threads, warmed up {ALONE_WARM:g} s, then "
          f"{args.repeat or 5} samples back to back; {args.rounds} rounds; native products: {native_blas()})")
    rounds = []
    for r in range(args.rounds):
        row = {}
        for col in columns:
            py = tf_python if col == "tf" else sys.executable
            if py is None:
                row[col] = {}
                continue
            cmd = [py, os.path.abspath(__file__), "--alone-child", col, "--only", only, "--threads", str(THREADS),
                   "--native-wait", str(args.native_wait)] + (["--quick"] if args.quick else []) \
                + (["--repeat", str(args.repeat)] if args.repeat else [])
            out = subprocess.run(cmd, capture_output=True, text=True,
                                 env=dict(os.environ, PYTHONPATH="") if col == "tf" else None)
            line = [ln for ln in out.stdout.splitlines() if ln.startswith("ALONE ")]
            row[col] = json.loads(line[-1][len("ALONE "):]) if line else {}
        rounds.append(row)
        print(f"  round {r + 1} done", flush=True)
    cases = list(cases_for(only.split(","), args.quick))
    times = {c: {} for c in cases}
    print()
    print("time per call, median over rounds (each round: the median of its samples), and the rounds' range")
    print("| case | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for case in cases:
        cells = []
        for col in columns:
            vals = [r[col][case] for r in rounds if isinstance(r[col].get(case), float)]
            if vals:
                times[case][col] = statistics.median(vals)
                cells.append(f"{fmt_time(times[case][col])} ({fmt_time(min(vals))}-{fmt_time(max(vals))})")
            else:
                why = next((r[col][case] for r in rounds if case in r[col]), "no result")
                times[case][col] = Unavailable(why)
                cells.append(str(why))
        print(f"| {case} | " + " | ".join(cells) + " |")
    peers = [c for c in ("jax", "torch", "tf") if c in columns]
    if peers:
        print()
        print("ratios (d2s-native / peer)")
        for case in cases:
            a = times[case].get("d2s-native")
            parts = [f"{p} {a / times[case][p]:.2f}x" for p in ["numpy"] + peers
                     if isinstance(a, float) and isinstance(times[case].get(p), float)]
            print(f"  {case}: " + ", ".join(parts))
    print(f"load average at end:   {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return times


# ---------------------------------------------------------------- main
def cases_for(only, quick, tiny=False):
    """{case: (workload name, inputs)}: a case is a workload at one size (``tiny``: small
    sizes that only check that every column runs and agrees, for the smoke test)."""
    cases = {}
    if "control" in only:
        for steps in ((0, 3, 20) if tiny else CONTROL_STEPS[:3] if quick else CONTROL_STEPS):
            cases[f"control@{steps}"] = ("control", control_inputs(steps))
    if "mlp" in only:
        cases["mlp"] = ("mlp", mlp_inputs(4, (8, 6, 6, 3)) if tiny else mlp_inputs())
    if "rnn" in only:
        cases["rnn"] = ("rnn", rnn_inputs(3, 2, 3, 4) if tiny else rnn_inputs())
    if "seed" in only:
        cases["seed"] = ("seed", seed_inputs(8) if tiny else seed_inputs())
    return cases


def bench(args):
    only = [w.strip() for w in args.only.split(",") if w.strip()]
    repeat = args.repeat or (1 if args.tiny else 5 if args.quick else 15)
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}  "
          f"({os.cpu_count()} CPUs; every framework limited to {THREADS} threads); median of {repeat} samples, "
          f"each after {0.0 if args.tiny else args.settle:g} s of sleep and one untimed call; "
          f"native products: {native_blas()}")
    cases = cases_for(only, args.quick, args.tiny)
    columns = ["d2s-py", "d2s-native", "d2s-auto", "numpy"] + (["jax", "torch", "tf"] if args.peers else [])
    times = {c: {} for c in cases}   # case -> column -> seconds or Unavailable
    diffs = {c: {} for c in cases}   # case -> column -> (max abs diff, max abs ref)
    refs = {}
    budget = 0.0 if args.tiny else 0.05
    tf_server = None
    if args.peers:
        tf_python, why = find_tf_python(args.tf_python)
        if tf_python is None:
            print(f"tf: skipped ({why})")
        else:
            tf_server = TfServer(tf_python)
    servers = {}  # column -> its own process (--separate)
    try:
        for case, (name, inputs) in cases.items():
            refs[case] = NUMPY[name](**inputs)
            runners = {}
            for col in ("numpy", "d2s-py", "d2s-native", "d2s-auto") + (("jax", "torch") if args.peers else ()):
                try:
                    if args.separate:
                        if col not in servers:
                            servers[col] = TfServer(sys.executable, col, args.native_wait)
                        runners[col], outs = servers[col].runner(case, inputs, budget)
                        diffs[case][col] = max_diff(outs, refs[case])
                    else:
                        runners[col] = column_runner(col, name, inputs, args.native_wait)
                except Unavailable as e:
                    times[case][col] = e
                except ImportError as e:
                    times[case][col] = Unavailable(f"not installed ({e.name})")
            for col, f in runners.items():
                if col not in diffs[case]:
                    diffs[case][col] = max_diff(f(), refs[case])
            if args.peers and tf_server is None:
                times[case]["tf"] = Unavailable("skipped: tensorflow not found")
            elif tf_server is not None:
                try:
                    runners["tf"], outs = tf_server.runner(case, inputs, budget)
                    diffs[case]["tf"] = max_diff(outs, refs[case])
                except Unavailable as e:
                    times[case]["tf"] = e
            for col, t in median_times(runners, repeat, budget=budget,
                                       settle=0.0 if args.tiny else args.settle).items():
                times[case][col] = t
            print(f"  timed {case}", flush=True)
    finally:
        if tf_server is not None:
            tf_server.close()
        for server in servers.values():
            server.close()
    tf_version = tf_server.version if tf_server is not None else None
    report(cases, columns, times, diffs, tf_version)
    if AUTO_CHOICES:
        print()
        print('backend="auto" chose (backend_report() after its measurement):')
        for name, line in AUTO_CHOICES.items():
            print(f"  {name}: {line}")
    slope = rnn_slope(args, repeat) if "rnn-slope" in only else None
    print(f"load average at end:   {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return {"times": times, "diffs": diffs, "rnn_slope": slope}


def report(cases, columns, times, diffs, tf_version):
    def cell(v):
        if isinstance(v, Unavailable):
            return f"n/a ({v})"
        return fmt_time(v)

    print()
    print("time per call (median)" + (f"; tensorflow {tf_version}" if tf_version else ""))
    print("| case | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for case in cases:
        print(f"| {case} | " + " | ".join(cell(times[case].get(c, Unavailable("not run"))) for c in columns) + " |")
    peers = [c for c in ("jax", "torch", "tf") if c in columns]
    print()
    print("ratios (d2s time / peer time, same run; < 1 means d2s is faster)")
    heads = [f"{d}/{p}" for d in ("d2s-py", "d2s-native") for p in ["numpy"] + peers]
    print("| case | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    for case in cases:
        row = []
        for d in ("d2s-py", "d2s-native"):
            for p in ["numpy"] + peers:
                a, b = times[case].get(d), times[case].get(p)
                row.append(f"{a / b:.2f}x" if isinstance(a, float) and isinstance(b, float) else "-")
        print(f"| {case} | " + " | ".join(row) + " |")
    print()
    print("max abs difference vs numpy by hand (largest reference magnitude in brackets)")
    for case in cases:
        parts = [f"{c} {d:.2g}" for c, (d, m) in diffs[case].items() if c != "numpy"]
        m = diffs[case].get("numpy", (0, 0))[1]
        print(f"  {case} [{m:.3g}]: " + ", ".join(parts))
    ctl = [c for c in cases if c.startswith("control@")]
    if len(ctl) >= 2:
        lo, hi = ctl[0], ctl[-1]
        steps = int(hi.split("@")[1]) - int(lo.split("@")[1])
        print()
        print(f"control loop, cost per iteration (slope {lo} -> {hi}):")
        for c in columns:
            a, b = times[lo].get(c), times[hi].get(c)
            if isinstance(a, float) and isinstance(b, float):
                print(f"  {c}: {(b - a) / steps * 1e6:.2f} us/iteration")


def rnn_slope(args, repeat):
    """RNN forward+backward at several T: the loop gradient must cost O(T)."""
    print()
    print("RNN forward+backward" + ("" if args.tiny else " (B=32, D=64, H=256)") + ", time per time step:")
    rows = []
    for T in ([int(t) for t in args.slope_t.split(",")] if args.slope_t else (2, 4, 8) if args.tiny else RNN_SLOPE_T):
        inputs = rnn_inputs(T, 2, 3, 4) if args.tiny else rnn_inputs(T=T)
        runners = {"d2s-py": d2s_runner("rnn", inputs, "python", args.native_wait)}
        try:
            runners["d2s-native"] = d2s_runner("rnn", inputs, "native", args.native_wait)
        except Unavailable as e:
            native_note = str(e)
        else:
            native_note = None
        t = median_times(runners, 1 if args.tiny else 2 if args.quick else max(3, repeat // 3), budget=0.0,
                         settle=0.0 if args.tiny else args.settle)
        cpu = dict(CPU_TIMES)
        d, m = max_diff(runners["d2s-py"](), rnn_numpy(**inputs))
        rows.append((T, t, native_note, d, cpu))
        nat = fmt_time(t["d2s-native"]) if "d2s-native" in t else f"n/a ({native_note})"
        print(f"  T={T:5d}: d2s-py {fmt_time(t['d2s-py'])} ({t['d2s-py'] / T * 1e6:.1f} us/step; "
              f"CPU {cpu['d2s-py'] / T * 1e6:.1f} us/step), d2s-native {nat}"
              + (f" ({t['d2s-native'] / T * 1e6:.1f} us/step)" if "d2s-native" in t else "")
              + f"; max abs diff vs numpy {d:.2g}", flush=True)
    if len(rows) >= 2:
        (t0, a, _, _, ca), (t1, b, _, _, cb) = rows[0], rows[-1]
        print(f"  growth of time/T from T={t0} to T={t1}: wall {(b['d2s-py'] / t1) / (a['d2s-py'] / t0):.2f}x, "
              f"CPU {(cb['d2s-py'] / t1) / (ca['d2s-py'] / t0):.2f}x (1.0 = linear in T)")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer samples, control loop up to 1,000 steps (< 2 min)")
    p.add_argument("--peers", action="store_true", help="also time jax, torch and tensorflow")
    p.add_argument("--no-peers", dest="peers", action="store_false", help="d2s and numpy only (the default)")
    p.add_argument("--tf-python", default=None,
                   help="python interpreter that can import tensorflow (default: this one, if it can)")
    p.add_argument("--only", default="control,mlp,rnn,seed,rnn-slope",
                   help="comma-separated workloads: control, mlp, rnn, seed, rnn-slope")
    p.add_argument("--threads", type=int, default=2,
                   help="threads every framework may use (default 2; read before numpy is imported)")
    p.add_argument("--tiny", action="store_true", help="tiny sizes, one sample: checks that every column runs")
    p.add_argument("--repeat", type=int, default=None, help="samples per timing (default 15, 5 with --quick)")
    p.add_argument("--slope-t", default=None, help="comma-separated T values of rnn-slope (default 64,256,1024)")
    p.add_argument("--native-wait", type=float, default=300.0,
                   help="seconds to wait for a native background compile before giving up on that column")
    p.add_argument("--alone", action="store_true",
                   help="each column in a process of its own, timed back to back after a warm-up, in --rounds "
                        "rounds (steady state; rnn-slope is skipped)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of --alone (default 3)")
    p.add_argument("--separate", action="store_true",
                   help="each column in a process of its own, the samples still interleaved (the fairest "
                        "comparison with --contended: no framework's threads in another's process)")
    p.add_argument("--tf-serve", default=None, help=argparse.SUPPRESS)
    p.add_argument("--serve-column", default="tf", help=argparse.SUPPRESS)
    p.add_argument("--alone-child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--contended", default=None, choices=KINDS,
                   help="time with load beside this process: busy (one spinning process), busy2 (two), loader "
                        "(a 2-worker DataLoader producing batches without pause)")
    p.add_argument("--settle", type=float, default=SETTLE,
                   help=f"seconds of sleep before each sample of every column (default {SETTLE}; 0: back to back, "
                        "where frameworks in this process may then slow each other down)")
    args = p.parse_args(argv)
    pin_threads()
    if args.tf_serve:
        tf_serve(args.tf_serve, args.serve_column, args.native_wait)
        return
    if args.alone_child:
        return alone_child(args)
    if args.contended:
        with Contention(args.contended) as load:
            print(f"contended: {load.describe()}", flush=True)
            return alone(args) if args.alone else bench(args)
    if args.alone:
        return alone(args)
    return bench(args)


if __name__ == "__main__":
    main()
