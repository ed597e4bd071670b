"""Name analysis: liveness and definedness over the CFG decide what branches and loops carry."""
import textwrap

import gast

from d2s.transformers.analysis import analyze
from d2s.transformers.anno import Key, getanno, hasanno


def _annos(src):
    module = analyze(gast.parse(textwrap.dedent(src)))
    return [getanno(s, Key.LIVENESS) for s in gast.walk(module) if hasanno(s, Key.LIVENESS)]


def test_if_liveness_and_definedness():
    (a,) = _annos("""
        def f(x):
            if x:
                y = 1
                t = 2
            else:
                y = 2
            return y
    """)
    assert a.mods == {"y", "t"}
    assert "y" in a.live_out and "t" not in a.live_out
    assert a.defined == {"x"} and "y" not in a.maybe_defined


def test_loop_back_edge_makes_names_live_at_the_head():
    (a,) = _annos("""
        def f(x, n):
            s = 0
            while n > 0:
                s = s + x
                n = n - 1
            return s
    """)
    assert {"s", "n", "x"} <= a.live_in
    assert a.live_out == {"s"}
    assert a.mods == {"s", "n"}


def test_mutating_calls_and_subscripts_count_as_modifications():
    (a,) = _annos("""
        def f(x, out, d):
            for v in x:
                out.append(v)
                d['k'] = v
            return out, d
    """)
    assert {"out", "d", "v"} <= a.mods


def test_nested_def_reads_free_variables():
    (a,) = _annos("""
        def f(x):
            if x:
                z = 1
            def g():
                return z
            return g
    """)
    assert "z" in a.live_out
