"""Every op on device 'gpu' (cupy) against 'cpu' (numpy): values and gradients; and the
device-parametrized suites (conftest.PARAMETRIZED_SUITES, which run on "cpu" and "strict" by
default) run once more on "gpu".

Skipped as a whole where cupy or a CUDA GPU is missing.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import d2s
from d2s.ops.nn import conv2d, dropout, embedding, max_pool2d, scatter_add


def _gpu_unavailable():
    try:
        import cupy
    except ImportError:
        return "cupy is not installed (pip install cupy-cudaXXx for your CUDA version)"
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return "cupy is installed but no CUDA GPU was found"
    except Exception as e:  # no driver
        return f"cupy is installed but no CUDA GPU is usable ({e})"
    return None


_REASON = _gpu_unavailable()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"GPU tests need cupy and a GPU: {_REASON}")

RNG = np.random.default_rng(5)
IDX = np.array([[0, 2, 1], [1, 1, 0]])


def r(*shape):
    return RNG.uniform(0.5, 2.0, size=shape)


# name, function, float inputs (gradients are compared for these), extra non-float inputs
CASES = [
    ("add", lambda a, b: a + b, [r(2, 3), r(3)]),
    ("sub", lambda a, b: a - b, [r(2, 3), r(2, 1)]),
    ("mul", lambda a, b: a * b, [r(2, 3), r(3)]),
    ("div", lambda a, b: a / b, [r(2, 3), r(3)]),
    ("pow", lambda a, b: a ** b, [r(2, 3), r(3)]),
    ("maximum_minimum", lambda a, b: d2s.maximum(a, b) + d2s.minimum(a, b), [r(2, 3), r(3)]),
    ("unary", lambda a: d2s.exp(a) + d2s.log(a) + d2s.sqrt(a) + d2s.sin(a) + d2s.cos(a) + d2s.tanh(a)
     + d2s.sigmoid(a) + d2s.relu(a - 1) + d2s.abs(a - 1) - a, [r(3, 4)]),
    ("clip_where", lambda a: d2s.clip(a, 0.8, 1.5) + d2s.where(a > 1, a, 0.0), [r(3, 4)]),
    ("matmul", lambda a, b: a @ b, [r(2, 3, 4), r(4, 5)]),
    ("reductions", lambda a: (d2s.sum(a, 1), d2s.mean(a, 0), *d2s.max(a, 1), d2s.min(a), d2s.prod(a, 1),
                              d2s.logsumexp(a, 1), d2s.amax(a, 0), a.std(1), a.norm(dim=0)), [r(3, 4)]),
    ("scans_sorting", lambda a: (a.cumprod(1), a.logcumsumexp(0), *a.sort(1, descending=True), *a.topk(2),
                                 *a.median(0), a.median(), *a.kthvalue(2, 1), *d2s.floor(a * 2).mode(1)), [r(3, 5)]),
    ("shapes", lambda a: (d2s.reshape(a, [4, 3]), d2s.transpose(a), d2s.permute(a, 1, 0), d2s.unsqueeze(a, 0),
                          d2s.squeeze(d2s.unsqueeze(a, 1), 1), d2s.broadcast_to(a, (2, 3, 4)), d2s.flatten(a),
                          d2s.concat([a, a], 1), d2s.stack([a, a]), *d2s.split(a, [1, 2], 0),
                          d2s.cast(a, "float32")), [r(3, 4)]),
    ("indexing", lambda a: (a[1:, ::2], a[None, ..., 0], a[a > 1.0], a[d2s.tensor([0, 0, 2]).to(a.device)]), [r(3, 4)]),
    ("softmax", lambda a: (d2s.softmax(a, 1), d2s.log_softmax(a, 0)), [r(3, 4)]),
    ("cumsum_gather", lambda a: (d2s.cumsum(a, 1), d2s.gather(a, 1, d2s.tensor(IDX).to(a.device))), [r(2, 4)]),
    ("scatter_add", lambda a, s: scatter_add(a, 1, d2s.tensor(IDX).to(a.device), s), [r(2, 4), r(2, 3)]),
    ("conv2d", lambda x, w, b: conv2d(x, w, b, stride=2, padding=1), [r(2, 3, 6, 5), r(4, 3, 3, 3), r(4)]),
    ("max_pool2d", lambda x: max_pool2d(x, 2, 1, 1), [RNG.permutation(2 * 2 * 4 * 4).reshape(2, 2, 4, 4) / 7.0]),
    ("embedding", lambda w: embedding(d2s.tensor(IDX).to(w.device), w), [r(3, 4)]),
]


def _run(fn, arrays, device):
    xs = [d2s.tensor(a, requires_grad=True, device=device) for a in arrays]
    out = fn(*xs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    total = sum(d2s.sum(o * o) for o in outs if o.dtype.is_floating_point)
    total.backward()
    return [o.numpy() if device == "cpu" else o.cpu().numpy() for o in outs], \
           [x.grad.cpu().numpy() for x in xs]


@pytest.mark.parametrize("name,fn,arrays", CASES, ids=[c[0] for c in CASES])
def test_gpu_matches_cpu(name, fn, arrays):
    cpu_out, cpu_grad = _run(fn, arrays, "cpu")
    gpu_out, gpu_grad = _run(fn, arrays, "gpu")
    for c, g in zip(cpu_out + cpu_grad, gpu_out + gpu_grad):
        assert c.dtype == g.dtype and c.shape == g.shape
        np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-8)


def test_gpu_tensor_attributes_and_creation():
    t = d2s.tensor([[1.0, 2.0]], device="gpu")
    assert t.device == "gpu" and t.to("cpu").device == "cpu" and t.tolist() == [[1.0, 2.0]]
    for make in (d2s.zeros, d2s.ones, d2s.rand, d2s.randn):
        assert make(2, 3, device="gpu").device == "gpu"
    d2s.manual_seed(0)
    a = d2s.randn(4, device="gpu").cpu().numpy()
    d2s.manual_seed(0)
    np.testing.assert_array_equal(d2s.randn(4, device="gpu").cpu().numpy(), a)
    assert dropout(d2s.ones(100, device="gpu"), 0.5).device == "gpu"


def test_mixing_devices_is_a_clear_error():
    with pytest.raises(RuntimeError, match="different devices"):
        d2s.ones(3, device="gpu") + np.ones(3)


def test_parametrized_suites_on_gpu():
    """The suites that run on "cpu" and "strict" in the default run, on the real device."""
    from conftest import PARAMETRIZED_SUITES
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--devices=gpu",
                           *PARAMETRIZED_SUITES], cwd=root, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


# ---------------------------------------------------------------- backend="graph" (d2s_runtime/gpu)
# What the strict device's fake capture checks on the CPU (tests/runtime/gpu/test_capture.py),
# on the real thing: cupy's stream capture, conditional nodes, the cuBLAS shim.
def _graph_pair(fn):
    return d2s.jit.to_static(fn, backend="graph"), d2s.jit.to_static(fn)


def _graph_same(f, g, *args, rtol=1e-5, atol=1e-6):
    for _ in range(3):  # quick rung, warm-up, capture
        f(*args)
    assert f.backend_report() == "graph", f.backend_report()
    got, want = f(*args), g(*args)
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    flat = []
    for a, b in zip(got, want):
        if isinstance(a, (tuple, list)):
            flat += list(zip(a, b))
        else:
            flat.append((a, b))
    for a, b in flat:
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=rtol, atol=atol)


def test_graph_while_and_if_on_the_device():
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

    f, g = _graph_pair(control)
    x = d2s.tensor(np.linspace(-1, 1, 16).astype("float32"), device="gpu")
    for n in (0, 3, 50):
        _graph_same(f, g, x, d2s.tensor(n, device="gpu"))


def test_graph_if_else_node_and_cublas_shim():
    def branchy(x, w):
        if x.sum() > 0:
            y = (x @ w).relu()
        else:
            y = x.exp() - 1.0
        return y * 2.0

    f, g = _graph_pair(branchy)
    w = d2s.tensor(RNG.standard_normal((8, 8)).astype("float32"), device="gpu")
    for sign in (1.0, -1.0):
        x = d2s.tensor(np.abs(RNG.standard_normal((4, 8))).astype("float32") * sign, device="gpu")
        _graph_same(f, g, x, w)


def test_graph_while_gradient_with_device_stacks():
    def rnn_loss(params, xs, h0, n):
        W, U = params
        h, loss = h0, (h0 * 0.0).sum()
        t = d2s.zeros([], dtype="int64")
        while t < n:
            h = d2s.tanh(xs[t] @ W + h @ U)
            loss = loss + (h * h).sum()
            t = t + 1
        return loss

    f, g = _graph_pair(d2s.func.value_and_grad(rnn_loss))
    dev = lambda *s: d2s.tensor((RNG.standard_normal(s) * 0.3).astype("float32"), device="gpu")  # noqa: E731
    params = [dev(3, 5), dev(5, 5)]
    args = (params, dev(6, 2, 3), dev(2, 5), d2s.tensor(4, device="gpu"))
    f(*args)  # a first replay sizes the stacks
    _graph_same(f, g, *args)


def test_graph_fused_groups_run_the_emitted_kernels(monkeypatch):
    from d2s_runtime.gpu import cuda
    launched = []
    orig = cuda.CudaRecorder.fused

    def counting(self, plan, run, *args):
        launched.append(len(plan.kernels))
        return orig(self, plan, run, *args)

    monkeypatch.setattr(cuda.CudaRecorder, "fused", counting)

    def chain(x, w):
        h = x @ w
        return (h * 0.5 * (1.0 + d2s.tanh(h * 0.79788456 + h * h * h * 0.035677))).relu() - h.abs() * 0.1, \
            d2s.maximum(h, x.sum() * 0.0 + 0.2).mean()

    f, g = _graph_pair(chain)
    dev = lambda *s: d2s.tensor(RNG.standard_normal(s).astype("float32"), device="gpu")  # noqa: E731
    w = dev(6, 6)
    _graph_same(f, g, dev(4, 6), w)
    _graph_same(f, g, dev(4, 6), w)
    assert launched, "no fused group was captured"


def test_graph_random_draws_are_the_python_backends(monkeypatch):
    def noisy(x):
        return x * (d2s.rand(x.shape) < 0.5) + d2s.randn(3, 4) * 0.1 + d2s.randint(0, 5, (3, 4))

    xs = [d2s.tensor(RNG.standard_normal((3, 4)).astype("float32"), device="gpu") for _ in range(6)]
    outs = []
    for backend in ("graph", "python"):
        f = d2s.jit.to_static(noisy, backend=backend)
        d2s.manual_seed(9)
        outs.append([f(x).cpu().numpy() for x in xs])
        assert backend == "python" or f.backend_report() == "graph", f.backend_report()
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_graph_while_gradient_with_a_static_bound_reads_no_error_word(monkeypatch):
    from d2s_runtime.gpu import cuda
    reads = []
    orig = cuda.CudaGraphs.read_word
    monkeypatch.setattr(cuda.CudaGraphs, "read_word", lambda self, w: reads.append(1) or orig(self, w))

    def rnn_loss(params, xs, h0):
        W, U = params
        h, loss = h0, (h0 * 0.0).sum()
        t = d2s.zeros([], dtype="int64")
        while t < xs.shape[0]:
            h = d2s.tanh(xs[t] @ W + h @ U)
            loss = loss + (h * h).sum()
            t = t + 1
        return loss

    f, g = _graph_pair(d2s.func.value_and_grad(rnn_loss))
    dev = lambda *s: d2s.tensor((RNG.standard_normal(s) * 0.3).astype("float32"), device="gpu")  # noqa: E731
    params = [dev(3, 5), dev(5, 5)]
    _graph_same(f, g, params, dev(64, 2, 3), dev(2, 5))
    del reads[:]
    f(params, dev(64, 2, 3), dev(2, 5))
    assert reads == []  # 0 host synchronizations by the graph tier in the call
