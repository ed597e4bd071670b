"""Shared checks for the generation tests (issue 29): a converted call equal to eager exactly,
and op counts of programs."""
import numpy as np

import d2s


def count_ops(prog, kind):
    """Ops of type ``kind`` in ``prog``, sub-blocks included."""
    return sum(op.type == kind for b in prog.blocks for op in b.ops)


def top_ops(prog, kind):
    """Ops of type ``kind`` in ``prog``'s global block."""
    return sum(op.type == kind for op in prog.global_block().ops)


def leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def assert_same(got, want):
    """Equal exactly: tensors by dtype, shape and every value; other values by type and ==."""
    assert len(leaves(got)) == len(leaves(want))
    for g, w in zip(leaves(got), leaves(want)):
        if isinstance(w, d2s.Tensor):
            assert isinstance(g, d2s.Tensor) and g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape), (g, w)
            assert np.array_equal(g.numpy(), w.numpy()), (g.numpy(), w.numpy())
        elif isinstance(w, np.ndarray):
            assert isinstance(g, np.ndarray) and g.dtype == w.dtype and np.array_equal(g, w), (g, w)
        else:
            assert type(g) is type(w) and g == w, (g, w)


def assert_exact(fn, *args, sf=None, seed=7):
    """``fn`` converted gives eager's values exactly for the same seed; returns the StaticFunction."""
    sf = sf or d2s.jit.to_static(fn)
    d2s.manual_seed(seed)
    want = fn(*args)
    d2s.manual_seed(seed)
    got = sf(*args)
    assert_same(got, want)
    return sf
