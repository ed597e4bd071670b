"""Native lowerings of row lookups by integer index arrays and of ``split``
(their hooks in runtime/d2s_runtime/ops/indexing.py and ops/shape_ops.py) against the Python backend: an embedding lookup with PyTorch's range check,
its gradient (``index_add`` at repeated rows, in ``np.add.at``'s order: bit-identical), numpy's
negative rows, out-of-range rows raising on both backends, ``split`` into equal and unequal
pieces along the last and the leading dim; and the LSTM language model of
``benchmarks/bench_models.py`` (embedding, ``nn.LSTM``, split gates; one layer here) trains natively."""
import numpy as np
import pytest

pytest.importorskip("numba")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.static import InputSpec, build_program, gradients  # noqa: E402
from d2s_runtime import Executor  # noqa: E402

from .helpers import check, compile_native  # noqa: E402

RNG = np.random.default_rng(3)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("native_rows_cache")


def _embedding(table, ids, rows):
    e = F.embedding(ids, table)  # index_check + rows taken by an integer array
    a, b, c = d2s.split(e, [1, 2, 3], -1)
    head, tail = d2s.split(table, [2, 3], 0)
    picked = table[rows]  # numpy's rule: negative rows count from the end
    return (a * b.sum(-1, keepdim=True)).sum() + (c * c).sum() + (picked * picked).sum() + head.sum() * tail.mean(), \
        e, picked


def test_embedding_rows_split_and_their_gradients_equal_the_python_backend(cache):
    prog = gradients(build_program(_embedding, InputSpec([5, 6]), InputSpec([3, 4], "int64"),
                                   InputSpec([4], "int32"))).verify()
    ops = {op.type for op in prog.block.ops}
    assert {"index_check", "getitem", "index_add", "split"} <= ops
    fn = compile_native(prog, cache)
    cases = []
    for k in range(3):
        ids = RNG.integers(0, 5, (3, 4))
        ids[0] = [1, 1, 1, 4]  # repeated rows: their gradients accumulate
        rows = RNG.integers(-5, 5, 4).astype("int32")
        cases.append((RNG.standard_normal((5, 6)).astype("float32"), ids, rows, np.array(1.0, "float32"),
                      RNG.standard_normal((3, 4, 6)).astype("float32"), RNG.standard_normal((4, 6)).astype("float32")))
    check(prog, fn, cases, rtol=1e-6, atol=1e-6, exact=(1, 2, 3))
    for bad_ids, bad_rows in ((5, 0), (-1, 0), (0, 5), (0, -6)):
        bad = list(cases[0])
        bad[1] = np.full((3, 4), bad_ids)
        bad[2] = np.full(4, bad_rows, "int32")
        with pytest.raises(Exception, match="out of"):
            Executor(prog).run(*bad)
        with pytest.raises(IndexError):
            fn(*bad)


def test_the_lstm_language_model_trains_natively(cache, monkeypatch):
    monkeypatch.setenv("D2S_CACHE_DIR", str(cache))
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import _workloads as W
    d2s.manual_seed(0)
    models = [W.lstm_lm(d2s, vocab=11, emb=6, hidden=5, layers=1) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    d2s.jit.to_static(models[0], backend="python")
    d2s.jit.to_static(models[1], backend="native")
    tokens, targets = (d2s.tensor(a) for a in W.lstm_data(batch=3, seq=4, vocab=11))
    losses = [[], []]
    for _ in range(3):
        for k, m in enumerate(models):
            for p in m.parameters():
                p.grad = None
            loss = m(tokens, targets)
            loss.backward()
            with d2s.no_grad():
                for p in m.parameters():
                    p -= 0.5 * p.grad
            losses[k].append(float(loss))
        models[1].forward.wait_native(600)
    assert models[1].forward.backend_report() == "native", models[1].forward.backend_report()
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-4, atol=1e-6)


def _attention(q, k, v, w):
    s = d2s.matmul(q, d2s.transpose(k, -2, -1)) * 0.5  # (B, H, L, S) from strided head views
    p = s + d2s.arange(0, 3, dtype="float32")
    wt = d2s.transpose(w[0, 0], 0, 1)  # (E, S)
    # a batched operand times a matrix, and leading dims of 1 broadcast against (B, H)
    return (d2s.matmul(p, v) * w).sum() + (d2s.matmul(q[0], wt) ** 2).sum() + \
        (d2s.matmul(w[:, :1], d2s.transpose(q, -2, -1)) ** 2).sum()


def test_batched_matmuls_and_arange_equal_the_python_backend(cache):
    from d2s_runtime.native import mkl
    if mkl.library() is None:
        pytest.skip("batched matmuls lower with MKL only")
    # q, k, v: (B, T, H, E) tensors read as (B, H, T, E) views, as attention reads its heads
    spec = [InputSpec([2, 3, 2, 4]), InputSpec([2, 3, 2, 4]), InputSpec([2, 3, 2, 4]), InputSpec([1, 2, 3, 4])]

    def fn(q, k, v, w):
        return _attention(*(d2s.transpose(t, 1, 2) for t in (q, k, v)), w)

    prog = gradients(build_program(fn, *spec)).verify()
    assert any(op.type == "matmul" and len(prog.block.lookup(op.outputs[0]).type.shape) == 4 for op in prog.block.ops)
    native_fn = compile_native(prog, cache)
    cases = [tuple(RNG.standard_normal(s.shape).astype("float32") for s in spec) + (np.array(1.0, "float32"),)
             for _ in range(2)]
    check(prog, native_fn, cases, rtol=2e-5, atol=2e-5)
