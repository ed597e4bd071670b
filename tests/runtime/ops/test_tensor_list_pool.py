"""The pool of growing arrays behind stack pushes (d2s_runtime/ops/tensor_list.py): a stack made
after another died grows in the same memory (no new large allocation), never in memory a live
value still reads (an older version of a stack, a popped element), and the pool stays within
its byte limit."""
import gc

import numpy as np
import pytest

from d2s_runtime.ops import OPS, tensor_list
from thread_helpers import run_in_threads

NEW, PUSH, POP = (OPS[n].kernel for n in ("stack_new", "stack_push", "stack_pop"))
ELEM = (16, 64)  # 4 KiB of float32: a stack of 16 of them passes the pool's minimum size


def _fill(count, scale):
    x = np.ones(ELEM, "float32")
    buf, shapes = NEW(np, x)
    for i in range(count):
        buf, shapes = PUSH(np, buf, shapes, x * (scale + i))
    return buf, shapes


def _pop_all(buf, shapes, count, scale):
    for i in reversed(range(count)):
        buf, shapes, v = POP(np, buf, shapes, shape=list(ELEM))
        np.testing.assert_array_equal(v, np.full(ELEM, scale + i, "float32"))


@pytest.fixture(autouse=True)
def empty_pool(monkeypatch):
    monkeypatch.setattr(tensor_list, "_POOL", {})
    monkeypatch.setattr(tensor_list, "_pooled_bytes", [0])


def test_a_later_stack_grows_in_the_memory_of_a_dead_one():
    buf, shapes = _fill(64, 1.0)
    base = id(buf.base)  # (the id only: holding the array would keep it in use)
    assert any(id(a) == base for arrays in tensor_list._POOL.values() for a in arrays)
    del buf, shapes
    gc.collect()
    buf2, shapes2 = _fill(64, 100.0)
    assert id(buf2.base) == base  # the largest free pooled array: no growth, no new memory
    _pop_all(buf2, shapes2, 64, 100.0)


def test_memory_a_live_value_reads_is_not_handed_out():
    buf, shapes = _fill(64, 1.0)
    old_version = buf[:]  # a view that keeps reading the growing array
    buf, shapes, top = POP(np, buf, shapes, shape=list(ELEM))
    keep = (buf, shapes)
    del buf, shapes
    other, other_shapes = _fill(64, -50.0)  # made while the first stack's views live
    assert other.base is not old_version.base
    np.testing.assert_array_equal(top, np.full(ELEM, 64.0, "float32"))
    _pop_all(*keep, 63, 1.0)
    _pop_all(other, other_shapes, 64, -50.0)


def test_pushes_after_pops_and_forks_keep_every_version():
    buf, shapes = _fill(40, 0.0)
    versions = [(buf, shapes)]
    for k in range(5):
        b, s, _ = POP(np, *versions[-1], shape=list(ELEM))
        b, s = PUSH(np, b, s, np.full(ELEM, 1000.0 + k, "float32"))  # a fork: the newest view moved on
        versions.append((b, s))
    _pop_all(*versions[0], 40, 0.0)
    for k, (b, s) in enumerate(versions[1:]):
        b, s, v = POP(np, b, s, shape=list(ELEM))
        np.testing.assert_array_equal(v, np.full(ELEM, 1000.0 + k, "float32"))


def test_the_pool_stays_within_its_limit(monkeypatch):
    monkeypatch.setattr(tensor_list, "_POOL_MAX_BYTES", 1 << 18)
    stacks = [_fill(64, float(i)) for i in range(6)]  # all alive: each needs its own memory
    assert tensor_list._pooled_bytes[0] <= 1 << 18
    pooled = sum(a.nbytes for arrays in tensor_list._POOL.values() for a in arrays)
    assert pooled == tensor_list._pooled_bytes[0]
    for i, (b, s) in enumerate(stacks):
        _pop_all(b, s, 64, float(i))


def test_threads_pushing_at_once_get_separate_memory():
    results = {}

    def work(k):
        for _ in range(5):
            b, s = _fill(48, 10.0 * k)
            _pop_all(b, s, 48, 10.0 * k)
        results[k] = True

    run_in_threads(work)  # raises what a thread raised
    assert len(results) == 4
