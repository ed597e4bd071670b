"""Tensor lists and ragged stacks (d2s_runtime/ops/tensor_list.py): push/pop give the values
of the copying definitions (``concatenate``, slicing) for ragged shapes, rank 0, several dtypes
and every length; a push onto the newest version writes into spare room (no copy: the growing
array is the same object, and T pushes allocate O(log T) arrays), pops return views; no value
ever changes (older versions, forks, pushes after pops, pushes from several threads); bad
pushes and pops raise clear errors."""
import threading

import numpy as np
import pytest

from d2s_runtime.ops import OPS, ShapeError
from d2s_runtime.ops.tensor_list import ProgramIndexError

NEW, PUSH, POP = (OPS[n].kernel for n in ("stack_new", "stack_push", "stack_pop"))
LIST_NEW, LIST_PUSH, LIST_POP = (OPS[n].kernel for n in ("list_new", "list_push", "list_pop"))
RNG = np.random.default_rng(3)


class CountingXp:
    """numpy, counting the arrays the kernels allocate with ``empty``/``zeros``/``concatenate``."""

    def __init__(self):
        self.allocations = 0

    def __getattr__(self, name):
        fn = getattr(np, name)
        if name in ("empty", "zeros", "concatenate"):
            def counted(*a, **k):
                self.allocations += 1
                return fn(*a, **k)
            return counted
        return fn


def _reference_push(buf, shapes, x):
    """The copying definition of a push."""
    return (np.concatenate([buf, x.reshape(-1)]),
            np.concatenate([shapes, np.asarray(x.shape, "int64").reshape(1, x.ndim)]))


def _ragged(rank, k, dtype):
    shape = tuple(int(d) for d in RNG.integers(0, 4, size=rank))
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    return (RNG.standard_normal(shape) * 10 + k).astype(dtype)


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("length", [0, 1, 2, 9, 40])
def test_push_then_pop_equals_the_copying_definition(rank, dtype, length):
    like = np.zeros((2,) * rank, dtype)
    buf, shapes = NEW(np, like)
    rbuf, rshapes = buf.copy(), shapes.copy()
    elems = [_ragged(rank, k, dtype) for k in range(length)]
    for x in elems:
        buf, shapes = PUSH(np, buf, shapes, x)
        rbuf, rshapes = _reference_push(rbuf, rshapes, x)
        np.testing.assert_array_equal(buf, rbuf)
        np.testing.assert_array_equal(shapes, rshapes)
        assert buf.dtype == np.dtype(dtype) and shapes.dtype == np.int64 and shapes.shape == (len(rshapes), rank)
    for x in reversed(elems):
        buf, shapes, v = POP(np, buf, shapes, shape=[None] * rank)
        assert v.dtype == np.dtype(dtype) and v.shape == x.shape
        np.testing.assert_array_equal(v, x)
    assert buf.shape == (0,) and shapes.shape == (0, rank)
    with pytest.raises(IndexError, match="stack_pop: pop from an empty stack"):
        POP(np, buf, shapes, shape=[None] * rank)


def test_pushes_write_in_place_and_allocate_logarithmically():
    xp = CountingXp()
    x = np.ones((4, 5), "float32")
    buf, shapes = NEW(xp, x)
    xp.allocations = 0
    growing = set()
    for k in range(1000):
        prev_buf = buf
        buf, shapes = PUSH(xp, buf, shapes, x * k)
        if buf.base is prev_buf.base:
            # no copy: the new version is a longer view of the same growing array
            assert np.shares_memory(buf, prev_buf)
        growing.add(id(buf.base))
    # doubling: O(log T) growing arrays for buf and for shapes, not one per push
    assert xp.allocations <= 2 * (int(np.log2(1000 * 20)) + 2), xp.allocations
    assert len(growing) <= int(np.log2(1000 * 20)) + 2
    np.testing.assert_array_equal(buf.reshape(1000, 4, 5)[:, 0, 0], np.arange(1000, dtype="float32"))
    xp.allocations = 0
    for k in reversed(range(1000)):
        before = buf
        buf, shapes, v = POP(xp, buf, shapes, shape=[4, 5])
        assert v[0, 0] == k
        # pops are views: no copy of the stack
        assert buf.base is before.base and v.base is before.base
    assert xp.allocations == 0


def test_no_version_ever_changes():
    """Old versions, forks (two pushes onto one version) and pushes after pops leave every
    value some program may still hold as it was."""
    x0 = np.zeros(3)
    buf, shapes = NEW(np, x0)
    versions = []
    for k in range(20):
        buf, shapes = PUSH(np, buf, shapes, np.full(k % 4, float(k)))
        versions.append((buf, shapes, buf.copy(), shapes.copy()))
    mid_buf, mid_shapes = versions[9][:2]
    # a fork from an older version and a second push onto the newest one
    fork_a = PUSH(np, mid_buf, mid_shapes, np.full(3, -1.0))
    fork_b = PUSH(np, mid_buf, mid_shapes, np.full(2, -2.0))
    tip_a = PUSH(np, buf, shapes, np.full(1, -3.0))
    tip_b = PUSH(np, buf, shapes, np.full(1, -4.0))
    # pushes after a pop
    pb, ps, _ = POP(np, buf, shapes, shape=[None])
    after_pop = PUSH(np, pb, ps, np.full(3, -5.0))
    for b, s, b0, s0 in versions:
        np.testing.assert_array_equal(b, b0)
        np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(fork_a[0][-3:], -1.0)
    np.testing.assert_array_equal(fork_b[0][-2:], -2.0)
    assert fork_a[0].shape[0] == versions[9][0].shape[0] + 3 and fork_b[0].shape[0] == versions[9][0].shape[0] + 2
    assert tip_a[0][-1] == -3.0 and tip_b[0][-1] == -4.0
    np.testing.assert_array_equal(tip_a[0][:-1], buf)
    np.testing.assert_array_equal(after_pop[0][:-3], pb)
    np.testing.assert_array_equal(after_pop[0][-3:], -5.0)


def test_pushes_from_threads_onto_one_version():
    buf, shapes = NEW(np, np.zeros(2))
    for k in range(5):
        buf, shapes = PUSH(np, buf, shapes, np.full(2, float(k)))
    results = [None] * 8
    start = threading.Barrier(8)

    def worker(i):
        start.wait()
        b, s = buf, shapes
        for j in range(50):
            b, s = PUSH(np, b, s, np.full(2, float(1000 * i + j)))
        results[i] = b

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    head = np.repeat(np.arange(5, dtype=float), 2)
    for i, b in enumerate(results):
        np.testing.assert_array_equal(b, np.concatenate([head, np.repeat(1000.0 * i + np.arange(50), 2)]))
    np.testing.assert_array_equal(buf, head)


def test_bad_pushes_raise_clear_errors():
    buf, shapes = NEW(np, np.zeros((2, 2), "float32"))
    with pytest.raises(ShapeError, match="stack_push: a stack of float32 rank-2 elements cannot take a float64"):
        PUSH(np, buf, shapes, np.zeros((2, 2)))
    with pytest.raises(ShapeError, match="rank-2 elements cannot take a float32 array of shape \\(2,\\)"):
        PUSH(np, buf, shapes, np.zeros(2, "float32"))


@pytest.mark.parametrize("length", [0, 1, 3, 33])
def test_list_push_pop_equal_the_copying_definition_and_do_not_copy(length):
    xp = CountingXp()
    lst = LIST_NEW(xp, np.zeros((2, 3)))
    ref = np.zeros((0, 2, 3))
    versions = []
    xp.allocations = 0
    for k in range(length):
        x = RNG.standard_normal((2, 3))
        lst = LIST_PUSH(xp, lst, x)
        ref = np.concatenate([ref, x[None]])
        versions.append((lst, ref))
        np.testing.assert_array_equal(lst, ref)
    assert xp.allocations <= int(np.log2(max(length, 1))) + 2
    for v, r in versions:
        np.testing.assert_array_equal(v, r)
    for k in range(length):
        before = lst
        lst, x = LIST_POP(np, lst)
        np.testing.assert_array_equal(x, ref[length - 1 - k])
        assert lst.base is before.base
    with pytest.raises(ProgramIndexError, match="pop from empty list"):
        LIST_POP(np, lst)


def test_list_push_takes_its_shape_from_the_first_element_and_checks_the_rest():
    lst = LIST_NEW(np, np.zeros((1, 1), "float32"))  # placeholder element shape
    lst = LIST_PUSH(np, lst, np.ones((2, 3)))        # cast to the list's dtype, shape taken
    assert lst.shape == (1, 2, 3) and lst.dtype == np.float32
    with pytest.raises(ShapeError, match="list_push: the list holds elements of shape \\(2, 3\\) but the new "
                                         "element has shape \\(3, 2\\)"):
        LIST_PUSH(np, lst, np.ones((3, 2)))
