"""Native lowerings of what a decoding loop runs (issue 29): ``topk`` (the kernel's stable order,
NaN largest), ``multinomial`` (the same uniform numbers from the shared generator, the same
arithmetic: the same tokens), ``index_copy`` and ``setitem`` (a static key/value cache and
top-k filtering; in place where nothing reads the old value), ``arange`` over run-time bounds
and an integer index on a later dim (``v[:, [-1]]``) -- bit for bit the Python backend's."""
import numpy as np
import pytest

pytest.importorskip("numba")

import d2s  # noqa: E402
from d2s.dispatch import apply  # noqa: E402
from d2s.static import InputSpec, build_program  # noqa: E402
from d2s_runtime import Executor, native  # noqa: E402

from .helpers import check, compile_native  # noqa: E402

RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("native_sampling_cache")


def _ties(shape, dtype="float32"):
    """Values with many ties and a few NaN."""
    x = RNG.integers(0, 4, shape).astype(dtype)
    x.reshape(-1)[RNG.integers(0, x.size, 2)] = np.nan
    return x


def test_topk_largest_and_smallest_with_ties_and_nan(cache):
    def f(x):
        v, i = d2s.topk(x, 3)
        w, j = d2s.topk(x, 2, largest=False)
        return v, i, w, j, d2s.topk(x, x.shape[-1])[1]

    prog = build_program(f, InputSpec([None, 7]))
    fn = compile_native(prog, cache)
    check(prog, fn, [(_ties((4, 7)),), (RNG.standard_normal((1, 7)).astype("float32"),), (_ties((2, 7)),)])


def test_multinomial_draws_the_kernels_tokens(cache):
    def f(p):
        return d2s.multinomial(p, 1), d2s.multinomial(p, 3), d2s.multinomial(p, 4, replacement=True)

    prog = build_program(f, InputSpec([None, 6]))
    fn = compile_native(prog, cache)
    ref = Executor(prog)
    for rows in (1, 5):
        p = RNG.random((rows, 6)).astype("float32")
        p[:, 2] = 0.0  # a category never drawn
        d2s.manual_seed(3)
        want = ref.run(p)
        d2s.manual_seed(3)
        got = fn(p)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and np.array_equal(g, w)
        assert not (np.concatenate([np.asarray(g).reshape(-1) for g in got]) == 2).any()
    with pytest.raises(ValueError, match="multinomial"):
        fn(-np.ones((1, 6), "float32"))


def _cache_step(k_cache, v, pos, logits, bound):
    k_cache = apply("index_copy_dim", k_cache, d2s.reshape(pos, [1]), v, axis=2)
    logits = logits * 1.0  # (build_program refuses writes into its inputs)
    logits[logits < bound] = -float("inf")
    k_cache[:, :, 0] = k_cache[:, :, 0] * 0.5
    return k_cache, logits


def test_cache_writes_and_top_k_filtering(cache):
    prog = build_program(_cache_step, InputSpec([2, 3, 5, 4]), InputSpec([2, 3, 1, 4]), InputSpec([], "int64"),
                         InputSpec([2, 6]), InputSpec([2, 1]))
    fn = compile_native(prog, cache)
    inputs = []
    for pos in (0, 3, 4):
        inputs.append((RNG.standard_normal((2, 3, 5, 4)).astype("float32"), RNG.standard_normal((2, 3, 1, 4)).astype(
            "float32"), np.int64(pos), RNG.standard_normal((2, 6)).astype("float32"),
            RNG.standard_normal((2, 1)).astype("float32")))
    check(prog, fn, inputs)
    with pytest.raises(IndexError):
        fn(*inputs[0][:2], np.int64(5), *inputs[0][3:])


def _carried_cache(x, n):
    """A loop writing a carried cache at its counter (in place: nothing reads the old one)."""
    def body(i, c):
        return i + 1, apply("index_copy_dim", c, d2s.reshape(i, [1]), x * i.cast("float32"), axis=0)

    return d2s.while_loop(lambda i, c: i < n, body, (d2s.zeros([], dtype="int64"), d2s.zeros(6, 3)))[1]


def test_a_loop_writing_its_cache_in_place(cache):
    prog = build_program(_carried_cache, InputSpec([1, 3]), InputSpec([], "int64"))
    low = native.lower_program(prog)
    assert ".copy()" not in low.source.split("while True:")[1]  # no copy of the cache per step
    fn = compile_native(prog, cache)
    check(prog, fn, [(RNG.standard_normal((1, 3)).astype("float32"), np.int64(n)) for n in (0, 4, 6)])


def test_positions_new_axes_and_run_time_shapes(cache):
    def f(x, a, b, y):
        pos = d2s.arange(a, b)
        mask = d2s.arange(b, a, -2)[:, None] <= pos[None, :]  # a causal mask from run-time positions
        heads = y.reshape(y.shape[0], y.shape[1], 2, 3)  # view(B, T, nh, hs) with T dynamic
        return pos, mask, x[:, [-1, 0]], x[:, [2]], x[1, None], heads

    prog = build_program(f, InputSpec([3, 4]), InputSpec([], "int64"), InputSpec([], "int64"), InputSpec([2, None, 6]))
    fn = compile_native(prog, cache)
    x = RNG.standard_normal((3, 4)).astype("float32")
    check(prog, fn, [(x, np.int64(a), np.int64(b), RNG.standard_normal((2, t, 6)).astype("float32"))
                     for a, b, t in ((0, 5, 1), (3, 3, 4), (-2, 4, 2), (1, 8, 3))])
    with pytest.raises(ValueError, match="arange"):  # as the kernel (and PyTorch) refuses
        fn(x, np.int64(7), np.int64(1), np.zeros((2, 1, 6), "float32"))
