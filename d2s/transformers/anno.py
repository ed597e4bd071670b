"""The converter's annotations on AST nodes: one vocabulary, as AutoGraph's ``pyct/anno.py``.

A fact a transformer or an analysis attaches to a node for a later pass is stored under a key
of :class:`Key`, in the node's annotation dict, and read with :func:`getanno`; no transformer
sets an attribute of its own on a node. (The dict travels with the node when it is moved; a
node the converter makes afresh starts without one.)
"""
import enum

__all__ = ["Key", "getanno", "setanno", "hasanno"]

_ATTR = "_d2s_annotations"  # the one attribute the converter sets on AST nodes


class Key(enum.Enum):
    """What an annotation says (the value each key holds, and who sets it)."""

    LIVENESS = "the names live into and out of a compound statement (analysis/liveness.py: an Anno)"
    GENERATED = "True: a node the converter made, not the user's code; it is not converted again (base.py)"
    PYTHON_ONLY = "why a statement stays plain Python (unsupported_features.py)"
    TRUTH = "True: an and/or whose value is only tested for its truth (logical_expressions.py)"
    RETURN_BREAK = "True: a break that stands for a return (return_statements.py)"
    BREAKS_RETURN = "True: a loop whose breaks all stand for returns (break_statements.py)"
    EXTRA_TEST = "a loop's extra test, the not-broken flag (break_statements.py)"


def getanno(node, key, default=None):
    """The annotation ``key`` of ``node``, or ``default``."""
    return getattr(node, _ATTR, {}).get(key, default)


def setanno(node, key, value):
    """Annotate ``node`` with ``value`` under ``key``."""
    annotations = getattr(node, _ATTR, None)
    if annotations is None:
        annotations = {}
        setattr(node, _ATTR, annotations)
    annotations[key] = value


def hasanno(node, key):
    """Whether ``node`` has annotation ``key``."""
    return key in getattr(node, _ATTR, {})
