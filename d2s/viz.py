"""Draw the autograd graph behind a tensor as Graphviz DOT (like torchviz's ``make_dot``).

``make_dot(loss, params=dict(model.named_parameters()))`` returns a :class:`Digraph` whose
``.source`` is DOT text (no Graphviz needed) and whose ``.render(path, format='svg')`` runs
the ``dot`` program. Backward nodes are grey boxes; leaves that receive gradients are blue,
labelled with their parameter name when ``params`` names them, and with their shape; the
output is green.
"""
import os
import shutil
import subprocess

from .autograd.node import grad_node
from .tensor import Tensor

__all__ = ["make_dot", "Digraph"]


class Digraph:
    """DOT source with a ``render`` that shells out to Graphviz's ``dot``."""

    def __init__(self, source):
        self.source = source

    def __str__(self):
        return self.source

    def _repr_svg_(self):  # notebooks show the graph when Graphviz is there
        try:
            return self.pipe("svg").decode()
        except RuntimeError:
            return None

    def pipe(self, format="svg"):
        """The rendered bytes in ``format`` (needs the ``dot`` program)."""
        dot = _dot_program()
        proc = subprocess.run([dot, f"-T{format}"], input=self.source.encode(), capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"make_dot: dot failed to render format {format!r}: {proc.stderr.decode().strip()}")
        return proc.stdout

    def render(self, path, format="svg"):
        """Write ``path`` (DOT source) and ``path.<format>`` (the drawing); returns the drawing's path."""
        dot = _dot_program()
        path = os.fspath(path)
        with open(path, "w") as f:
            f.write(self.source)
        out = f"{path}.{format}"
        proc = subprocess.run([dot, f"-T{format}", path, "-o", out], capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"make_dot: dot failed to render {path} as {format!r}: {proc.stderr.decode().strip()}")
        return out


def _dot_program():
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("make_dot: rendering needs Graphviz's `dot` program, which is not on PATH; install "
                           "Graphviz (apt install graphviz / brew install graphviz / conda install graphviz), "
                           "or use .source to get the DOT text without it")
    return dot


def _quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(t):
    if not t.is_symbolic:
        return tuple(t.array.shape)
    return tuple("?" if d is None else d for d in t._var.type.shape)


def make_dot(t, params=None, show_attrs=False):
    """The autograd graph behind ``t`` (a tensor or a list of tensors) as a :class:`Digraph`.

    Args:
        t: the output tensor(s) whose history to draw.
        params: optional ``{name: tensor}`` used to label leaves (``dict(model.named_parameters())``).
        show_attrs: also print each op's attributes in its box.
    """
    outputs = list(t) if isinstance(t, (list, tuple)) else [t]
    for o in outputs:
        if not isinstance(o, Tensor):
            raise TypeError(f"make_dot: expected a tensor, got {type(o).__name__}")
    names = {id(v): k for k, v in (params or {}).items()}
    lines = ["digraph autograd {",
             '  graph [rankdir=BT, fontname="Helvetica"];',
             '  node [shape=box, style=filled, fontname="Helvetica", fontsize=11, height=0.25];']
    ids = {}

    def node_id(obj):
        if id(obj) not in ids:
            ids[id(obj)] = f"n{len(ids)}"
        return ids[id(obj)]

    seen, stack = set(), []
    for k, o in enumerate(outputs):
        label = f"output{'' if len(outputs) == 1 else k}\n{_shape(o)}"
        oid = f"out{k}"
        lines.append(f"  {oid} [label={_quote(label)}, fillcolor=darkolivegreen1];")
        fn = grad_node(o)
        if fn is not None:
            lines.append(f"  {node_id(fn)} -> {oid};")
            stack.append(fn)
    while stack:  # iterative, so very deep graphs draw too
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        fid = node_id(fn)
        if fn.name() == "AccumulateGrad":
            var = fn.variable
            label = f"{names[id(var)]}\n" if id(var) in names else ""
            lines.append(f"  {fid} [label={_quote(label + str(_shape(var)))}, fillcolor=lightblue];")
            continue
        label = fn.name()
        if show_attrs and getattr(fn, "attrs", None):
            label += "\n" + "\n".join(f"{k}={v}" for k, v in sorted(fn.attrs.items()) if not callable(v))
        lines.append(f"  {fid} [label={_quote(label)}, fillcolor=lightgrey];")
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            lines.append(f"  {node_id(nxt)} -> {fid};")
            stack.append(nxt)
    lines.append("}")
    return Digraph("\n".join(lines) + "\n")
