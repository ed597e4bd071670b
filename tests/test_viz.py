"""d2s.viz.make_dot: DOT source of the autograd graph; rendering through the `dot` program."""
import os
import re
import stat
import sys

import pytest

import d2s
from d2s.viz import make_dot


def _graph():
    w = d2s.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = d2s.tensor([0.5, 0.5], requires_grad=True)
    x = d2s.tensor([[1.0, -1.0]])
    return d2s.tanh(x @ w + b).sum(), w, b


def _edges(source):
    return re.findall(r"(\w+) -> (\w+);", source)


def test_source_lists_every_backward_node_and_named_leaves():
    loss, w, b = _graph()
    src = make_dot(loss, params={"weight": w, "bias": b}).source
    assert src.startswith("digraph")
    for name in ("SumBackward0", "TanhBackward0", "AddBackward0", "MatmulBackward0"):
        assert name in src
    assert "weight\\n(2, 2)" in src and "bias\\n(2,)" in src
    labels = dict(re.findall(r'(\w+) \[label="([^"]*)"', src))
    edges = _edges(src)
    # 4 op nodes + 2 leaves + the output; the constant x draws no node
    assert len(labels) == 7
    assert len(edges) == 6
    by_label = {v.split("\\n")[0]: k for k, v in labels.items()}
    assert (by_label["weight"], by_label["MatmulBackward0"]) in edges
    assert (by_label["TanhBackward0"], by_label["SumBackward0"]) in edges


def test_shared_node_is_drawn_once():
    x = d2s.tensor(2.0, requires_grad=True)
    y = x * 3
    z = y * y + y
    src = make_dot(z).source
    assert src.count("AccumulateGrad") == 0  # leaves show their shape, not the class name
    assert src.count('label="MulBackward0"') == 2  # x*3 and y*y
    assert src.count('label="AddBackward0"') == 1


def test_deep_graph_does_not_recurse():
    x = d2s.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1
    assert make_dot(y).source.count("AddBackward0") == 5000


def test_non_tensor_is_a_clear_error():
    with pytest.raises(TypeError, match="tensor"):
        make_dot([1.0])


def test_render_without_dot_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    loss, _, _ = _graph()
    g = make_dot(loss)
    assert "digraph" in g.source  # the source never needs Graphviz
    with pytest.raises(RuntimeError, match="Graphviz.*dot"):
        g.render(tmp_path / "graph")


@pytest.mark.skipif(sys.platform == "win32", reason="uses a shell-script stand-in for dot")
def test_render_calls_dot_with_format_and_paths(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "dot"
    # a stand-in `dot` that records its arguments and writes the output file it was asked for
    fake.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/args"\nfor last; do :; done\necho "<svg/>" > "$last"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    loss, _, _ = _graph()
    out = make_dot(loss).render(tmp_path / "graph", format="svg")
    assert out == str(tmp_path / "graph") + ".svg"
    assert (tmp_path / "graph").read_text().startswith("digraph")
    assert (tmp_path / "graph.svg").read_text().strip() == "<svg/>"
    assert "-Tsvg" in (bindir / "args").read_text()
