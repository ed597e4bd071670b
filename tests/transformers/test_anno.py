"""The converter's annotations (d2s/transformers/anno.py): one vocabulary of keys on AST nodes,
and no transformer or analysis attaching an attribute of its own to a node."""
import ast
import os

import gast

import d2s.transformers
from d2s.transformers.anno import Key, getanno, hasanno, setanno

TRANSFORMERS = os.path.dirname(d2s.transformers.__file__)


def test_annotations_round_trip_per_key():
    node = gast.parse("x = 1").body[0]
    assert not hasanno(node, Key.GENERATED) and getanno(node, Key.GENERATED, "absent") == "absent"
    setanno(node, Key.GENERATED, True)
    setanno(node, Key.PYTHON_ONLY, "a reason")
    assert getanno(node, Key.GENERATED) is True and getanno(node, Key.PYTHON_ONLY) == "a reason"
    assert not hasanno(gast.parse("y = 2").body[0], Key.GENERATED)  # (each node its own)


def own_attributes(source):
    """``(line, name)`` of each ``_d2s_*`` attribute ``source`` sets on, or reads from, an object
    by name (``node._d2s_x = v``, ``getattr(node, "_d2s_x", ...)``)."""
    found = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Attribute) and n.attr.startswith("_d2s_") and isinstance(n.ctx, ast.Store):
            found.append((n.lineno, n.attr))
        elif isinstance(n, ast.Call) and getattr(n.func, "id", None) in ("getattr", "hasattr", "setattr") and \
                len(n.args) > 1 and isinstance(n.args[1], ast.Constant) and str(n.args[1].value).startswith("_d2s_"):
            found.append((n.lineno, n.args[1].value))
    return found


def test_no_transformer_keeps_annotations_of_its_own():
    found = []
    for d, _, files in os.walk(TRANSFORMERS):
        for f in files:
            if f.endswith(".py") and f != "anno.py":
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    found += [f"{f}:{line} {name}" for line, name in own_attributes(fh.read())]
    assert not found, "annotate AST nodes through d2s.transformers.anno (a Key), not attributes: " + "; ".join(found)


def test_the_attribute_check_can_fail():
    assert own_attributes('node._d2s_seen = True\nif getattr(node, "_d2s_seen", False): pass\n') == [
        (1, "_d2s_seen"), (2, "_d2s_seen")]
