"""d2s.jit.cache signatures (built on d2s.pytree): which calls share a key, the tensors they
collect, InputSpec dims matched through nested arguments, and leaves replaced in that order."""
from collections import namedtuple

import numpy as np

import d2s
from d2s.jit import InputSpec
from d2s.jit.cache import replace_kwargs, replace_leaves, signature

P = namedtuple("P", "a b")


def _t(*shape):
    return d2s.tensor(np.zeros(shape, np.float32))


def key(*args, **kwargs):
    return signature(("head",), args, kwargs)[0]


def test_calls_share_a_key_exactly_when_structure_types_and_values_agree():
    a, b, c = _t(2), _t(2), _t(3)
    assert key(a, b) == key(b, a)
    assert key(a, (a, b), k=1) == key(b, (b, a), k=1)
    assert key(x=a, y=c) == key(y=c, x=b)               # keyword order does not matter
    different = [key(a, b), key(a, c), key((a, b)), key([a, b]), key(a, (b,)), key(a, b, 1),
                 key(a, b, 1.0), key(a, b, 2), key({"x": a, "y": b}), key({"y": b, "x": a}),
                 key(a, y=b), key(a, b=b), key(a, b, None)]
    assert len(set(different)) == len(different)
    assert key(np.zeros(2, np.float32), b) == key(a, b)  # arrays key as tensors
    # a namedtuple is one (hashable) value, not structure
    p = P(1, "s")
    assert key(p) == key(P(1, "s")) and key(p) != key((1, "s"))


def test_a_tensor_passed_twice_has_its_own_key():
    a, b, c = _t(2), _t(2), _t(2)
    assert key(a, a) != key(a, b) and key(a, a) == key(b, b)
    assert key(a, (b, a)) == key(c, (b, c)) != key(a, (b, c))
    assert key(a, b, k=a) != key(a, b, k=c)


def test_tensors_are_collected_in_walk_order():
    a, b, c, d = _t(1), _t(2), _t(3), _t(4)
    _, leaves = signature((), (a, [b, {"k": c}], 7), {"z": d, "y": "s"})
    assert [id(t) for t in leaves] == [id(a), id(b), id(c), id(d)]


def test_specs_apply_through_nested_arguments():
    a, b, c = _t(2, 3), _t(5), _t(4)
    types = []
    signature((), (a, [b, c]), {"k": c}, [InputSpec([None, 3], "float32", name="x"),
                                          [InputSpec([None], "float32"), None]], types)
    assert types == [((None, 3), "float32", "x"), ((None,), "float32", None), ((4,), "float32", None),
                     ((4,), "float32", None)]
    types = []
    # a spec whose nesting does not fit the argument is ignored there
    signature((), ([b, c],), {}, [[InputSpec([None], "float32")]], types)
    assert types == [((5,), "float32", None), ((4,), "float32", None)]
    types = []
    signature((), (), {"k": c}, {"k": InputSpec([None], "float32", name="kk")}, types)
    assert types == [((None,), "float32", "kk")]


def test_replace_leaves_follows_the_signature_order():
    a, b = _t(1), _t(2)
    args = (a, [1, {"k": b}], "s", np.zeros(3))
    it = iter(["A", "B", "C"])
    assert replace_leaves(args, it) == ("A", [1, {"k": "B"}], "s", "C")
    it = iter(["Z", "Y"])
    assert replace_kwargs({"z": a, "y": (b, 2)}, it) == {"y": ("Z", 2), "z": "Y"}
