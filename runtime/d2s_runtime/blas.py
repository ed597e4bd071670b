"""numpy's matrix products on fewer BLAS threads while other processes hold the cores, where that
cannot change their result.

numpy's OpenBLAS splits a product over its threads and waits for every share; its idle threads
wait for work by spinning. On a machine whose cores other processes also use, a share handed to a
thread that is not running stalls the product for a scheduler tick, and the spinning takes cores
the other processes want. Measured on this project's 2-core machine: a loop of small products
(an RNN step) ran 6 to 10 times slower on 2 threads than on 1 beside busy processes, and the GPT
training step of ``benchmarks/bench_models.py`` took 14.3 s instead of 0.38 s beside a
DataLoader with 2 workers.

A loop of small products (an RNN's steps) runs on one thread (:func:`enter_loop`, called by
generated code around such a loop): handing each product to a second thread cost more than it
saved at these sizes (a 2-layer LSTM step: 101 ms on 2 cores with the loops on one thread,
164 ms without). Elsewhere :func:`matmul` (what the ``matmul`` kernel and generated code call
on numpy) asks
``threads.free`` how many threads the machine has free (a look at ``/proc/stat`` at most every
0.1 s, else a clock read) and, when that is fewer than numpy's BLAS has, computes the product on
that many, restoring the count after it.

But a product's bits can depend on the thread count: OpenBLAS's threaded driver blocks the inner
dimension differently. Measured with this project's numpy (scipy-openblas 0.3.31, Haswell
kernels): a float32 product whose inner dimension ``k`` exceeds 448 differs in its last bits
between 1 and 2 threads unless ``k % 32`` is 0 or 31 (float64: above 384), e.g.
``(4, 500) @ (500, 2000)``, whatever ``m`` and ``n``. Eager and converted code must give the same
bits, whatever the load when each runs. So a product's thread count is lowered only when
:func:`alike` found that its shape, dtype and layout compute alike on one thread and on the
process's count (for a loop: every product, in either layout of each operand): it computes the
product once on each, on fixed random operands, and remembers
the answer (a different blocking of the sum changes many of the thousands of elements of such a
product; operands of the same shape are split the same way whatever their values). The first
product of each shape pays for two more products; every later one, a dict lookup.

Where a product does not compute alike on one thread, it may still be computed there to the
threaded bits (:func:`split_alike`): OpenBLAS's threaded driver splits the inner dimension into
blocks by a rule of its own (``threaded_blocks``: the last two blocks are halves, where the
one-thread driver rounds the first half up to its unroll; measured: ``k = 784`` is 392 + 392 on
2 threads, 400 + 384 on one) and adds the blocks' products into the result in order. So the
product on one thread of each such block, added in that order, gives the threaded product's
bits; which block size does is checked once per key like ``alike``, and the product then runs on
one thread as those block products (an MNIST-shaped ``(128, 784) @ (784, 512)`` beside a
DataLoader: the threads of a 2-thread product waiting for each other's share took a
784-512-512-10 MLP step from 3 ms to 40-300 ms).

The count is process-wide, so a product another Python thread computes meanwhile runs on the
lowered count too; where its shape does not compute alike, its last bits can then differ from a
run on the full count. ``enter``/``leave`` (DataLoader workers: one thread, as PyTorch's) keep a
depth count under a lock, so that windows opened by several threads restore the count once.
Where numpy's BLAS is not an OpenBLAS whose count can be set (another BLAS, no ctypes, not
Linux), :func:`matmul` is ``np.matmul``. ``enabled = False`` turns governing off.
"""
import numpy as np

from . import forksafe, threads as _threads

enabled = True
SMALL = 1 << 16  # multiply-adds below which OpenBLAS uses one thread anyway: never governed
SMALL_PRODUCT = 1 << 23  # multiply-adds up to which a loop's product counts as small (enter_loop)

_lock = forksafe.Lock()
_depth = [0]
_saved = [None]
_api = []  # [(get, set)] once looked up; [None] where unavailable
_alike = {}  # (a's matrix shape, b's, dtype, layouts, threads) -> bool
_loops = {}  # (a loop's products, threads) -> whether all are alike in every layout (enter_loop)
_split = {}  # (a's matrix shape, b's, dtype, layouts, threads) -> the blocks of split_alike, or None
_last_block_size = {}  # dtype -> the block size split_alike found last
# block sizes (OpenBLAS's GEMM_Q) split_alike tries: those of its x86-64 kernels (Haswell's float32
# is 448, float64 384 on this project's machine) and the other usual ones
_BLOCK_SIZES = (448, 384, 256, 512, 320, 192, 640, 768, 224, 128)
_MAX_SHAPES = 4096


def _find():
    """``(get_num_threads, set_num_threads)`` of the OpenBLAS numpy uses, or None."""
    try:
        import ctypes
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "openblas" in line.lower() and
                     len(line.split(None, 5)) == 6}
    except (OSError, ImportError):
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "64_"),
                               ("openblas", "")):
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and set_ is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                return get, set_
    return None


def _functions():
    if not _api:
        _api.append(_find())
    return _api[0]


def available():
    """Whether numpy's BLAS thread count can be set here."""
    return _functions() is not None


def threads():
    """numpy's BLAS thread count now (None where it cannot be read)."""
    api = _functions()
    return None if api is None else api[0]()


def enter(n=1):
    """Run BLAS on ``n`` threads until the matching :func:`leave` (nested windows keep the first
    one's count; the last leave restores the count from before the first)."""
    api = _functions()
    if api is None:
        return
    with _lock:
        if _depth[0] == 0:
            _saved[0] = api[0]()
            if _saved[0] != n:
                api[1](n)
        _depth[0] += 1


def leave():
    """End an :func:`enter` (the last one restores the thread count)."""
    api = _functions()
    if api is None:
        return
    with _lock:
        if _depth[0] == 0:
            return
        _depth[0] -= 1
        if _depth[0] == 0 and _saved[0] is not None and api[0]() != _saved[0]:
            api[1](_saved[0])


def _layout(a):
    """How numpy hands matrix ``a`` (its last two dims) to BLAS: as is, transposed, or copied."""
    if a.ndim < 2:
        return "v"
    item = a.itemsize
    if a.strides[-1] == item:
        return "C"
    return "F" if a.strides[-2] == item else "C"


def _operand(rng, shape, dtype, layout):
    x = rng.standard_normal(shape).astype(dtype)
    return np.asfortranarray(x) if layout == "F" else x


def alike(a_shape, b_shape, dtype, layouts, count):
    """Whether numpy computes a product of matrices (or vectors) of shapes ``a_shape`` and
    ``b_shape`` (their last two dims), of ``dtype``, with ``layouts`` (each ``"C"``, ``"F"``:
    transposed, ``"v"``: a vector) to the same bits on one BLAS thread as on ``count``
    (checked once per key, on fixed random operands)."""
    key = (a_shape, b_shape, dtype, layouts, count)
    found = _alike.get(key)
    if found is not None:
        return found

    def check(a, b, set_threads):
        set_threads(1)
        one = np.matmul(a, b)
        set_threads(count)
        return bool(np.array_equal(one, np.matmul(a, b)))

    return bool(_probe(_alike, key, check))


def _probe(cache, key, check):
    """``cache[key] = check(a, b, set_threads)`` on fixed random operands ``a``, ``b`` of the key's
    shapes, dtype and layouts (``set_threads(n)`` sets numpy's BLAS count; the count from before
    is restored after), and that value; None, not cached, inside an ``enter`` window, whose count
    is not ours to change now (the caller asks again later)."""
    a_shape, b_shape, dtype, layouts, _ = key
    api = _functions()
    rng = np.random.default_rng(0)
    a = _operand(rng, a_shape, dtype, layouts[0])
    b = _operand(rng, b_shape, dtype, layouts[1])
    with _lock:
        if _depth[0]:
            return None
        before = api[0]()
        try:
            found = check(a, b, api[1])
        finally:
            api[1](before)
    if len(cache) >= _MAX_SHAPES:  # a program of ever-new shapes: start over rather than grow
        cache.clear()
    cache[key] = found
    return found


def threaded_blocks(k, q):
    """The ``(start, stop)`` blocks of the inner dimension ``k`` in OpenBLAS's threaded driver
    with block size ``q``: whole blocks of ``q`` while twice ``q`` remains, then the rest in one
    block, or in two halves (the first rounded up) when it exceeds ``q``. The one-thread driver
    rounds that half up to a multiple of its unroll instead, which is why products whose inner
    dimension falls there differ in their last bits between 1 and 2 threads."""
    blocks, start = [], 0
    while start < k:
        rest = k - start
        step = q if rest >= 2 * q else (rest + 1) // 2 if rest > q else rest
        blocks.append((start, start + step))
        start += step
    return tuple(blocks)


def _summed(a, b, blocks):
    """The product of ``a`` and ``b`` as the sum, in order, of the products of its inner-dimension
    ``blocks``, each one a single block for BLAS (the order OpenBLAS adds them in, into C)."""
    lo, hi = blocks[0]
    c = np.matmul(a[..., lo:hi], b[..., lo:hi, :])
    for lo, hi in blocks[1:]:
        c += np.matmul(a[..., lo:hi], b[..., lo:hi, :])
    return c


def split_alike(a_shape, b_shape, dtype, layouts, count):
    """The inner-dimension blocks (``threaded_blocks``) whose products on one thread, added in
    order, give the bits of the product on ``count`` threads, for products like ``alike``'s
    (matrices only); None where no block size in ``_BLOCK_SIZES`` does (checked once per key, on
    fixed random operands)."""
    key = (a_shape, b_shape, dtype, layouts, count)
    if key in _split:
        return _split[key]
    if len(a_shape) != 2 or len(b_shape) != 2:
        return None
    k = a_shape[-1]
    sizes = [q for q in _BLOCK_SIZES if len(threaded_blocks(k, q)) > 1]
    if not sizes:
        return None
    sizes.sort(key=lambda q: q != _last_block_size.get(dtype))  # the size found before first

    def check(a, b, set_threads):
        set_threads(count)
        many = np.matmul(a, b)
        set_threads(1)
        for q in sizes:
            blocks = threaded_blocks(k, q)
            if np.array_equal(_summed(a, b, blocks), many):
                _last_block_size[dtype] = q
                return blocks
        return None

    return _probe(_split, key, check)


def matmul(a, b, out=None):
    """``np.matmul(a, b)`` (numpy arrays), on the BLAS threads the machine has free when fewer
    than numpy's count and the product computes alike on them; on one thread as the sum of its
    threaded driver's inner-dimension blocks where that gives the same bits instead (see the
    module docstring)."""
    if enabled and _depth[0] == 0 and a.ndim and b.ndim and a.dtype.kind in "fc" \
            and a.dtype == b.dtype and a.size * (b.shape[-1] if b.ndim > 1 else 1) >= SMALL:
        api = _functions()
        if api is not None:
            count = api[0]()
            n = _threads.free(count)
            if n < count:
                key = (a.shape[-2:], b.shape[-2:], a.dtype.str, (_layout(a), _layout(b)), count)
                same = alike(*key)
                blocks = None if same or n > 1 else split_alike(*key)  # (None for a vector)
                if not same and blocks is None:
                    return _product(a, b, out)
                enter(n)
                try:
                    if blocks is None:
                        return _product(a, b, out)
                    c = _summed(a, b, blocks)
                    if out is None:
                        return c
                    out[...] = c
                    return out
                finally:
                    leave()
    return _product(a, b, out)


def _product(a, b, out):
    return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)


def enter_loop(products):
    """Run a loop of small ``products`` (codegen's ``small_products``) on one BLAS thread when each gives
    the same bits on one thread as on numpy's count, in either layout of each operand: an RNN's
    step products then skip the hand-over to a second thread (which cost more than it saved at
    these sizes, and stalled 6-10x on a busy machine). Returns whether it entered (the caller
    then calls :func:`leave`)."""
    api = _functions()
    if not enabled or api is None or _depth[0]:
        return False
    count = api[0]()
    if count == 1:
        return False
    key = (products, count)
    found = _loops.get(key)
    if found is None:
        found = all(alike(a_shape, b_shape, dtype, (x, y), count) for a_shape, b_shape, dtype in products
                    for x in (("C", "F") if len(a_shape) == 2 else ("v",))
                    for y in (("C", "F") if len(b_shape) == 2 else ("v",)))
        if _depth[0] == 0:  # (alike says no, uncached, while another thread holds a window)
            _loops[key] = found
    if not found:
        return False
    enter(1)
    return True


def _reset_after_fork():
    _depth[0], _saved[0] = 0, None


forksafe.after_fork(_reset_after_fork)
