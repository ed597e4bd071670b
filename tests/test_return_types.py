"""d2s.return_types: PyTorch's named-tuple results, read by unpacking, indexing and field, eagerly,
inside to_static (returned from a converted function they come back as the same type) and as a
saved program's outputs (a plain tuple of arrays, in order)."""
import numpy as np

import d2s

X = np.random.default_rng(3).standard_normal((3, 5))


def _sort_and_max(x):
    s = x.sort(1)
    values, indices = x.max(0)
    return s, d2s.return_types.max(values * 2.0, indices), x.topk(2).indices


def test_pytorch_names_and_fields():
    for name in ("max", "min", "median", "mode", "sort", "topk", "kthvalue"):
        cls = getattr(d2s.return_types, name)
        assert cls.__name__ == name and cls._fields == ("values", "indices") and issubclass(cls, tuple)
    assert d2s.return_types.aminmax._fields == ("min", "max")


def test_a_converted_function_returns_the_same_named_tuples(tmp_path):
    eager = _sort_and_max(d2s.tensor(X))
    static = d2s.jit.to_static(_sort_and_max)
    out = static(d2s.tensor(X))
    assert type(out[0]) is d2s.return_types.sort and type(out[1]) is d2s.return_types.max
    for e, s in zip(d2s.pytree.tree_flatten(eager)[0], d2s.pytree.tree_flatten(out)[0]):
        np.testing.assert_array_equal(s.numpy(), e.numpy())
    import d2s_runtime
    d2s.jit.save(static, str(tmp_path / "m"), input_spec=[d2s.jit.InputSpec([3, 5], "float64")])
    saved = d2s_runtime.load(str(tmp_path / "m"))(X)
    flat = [np.asarray(a) for a in d2s.pytree.tree_flatten(saved)[0]]
    for e, s in zip(d2s.pytree.tree_flatten(eager)[0], flat):
        np.testing.assert_array_equal(s, e.numpy())
