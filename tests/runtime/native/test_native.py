"""The native backend (runtime/d2s_runtime/native/) against the Python backend: fused
element-wise chains with broadcasting for every lowered op and dtype (NaN, inf, signed zeros),
reductions over axes, matmul epilogues, shape ops, cond (both branches), while (zero-trip
included), scan, and the MLP / Elman RNN training programs. Arithmetic, comparisons, where,
max/min, abs, neg and relu are bit-identical to numpy; transcendental functions and sums
within a stated tolerance (libm vs numpy's SIMD; float64 accumulation vs pairwise sums)."""
import numpy as np
import pytest

pytest.importorskip("numba")

import d2s  # noqa: E402
from d2s.static import InputSpec, build_program, gradients  # noqa: E402

from .helpers import check, compile_native  # noqa: E402

RNG = np.random.default_rng(12)
SPECIAL = np.array([0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 1e-30, -7.0, 3.0, 0.5, -0.5], "float32")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("native_cache")


@pytest.fixture(params=["openblas", "mkl"])
def blas(request):
    """The BLAS the native lowering's products call: numba's ``np.dot`` (scipy's OpenBLAS), and
    MKL's gemm where ``d2s[mkl]`` installed it (``native/mkl.py``)."""
    from d2s_runtime.native import mkl
    if request.param == "openblas":
        request.getfixturevalue("openblas")
    elif mkl.library() is None:
        pytest.skip(f"MKL: {mkl.blas_name()}")
    return request.param


@pytest.fixture
def openblas(monkeypatch):
    """The lowering as without MKL: products call ``np.dot``."""
    from d2s_runtime.native import mkl
    monkeypatch.setattr(mkl, "library", lambda: None)


def _f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ------------------------------------------------------------------ element-wise, fused
def _arith(x, y, z, s):
    a = x * y + z - s            # broadcasting (3,4) * (4,) + (3,1) - ()
    b = (x - s) / y
    return (a, b, d2s.maximum(x, y), d2s.minimum(z, x), abs(x), -y, d2s.relu(x - 1.0), d2s.where(x > y, x, z),
            x == y, x < z, x >= s, d2s.logical_not(x > 0), (x > 0) & (y > 0), (x > 0) | (z > 0),
            x.astype("int64") if hasattr(x, "astype") else x, x * 2.0 + s * s)


def test_float32_arithmetic_is_bit_identical(cache):
    prog = build_program(_arith, InputSpec([3, 4]), InputSpec([4]), InputSpec([3, 1]), InputSpec([]))
    fn = compile_native(prog, cache)
    sp = SPECIAL
    cases = [(_f32(3, 4), _f32(4), _f32(3, 1), np.array(0.5, "float32")),
             (sp.reshape(3, 4), sp[:4][::-1].copy(), sp[4:7].reshape(3, 1), np.array(-0.0, "float32")),
             (sp.reshape(3, 4)[::-1].copy(), sp[8:12].copy(), sp[:3].reshape(3, 1), np.array(np.nan, "float32"))]
    check(prog, fn, cases)


def test_a_chain_fuses_through_stop_gradient():
    """``stop_gradient`` (what a gradient computed inside a program leaves between its ops) is the
    value itself: the chain around it is still one loop nest, with no temporary."""
    from d2s_runtime import native
    prog = build_program(lambda x, y: d2s.tanh((x + y).detach() * 2.0).detach() - y, InputSpec([3, 4]),
                         InputSpec([3, 4]))
    assert [op.type for op in prog.block.ops].count("stop_gradient") == 2
    source = native.lower_program(prog).source
    assert source.count("np.empty(") == 1 and source.count("for ") == 2  # one 2-d nest writing the output


def _unary(x):
    return (d2s.exp(x), d2s.log(abs(x) + 0.5), d2s.sqrt(abs(x)), d2s.sin(x), d2s.cos(x), d2s.tanh(x), d2s.sigmoid(x),
            d2s.sign(x), d2s.floor(x), d2s.clip(x, -1.0, 2.0), x ** 2.0, x // 0.75, x % 0.75,
            d2s.logaddexp(x, x * 0.5), d2s.tanh(x * 3.0) * 0.5 + d2s.sigmoid(x) - d2s.exp(-x * x))


def test_unary_math_within_a_few_ulp(cache):
    # one program for both float dtypes (one compile)
    prog = build_program(lambda a, b: _unary(a) + _unary(b), InputSpec([None, 4]), InputSpec([None, 4], "float64"))
    fn = compile_native(prog, cache)
    rows = (SPECIAL.reshape(3, 4), (RNG.standard_normal((5, 4)) * 4).astype("float32"), np.zeros((0, 4), "float32"))
    n = len(_unary(d2s.tensor(SPECIAL[:4].reshape(1, 4))))
    cases = [(r, r.astype("float64")) for r in rows]
    # sign, floor, clip, floordiv, mod: exact; the rest: libm / this backend's tanh vs numpy's SIMD loops
    exact = {7, 8, 9, 11, 12}
    check(prog, fn, cases, rtol=2e-6, atol=1e-7, exact=exact | {k + n for k in exact})


def _ints(i, j, f):
    return (i + j, i - j, i * j, i // j, i % j, i & j, i | j, i ^ j, i < j, i == j, d2s.maximum(i, j), -i,
            abs(i), i + f, i * 3, (i > 0) + (j > 0), (i > 0) * (j > 0), i.astype("float32") / 2.0, f.astype("int32"))


def test_integer_and_bool_arithmetic_is_exact(cache):
    # int32 and int64 in one program (one compile)
    prog = build_program(lambda i, j, k, m, f: _ints(i, j, f) + _ints(k, m, f), InputSpec([5], "int32"),
                         InputSpec([5], "int32"), InputSpec([5], "int64"), InputSpec([5], "int64"), InputSpec([5]))
    fn = compile_native(prog, cache)
    a = np.array([7, -7, 0, 5, -3])
    b = np.array([2, 3, -4, -5, 1])  # x // 0 raises (tests/runtime/native/test_native_pointwise.py)
    f = np.array([0.5, -1.5, 2.0, 3.75, -0.25], "float32")
    cases = []
    for i, j, g in ((a, b, f), (b, np.where(a == 0, 1, a), f * 10)):
        cases.append((i.astype("int32"), j.astype("int32"), i.astype("int64"), j.astype("int64"), g))
    check(prog, fn, cases)


def _scalars(i, n, a):
    q = (i * 3 + n) // 2 - i % 3
    s = -(a * a) / (a + 1.5) - a ** 2.0
    return q, i / n, s, i < n, i == n, d2s.maximum(a, s), d2s.tanh(a), d2s.where(i > n, a, s), a.astype("int32")


def test_scalar_math_on_0d_values(cache):
    prog = build_program(_scalars, InputSpec([], "int64"), InputSpec([], "int64"), InputSpec([]))
    fn = compile_native(prog, cache)
    cases = [(np.array(i), np.array(n), np.array(a, "float32")) for i, n, a in [(0, 5, 0.5), (7, 2, -3.0), (-4, 3, 2.25)]]
    check(prog, fn, cases, rtol=1e-6, atol=0, exact=(0, 1, 2, 3, 4, 5, 7, 8))


def _hazards(x, p):
    big = x * 2.0
    a = d2s.tanh(big)  # inlined into its reader, after the cond: big must still hold x * 2
    y = d2s.cond(p > 0, lambda: big * 3.0, lambda: big - 1.0)  # big's last direct reader
    z = x + 1.0
    b = d2s.exp(z * 0.1)  # inlined later: z must survive c's loop
    c = z * 2.0
    return a + y, b + c * c, d2s.stop_gradient(c) * 1.0, c


def test_buffers_are_written_in_place_only_when_nothing_reads_them_later(cache):
    prog = build_program(_hazards, InputSpec([6]), InputSpec([]))
    fn = compile_native(prog, cache)
    check(prog, fn, [(_f32(6), np.array(p, "float32")) for p in (1.0, -1.0)], rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------ reductions
def _reductions(x, b):
    h = d2s.tanh(x) * 2.0 - 0.5
    return (h.sum(), x.sum(axis=0), x.sum(axis=1, keepdims=True), h.mean(axis=-1), x.mean(), x.amax(axis=0),
            (x * x).min(), x.amax(axis=(0, 1), keepdims=True), x.prod(axis=1), (x > 0).sum(), (x > 0).any(axis=0),
            b.sum(), b.prod(), b.max(), (b > 1).all(), d2s.softmax(x, axis=-1), d2s.log_softmax(x * 2.0, axis=0))


def test_reductions_over_axes(cache):
    prog = build_program(_reductions, InputSpec([None, 5]), InputSpec([3], "int32"))
    fn = compile_native(prog, cache)
    big = (RNG.standard_normal((300, 5)) * 10).astype("float32")
    cases = [(_f32(4, 5), np.array([1, 2, -3], "int32")), (big, np.array([5, 0, 2], "int32")),
             (SPECIAL[:10].reshape(2, 5), np.array([1, 1, 1], "int32"))]
    check(prog, fn, cases, rtol=1e-5, atol=1e-5, exact=(5, 7, 9, 10, 11, 12, 13, 14))


def _max_min_with_a_dim(x):
    v, i = x.max(1)
    w, j = (x * 2.0).min(0, keepdim=True)
    return v, i, w, j, x.std(1), x.norm(dim=0)


def test_max_min_with_a_dim_are_the_values_at_their_indices(cache):
    """max_dim/min_dim lower to a reduction and an arg-reduction: the values are exactly the
    elements at the indices (the first of ties, signed zeros included; the first NaN)."""
    prog = build_program(_max_min_with_a_dim, InputSpec([None, 5], "float64"))
    fn = compile_native(prog, cache)
    cases = [(RNG.standard_normal((4, 5)),), (np.array([[0.0, -0.0, 1, np.nan, 1], [-0.0, 0.0, -1, -1, 2]]),),
             (np.array([[-0.0, 0.0, -3.0, -0.0, -1], [0.0, -0.0, -5.0, 0.0, -2]]),)]
    check(prog, fn, cases, rtol=1e-12, atol=1e-12, exact=(0, 1, 2, 3))


def test_float32_sums_are_as_accurate_as_numpys(cache):
    """float32 sums accumulate in float64 (numpy: pairwise float32): over 10^5 elements the
    native sum is at least as close to the exact (float64) sum as numpy's."""
    prog = build_program(lambda x: (x.sum(), x.mean(), x.reshape(100, 1000).sum(axis=1)), InputSpec([100000]))
    fn = compile_native(prog, cache)
    x = (RNG.standard_normal(100000) + 3.0).astype("float32")
    s, m, rows = fn(x)
    exact = x.astype("float64").sum()
    assert abs(float(s) - exact) <= abs(float(x.sum()) - exact) + abs(exact) * 2 ** -24
    assert abs(float(m) - exact / x.size) <= abs(float(x.mean()) - exact / x.size) + abs(exact / x.size) * 2 ** -24
    exact_rows = x.reshape(100, 1000).astype("float64").sum(axis=1)
    assert np.all(np.abs(rows - exact_rows) <= np.abs(x.reshape(100, 1000).sum(axis=1) - exact_rows)
                  + np.abs(exact_rows) * 2 ** -24)


def test_a_full_sum_of_a_matrix_keeps_one_partial_sum_per_column(cache):
    """The adds of one running sum would each wait on the one before; a float64 partial per
    column lets the inner loop vectorize, and stays as accurate as numpy's sum."""
    from d2s_runtime import native
    prog = build_program(lambda x: ((x * x).sum(), x.mean()), InputSpec([None, 300]))
    assert native.lower_program(prog).source.count("np.zeros(") == 2
    fn = compile_native(prog, cache)
    x = (RNG.standard_normal((400, 300)) + 3.0).astype("float32")
    s, m = fn(x)
    exact = (x.astype("float64") ** 2).sum()
    assert abs(float(s) - exact) <= abs(float((x * x).sum()) - exact) + abs(exact) * 2 ** -24
    assert abs(float(m) - x.astype("float64").mean()) <= abs(float(x.mean()) - x.astype("float64").mean()) + 1e-6
    check(prog, fn, [(x[:0],), (x[:1],), (SPECIAL.reshape(1, 12)[:, :12].repeat(25, axis=1),)], rtol=1e-6)


# ------------------------------------------------------------------ matmul and epilogues
def _mlp_layer(x, w, b, v):
    h = d2s.relu(x @ w + b)
    t = d2s.tanh(h @ v.T + 1.0)
    g = d2s.sigmoid(x @ w) * 2.0
    return h, t, g, (x @ w).sum(axis=0), d2s.sigmoid(b @ v.T), b @ b  # 1-d @ 2-d, 1-d @ 1-d


def test_matmul_with_bias_and_activation_epilogues(cache, blas):
    prog = build_program(_mlp_layer, InputSpec([None, 6]), InputSpec([6, 8]), InputSpec([8]), InputSpec([3, 8]))
    fn = compile_native(prog, cache)
    cases = [(_f32(4, 6), _f32(6, 8), _f32(8), _f32(3, 8)), (_f32(1, 6), _f32(6, 8), _f32(8), _f32(3, 8))]
    check(prog, fn, cases, rtol=2e-5, atol=2e-6)


def _short_wide(x, w, v, n):
    def body(i, h, s):
        h = d2s.tanh(h @ w + x)          # w: loop-invariant, its transpose copied once before the loop
        s = s + (h @ v.T).sum()          # v.T: a transposed view, whose own transpose is v
        return i + 1, h, s

    _, h, s = d2s.while_loop(lambda i, h, s: i < n, body, (d2s.tensor(0), x, d2s.zeros([])))
    return h, s, x @ w, x[:1] @ w, x @ w[:, :8]   # outside a loop; one row; too narrow for the rule


def test_short_wide_products_run_transposed(cache, openblas):
    """An (m, k) @ (k, n) product with few rows and a wide right operand runs as
    (b.T @ a.T).T (OpenBLAS is faster that way round); b.T is read from a copy hoisted before
    the loop where b is loop-invariant. Values agree with the Python backend."""
    from d2s_runtime import native
    prog = build_program(_short_wide, InputSpec([4, 256]), InputSpec([256, 256]), InputSpec([300, 256]),
                         InputSpec([], "int64"))
    lines = native.lower_program(prog).source.splitlines()
    loop = lines.index("    while True:")
    end = next(k for k in range(loop + 1, len(lines)) if not lines[k].startswith("        "))
    before, body, after = lines[:loop], "\n".join(lines[loop:end]), "\n".join(lines[end:])
    hoisted = [ln.strip() for ln in before if "np.ascontiguousarray(" in ln and ".T)" in ln]
    assert len(hoisted) == 1, hoisted                  # w.T, copied once, before the loop
    assert body.count("np.dot(") == body.count(".T).T)") == 2
    assert f"np.dot({hoisted[0].split(' = ')[0]}, " in body    # the loop reads the hoisted copy
    assert after.count("np.dot(") == 3 and after.count(".T).T)") == 2   # the narrow product: np.dot(a, b)
    fn = compile_native(prog, cache)
    w = _f32(256, 256) * 0.06
    cases = [(_f32(4, 256), w, _f32(300, 256) * 0.06, np.array(n)) for n in (0, 1, 5)]
    check(prog, fn, cases, rtol=2e-5, atol=2e-5)


def _short_wide_uses(x, w, n):
    def body(i, h, g, z):
        p = h @ w                        # a short, wide product carried as is,
        return i + 1, p * 0.05, p, (p @ w.T)[:, :4] + z   # fused, and multiplied again
    _, h, g, z = d2s.while_loop(lambda i, h, g, z: i < n, body, (d2s.tensor(0), x, x, d2s.zeros([4, 4])))
    return h, g, z, g[1], g.T


def test_a_transposed_short_wide_result_is_carried_sliced_and_multiplied(cache, blas):
    prog = build_program(_short_wide_uses, InputSpec([4, 256]), InputSpec([256, 256]), InputSpec([], "int64"))
    fn = compile_native(prog, cache)
    w = _f32(256, 256) * 0.06
    check(prog, fn, [(_f32(4, 256), w, np.array(n)) for n in (0, 1, 4)], rtol=2e-5, atol=2e-5)


def _sgd_update(w, x, g):
    return w - 0.01 * d2s.stop_gradient(x.T @ g)


def _sgd_update_and_grad(w, x, g):
    dw = x.T @ g
    return w - 0.01 * d2s.stop_gradient(dw), dw * 2.0   # dw is read again after the alias


def test_an_alias_that_reads_a_buffer_last_takes_it_over(cache, blas):
    """``stop_gradient`` of a product that nothing reads afterwards hands the product's buffer
    on: the update writes into it instead of a new array. Where the product is read again,
    the buffer stays pinned and the update gets its own array. Values agree either way."""
    from d2s_runtime import native
    specs = (InputSpec([6, 4]), InputSpec([5, 6]), InputSpec([5, 4]))
    for fn, allocs in ((_sgd_update, 0), (_sgd_update_and_grad, 2)):
        prog = build_program(fn, *specs)
        src = native.lower_program(prog).source
        assert src.count("np.empty(") == allocs, src
        check(prog, compile_native(prog, cache), [(_f32(6, 4), _f32(5, 6), _f32(5, 4))], rtol=1e-6, atol=1e-6)  # two BLAS libraries: float32 sums in another order


def test_a_row_of_a_contiguous_array_is_read_in_place(cache, blas):
    """``xs[i]`` (leading ints, whole trailing dims) of a contiguous array lowers to numba's
    ``xs[i]``, which numba knows is contiguous: BLAS reads it without a copy. ``xs[:, 1]`` (rows
    apart in memory) is copied for ``np.dot``; MKL's gemm reads it strided."""
    from d2s_runtime import native
    prog = build_program(lambda xs, w, i: (xs[i] @ w, xs[i, 1] * 2.0, xs[:, 1] @ w, xs[i, :, ::2] + 1.0),
                         InputSpec([5, 3, 4]), InputSpec([4, 2]), InputSpec([], "int64"))
    src = native.lower_program(prog).source
    assert src.count("np.ascontiguousarray(") == (1 if blas == "openblas" else 0), src
    assert src.count("L.smatmul(") == (0 if blas == "openblas" else 2), src
    fn = compile_native(prog, cache)
    check(prog, fn, [(_f32(5, 3, 4), _f32(4, 2), np.array(i)) for i in (0, 4, -1)], rtol=1e-6, atol=1e-6)
    with pytest.raises(IndexError):
        fn(_f32(5, 3, 4), _f32(4, 2), np.array(5))


def _row_products(xs, w, n, m):
    # t = 0 .. n-1 (n may stop early), then t from -1 down to -m (negative indices, backwards),
    # then a carry that is the product itself
    _, s = d2s.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + d2s.tanh(xs[i] @ w).sum()),
                          (d2s.tensor(0), d2s.zeros([])))
    _, acc = d2s.while_loop(lambda i, a: i > 0, lambda i, a: (i - 1, a + xs[i - m - 1] @ w * 0.5),
                            (m, d2s.zeros([64, 4])))
    _, last = d2s.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, xs[i] @ w), (d2s.tensor(0), xs[0] @ w))
    return s, acc, last


def test_rows_of_an_invariant_array_are_multiplied_a_chunk_at_a_time(cache, blas):
    """``xs[t] @ w`` in a loop over invariant ``xs``, ``w``: one product per 8 steps here (512
    rows), computed when ``t`` leaves the rows computed so far, in any order; the loop reads a
    view of the chunk, never writes it, and a carry holding it is a copy."""
    from d2s_runtime import native
    prog = build_program(_row_products, InputSpec([37, 64, 3]), InputSpec([3, 4]), InputSpec([], "int64"),
                         InputSpec([], "int64"))
    src = native.lower_program(prog).source
    assert src.count("// 8) * 8") == 3 and src.count(".reshape((") >= 6
    fn = compile_native(prog, cache)
    xs, w = _f32(37, 64, 3), _f32(3, 4)
    cases = [(xs, w, np.array(n), np.array(m)) for n, m in ((0, 0), (1, 1), (8, 9), (9, 16), (37, 37), (20, 5))]
    check(prog, fn, cases, rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError):
        fn(xs, w, np.array(38), np.array(0))
    with pytest.raises(IndexError):
        fn(xs, w, np.array(0), np.array(38))


# ------------------------------------------------------------------ shape ops and creation
def _shapes(x, y):
    r = x.reshape(4, 3) * 2.0
    t = x.transpose(1, 0) + 1.0
    u = d2s.unsqueeze(y, 0) + x
    c = d2s.concat([x, x * 2.0], axis=0)
    s = d2s.stack([y, y + 1.0], axis=1)
    z = d2s.zeros_like(x) + d2s.ones(4) * 3.0
    g = x[1:, ::2] * 2.0 + x[0, 1] + x[..., -1].sum()
    return (r, t, u, c, s, z, d2s.squeeze(d2s.unsqueeze(y, 1), 1), d2s.broadcast_to(y, (2, 3, 4)) * x, g,
            x[2], x[:, 1:3].T @ y[:3].reshape(3, 1))


def test_shape_ops(cache, blas):
    prog = build_program(_shapes, InputSpec([3, 4]), InputSpec([4]))
    fn = compile_native(prog, cache)
    # bit for bit, but output 8 (a float32 sum, added in float64 here and pairwise in float32
    # by numpy: an ulp apart for some inputs) and output 10 (two BLAS libraries' products)
    check(prog, fn, [(_f32(3, 4), _f32(4)), (SPECIAL.reshape(3, 4), SPECIAL[:4].copy())], rtol=1e-5, atol=1e-6,
          exact=set(range(11)) - {8, 10})


# ------------------------------------------------------------------ control flow
def _control(x, n, w):
    def body(i, a, s):
        s = d2s.cond(a.sum() > 0, lambda: s + a * 0.5, lambda: s - a)
        return i + 1, d2s.tanh(a) - 0.1, s

    i, a, s = d2s.while_loop(lambda i, a, s: i < n, body, (d2s.tensor(0), x, x * 0.0))

    def outer(i, a, b):
        _, a = d2s.while_loop(lambda j, c: j < i, lambda j, c: (j + 1, c * 0.9 + w), (d2s.tensor(0), a))
        return i + 1, b, a  # the carries swap places each iteration

    _, p, q = d2s.while_loop(lambda i, a, b: i < n, outer, (d2s.tensor(0), x, x * 2.0))
    return i, a, s, p, q, x  # x: an input passed through


def test_while_and_cond_both_branches_and_zero_trip(cache):
    prog = build_program(_control, InputSpec([16]), InputSpec([], "int64"), InputSpec([16]))
    fn = compile_native(prog, cache)
    x = np.linspace(-1, 1, 16).astype("float32")
    cases = [(x, np.array(n), _f32(16)) for n in (0, 1, 7, 60)] + [(-np.abs(_f32(16)) - 1, np.array(3), _f32(16))]
    check(prog, fn, cases, rtol=1e-5, atol=1e-6, exact=(0, 5))
    # the caller's arrays are never written (loop carries are copied in)
    x0 = x.copy()
    fn(x, np.array(5), _f32(16))
    assert np.array_equal(x, x0)


def _scan(xs, w, h0):
    def step(h, x):
        h = d2s.tanh(x @ w + h * 0.5)
        return h, h.sum()

    h, ys = d2s.scan(step, h0, xs)
    c2, zs = d2s.scan(lambda c, x: (c + x, c * x), h0, xs @ w, reverse=True)
    return h, ys, c2, zs


def test_scan_forward_reverse_and_empty(cache):
    prog = build_program(_scan, InputSpec([None, 4]), InputSpec([4, 3]), InputSpec([3]))
    fn = compile_native(prog, cache)
    check(prog, fn, [(_f32(n, 4), _f32(4, 3), _f32(3)) for n in (0, 1, 6)], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ training programs
def test_mlp_forward_and_backward_program(cache, blas):
    def loss(x, w1, b1, w2, b2, w3):
        h = d2s.relu(x @ w1 + b1)
        h = d2s.relu(h @ w2 + b2)
        return ((h @ w3) ** 2).mean()

    prog = gradients(build_program(loss, InputSpec([None, 20]), InputSpec([20, 16]), InputSpec([16]),
                                   InputSpec([16, 16]), InputSpec([16]), InputSpec([16, 4]))).verify()
    fn = compile_native(prog, cache)
    ws = [_f32(20, 16) * 0.3, _f32(16) * 0.1, _f32(16, 16) * 0.3, _f32(16) * 0.1, _f32(16, 4) * 0.3]
    check(prog, fn, [(_f32(8, 20), *ws, np.array(1.0, "float32")), (_f32(3, 20), *ws, np.array(2.0, "float32"))],
          rtol=1e-4, atol=1e-6)


def test_elman_rnn_forward_and_backward_program(cache, blas):
    def loss(xs, wx, wh, h0):
        def step(h, x):
            h = d2s.tanh(x @ wx + h @ wh)
            return h, h
        h, hs = d2s.scan(step, h0, xs)
        return (hs * hs).mean() + h.sum()

    prog = gradients(build_program(loss, InputSpec([6, 2, 5]), InputSpec([5, 4]), InputSpec([4, 4]),
                                   InputSpec([2, 4]))).verify()
    fn = compile_native(prog, cache)
    check(prog, fn, [(_f32(6, 2, 5), _f32(5, 4) * 0.5, _f32(4, 4) * 0.5, _f32(2, 4), np.array(1.0, "float32"))],
          rtol=1e-4, atol=1e-6)


def _attention_softmax(x):
    from d2s.dispatch import apply
    return apply("softmax", x, axis=-1, zero_dead_rows=True), apply("softmax", x * 2.0, axis=0, zero_dead_rows=True)


def test_softmax_of_attention_gives_zeros_for_rows_of_minus_inf(cache):
    prog = build_program(_attention_softmax, InputSpec([None, 4]))
    fn = compile_native(prog, cache)
    x = _f32(3, 4)
    x[1] = -np.inf         # a row that may attend nowhere: zeros
    x[2, :2] = -np.inf     # masked in part: the rest is a softmax
    y = np.array([[np.nan, 1.0, -np.inf, 0.0], [-np.inf, -np.inf, -np.inf, -np.inf]], "float32")
    check(prog, fn, [(x,), (y,), (_f32(0, 4),)], rtol=1e-6, atol=1e-7)
    (got, _) = fn(x)
    assert (got[1] == 0).all() and not np.isnan(got).any()
