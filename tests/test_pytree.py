"""d2s.pytree: flatten/unflatten round trips, treedef equality and hashing, dict key order,
registered nodes (TensorArray and a custom one) and tree_map, each checked against
hand-written leaves and structures."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import d2s
from d2s import pytree
from d2s.pytree import tree_flatten as converted_leaves  # what converted code carries
from d2s.static.control_flow import tree_flatten as tensor_tree_flatten
from d2s.static.tensor_array import TensorArray, TupleList

Point = namedtuple("Point", "x y")


class Pair:
    """A user type registered as a node: two children and a hashable label."""

    def __init__(self, a, b, label):
        self.a, self.b, self.label = a, b, label


class LabelledPair(Pair):
    pass


pytree.register_node(Pair, lambda p: ((p.a, p.b), (type(p), p.label)),
                     lambda aux, children: aux[0](*children, aux[1]))


def _same(a, b):
    """Equal values of equal Python types, containers compared item by item."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, Pair):
        _same(a.a, b.a)
        _same(a.b, b.b)
        assert a.label == b.label
    else:
        assert a is b or a == b


# (tree, expected leaves, expected structure as PyTreeDef.format() shows it)
CASES = [
    (1, [1], "*"),
    (None, [None], "*"),
    ([], [], "[]"),
    ((), [], "()"),
    ({}, [], "{}"),
    ([1, (2, 3)], [1, 2, 3], "[*, (*, *)]"),
    ((1,), [1], "(*,)"),
    ({"b": 1, "a": [2, None]}, [1, 2, None], "{'b': *, 'a': [*, *]}"),
    (Point(1, [2, 3]), [1, 2, 3], "Point(*, [*, *])"),
    ([Point((), {"k": 4}), "s"], [4, "s"], "[Point((), {'k': *}), *]"),
    (Pair(1, [2], "lab"), [1, 2], "Pair(*, [*])"),
    ({"p": LabelledPair(Point(5, 6), None, 0)}, [5, 6, None], "{'p': LabelledPair(Point(*, *), *)}"),
]


@pytest.mark.parametrize("tree, leaves, shown", CASES)
def test_flatten_gives_the_leaves_and_structure_and_unflatten_rebuilds(tree, leaves, shown):
    got_leaves, treedef = pytree.tree_flatten(tree)
    assert got_leaves == leaves
    assert treedef.format() == shown
    assert treedef.num_leaves == len(leaves)
    _same(pytree.tree_unflatten(treedef, got_leaves), tree)
    # new leaves go where the old ones were
    marks = [f"leaf{i}" for i in range(len(leaves))]
    assert pytree.tree_leaves(pytree.tree_unflatten(treedef, marks)) == marks
    assert pytree.tree_structure(tree) == treedef


def test_leaf_types_keep_other_values_as_constants():
    x, y = d2s.ones(2), d2s.zeros(3)
    tree = {"a": (x, None, "tag"), "b": [2, y]}
    leaves, treedef = pytree.tree_flatten(tree, leaf_types=d2s.Tensor)
    assert leaves[0] is x and leaves[1] is y and len(leaves) == 2
    assert treedef.format(["X", "Y"]) == "{'a': (X, None, 'tag'), 'b': [2, Y]}"
    back = pytree.tree_unflatten(treedef, [y, x])
    assert back["a"][0] is y and back["a"][1:] == (None, "tag") and back["b"][0] == 2 and back["b"][1] is x
    # the control-flow builders' flattening is exactly this
    cf_leaves, cf_def = tensor_tree_flatten(tree)
    assert cf_def == treedef and [id(t) for t in cf_leaves] == [id(x), id(y)]
    # constants are part of the structure: another constant is another structure
    assert pytree.tree_structure({"a": (x, None, "other"), "b": [2, y]}, leaf_types=d2s.Tensor) != treedef
    assert pytree.tree_structure({"a": (y, None, "tag"), "b": [2.0, x]}, leaf_types=d2s.Tensor) == treedef


def test_array_constants_compare_by_identity_without_raising():
    arr = np.arange(3)
    d1 = pytree.tree_structure([arr], leaf_types=d2s.Tensor)
    assert d1 == pytree.tree_structure([arr], leaf_types=d2s.Tensor)
    assert d1 != pytree.tree_structure([np.arange(3)], leaf_types=d2s.Tensor)
    assert pytree.tree_unflatten(d1, [])[0] is arr
    hash(d1)


def test_treedef_equality_and_hash():
    def s(t, **kw):
        return pytree.tree_structure(t, **kw)

    same = [s([1, (2, {"a": 3})]), s(["x", ("y", {"a": None})]), s([[], ((), {"a": 0})], is_leaf=lambda o: o in ([], ()))]
    for d in same[1:]:
        assert d == same[0] and hash(d) == hash(same[0])
    different = [s((1, (2, {"a": 3}))), s([1, [2, {"a": 3}]]), s([1, (2, {"b": 3})]), s([1, (2, {"a": 3}), 4]),
                 s([1, Point(2, {"a": 3})]), s([1, (2, {"a": [3]})])]
    for d in different:
        assert d != same[0]
    table = {d: i for i, d in enumerate(different)}
    assert [table[d] for d in different] == list(range(len(different)))
    assert same[0] not in table
    # registered nodes: the type and the aux data are part of the structure
    assert s(Pair(1, 2, "a")) == s(Pair(3, 4, "a"))
    assert s(Pair(1, 2, "a")) != s(Pair(1, 2, "b"))
    assert s(Pair(1, 2, "a")) != s(LabelledPair(1, 2, "a"))


def test_dict_key_order_is_insertion_order_unless_sorted():
    tree = {"b": 1, "a": 2, "c": {"z": 3, "y": 4}}
    leaves, treedef = pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4]
    back = pytree.tree_unflatten(treedef, leaves)
    assert list(back) == ["b", "a", "c"] and list(back["c"]) == ["z", "y"]
    assert pytree.tree_structure({"a": 2, "b": 1}) != pytree.tree_structure({"b": 1, "a": 2})

    leaves, treedef = pytree.tree_flatten(tree, sort_keys=True)
    assert leaves == [2, 1, 4, 3]
    back = pytree.tree_unflatten(treedef, leaves)
    assert list(back) == ["a", "b", "c"] and list(back["c"]) == ["y", "z"] and back == tree
    assert pytree.tree_structure({"a": 2, "b": 1}, sort_keys=True) == \
        pytree.tree_structure({"b": 1, "a": 2}, sort_keys=True)
    # d2s.func sorts, as JAX does
    assert d2s.func.tree_flatten(tree)[0] == [2, 1, 4, 3]


def test_subclasses_of_the_containers():
    od = OrderedDict([("y", 1), ("x", 2)])
    leaves, treedef = pytree.tree_flatten(od)
    assert leaves == [1, 2]
    back = pytree.tree_unflatten(treedef, [3, 4])
    assert type(back) is dict and list(back.items()) == [("y", 3), ("x", 4)]

    class Row(list):
        pass

    leaves, treedef = pytree.tree_flatten(Row([1, [2]]))
    assert leaves == [1, 2] and treedef.format() == "Row(*, [*])"
    back = pytree.tree_unflatten(treedef, [5, 6])
    assert type(back) is Row and back == [5, [6]]


def test_is_leaf_stops_the_walk():
    tree = [Point(1, 2), (3, [4])]
    leaves, treedef = pytree.tree_flatten(tree, is_leaf=lambda o: isinstance(o, Point))
    assert leaves == [Point(1, 2), 3, 4]
    assert treedef.format() == "[*, (*, [*])]"
    # converted code carries a namedtuple field by field (a tensor `if` may return one)
    assert converted_leaves(tree)[0] == [1, 2, 3, 4]


def test_plain_walks_only_plain_containers():
    tree = (Point(1, 2), [OrderedDict(a=1)], {"k": (3,)})
    leaves, treedef = pytree.tree_flatten(tree, plain=True)
    assert leaves == [Point(1, 2), OrderedDict(a=1), 3]
    assert treedef.format() == "(*, [*], {'k': (*,)})"
    _same(pytree.tree_unflatten(treedef, leaves), tree)


def test_tensor_arrays_are_nodes():
    x = d2s.tensor([1.0, 2.0])
    ta = TensorArray.like(x).append(x).append(x * 2)
    leaves, treedef = pytree.tree_flatten({"xs": ta, "n": 3})
    assert len(leaves) == 2 and leaves[0] is ta.data and leaves[1] == 3
    assert treedef.format() == "{'xs': TensorArray(*), 'n': *}"
    back = pytree.tree_unflatten(treedef, leaves)
    assert type(back["xs"]) is TensorArray and back["xs"] is not ta and back["xs"].data is ta.data
    np.testing.assert_allclose(back["xs"][1].numpy(), [2.0, 4.0])

    tl = TupleList.like((x, {"c": x})).append((x, {"c": x + 1}))
    leaves, treedef = pytree.tree_flatten([tl])
    assert [id(t) for t in leaves] == [id(p) for p in tl.parts]
    back = pytree.tree_unflatten(treedef, leaves)[0]
    assert type(back) is type(tl) and back.parts == tl.parts
    np.testing.assert_allclose(back[0][1]["c"].numpy(), [2.0, 3.0])
    # an untyped (empty) TensorArray holds None
    assert pytree.tree_flatten(TensorArray())[0] == [None]
    assert pytree.is_registered(ta) and pytree.is_registered(tl) and not pytree.is_registered([ta])


def test_tree_map_one_and_several_trees():
    tree = {"a": [1, 2], "b": (3, None)}
    assert pytree.tree_map(lambda v: None if v is None else v * 10, tree) == {"a": [10, 20], "b": (30, None)}
    assert pytree.tree_map(lambda v, w: (v, w), [1, (2,)], ["x", ("y",)]) == [(1, "x"), ((2, "y"),)]
    with pytest.raises(ValueError, match="different structures"):
        pytree.tree_map(lambda v, w: v, [1, 2], [1, (2,)])
    got = pytree.tree_map(lambda v: -v, [Pair(1, 2, "q")])
    assert got[0].a == -1 and got[0].b == -2 and got[0].label == "q"
    mapped = pytree.tree_map(str, {"b": 1, "a": 2}, sort_keys=True)
    assert list(mapped.items()) == [("a", "2"), ("b", "1")]
