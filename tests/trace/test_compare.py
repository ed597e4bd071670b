"""d2s.trace.compare / d2s compare: eager vs trace vs to_static, per input and per source point."""
import textwrap

import numpy as np

from d2s.cli import main as cli_main, run_compare
from d2s.trace.compare import compare, generate_inputs, path_of

from trace_corpus import elif_chain, t, while_halve


def _rows(table_text):
    """The per-input table's data rows, split on runs of 2+ spaces."""
    import re
    lines = table_text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("#  input"))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.strip():
            break
        rows.append(re.split(r"\s{2,}", ln.strip()))
    return rows


def test_generated_inputs_cover_every_branch():
    inputs = generate_inputs(elif_chain, [(3,)])
    paths = {path_of(elif_chain, a) for a in inputs}
    assert len(paths) == len(inputs) == 3  # s > 10, 0 < s <= 10, s <= 0
    sums = sorted(float(a[0].sum()) for a in inputs)
    assert sums[0] <= 0 < sums[1] <= 10 < sums[2]


def test_compare_reports_trace_and_to_static_per_input():
    report = compare(elif_chain, inputs=[t(1, 2, 3), t(5, 5, 5), t(-1, -2, -3), t(1, 1, 1)])
    rows = _rows(str(report))
    assert [r[2] for r in rows] == ["P1", "P2", "P3", "P1"]
    assert [r[3] for r in rows] == ["ok", "WRONG", "WRONG", "ok"]
    assert rows[0][4] == "ok" and rows[1][4].startswith("GUARD trace_corpus.py:")
    assert rows[3][4] == "ok"
    static = [r[5] for r in rows]
    assert static == ["ok"] * 4 or static == ["n/a"] * 4
    assert report.static_ok == (static[0] == "ok")
    assert not report.trace_ok


def test_compare_reports_each_control_flow_point():
    report = compare(elif_chain, inputs=[t(1, 2, 3), t(5, 5, 5)])
    points = {p["source"]: p for p in report.points}
    assert points["if s > 10:"]["trace"] == "branch taken: False"
    assert points["elif s > 0:"]["trace"] == "branch taken: True"
    assert points["elif s > 0:"]["kind"] == "elif"
    text = str(report)
    assert "trace_corpus.py:" in text and "to_static" in text


def test_compare_marks_unreached_points():
    def f(x):
        if x.sum() > 0:
            return x
        while x.sum() < 0:
            x = x + 1
        return x

    report = compare(f, inputs=[t(1, 2, 3)])
    baked = [p["trace"] for p in report.points]
    assert baked == ["branch taken: True", "nothing (not reached)"]


def test_run_compare_loads_file_and_function(tmp_path):
    src = tmp_path / "model.py"
    src.write_text(textwrap.dedent("""
        import d2s

        def f(x):
            while x.abs().max() > 1:
                x = x / 2
            return x
    """))
    out = run_compare(f"{src}::f", shapes=["float32[3]"])
    rows = _rows(out)
    assert len(rows) >= 2 and rows[0][3] == "ok"
    assert any(r[3] == "WRONG" for r in rows) and any(r[4].startswith("GUARD model.py:5") for r in rows)
    assert "model.py:5" in out and "loop condition" in out


def test_cli_compare_prints_the_table(capsys, tmp_path):
    src = tmp_path / "m.py"
    src.write_text("COMPARE_INPUTS = None\n\n"
                   "def g(x):\n    return x * 2\n")
    assert cli_main(["compare", f"{src}::g", "--spec", "float32[2]"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert rows and all(r[3] == "ok" and r[4] == "ok" for r in rows)


def test_compare_on_a_loop_generates_distinct_trip_counts():
    report = compare(while_halve, shapes=[(3,)])
    paths = [r["path"] for r in report.rows]
    assert len(set(paths)) == len(paths) >= 3
    assert all(r["guarded"] in ("ok",) or r["guarded"].startswith("GUARD") for r in report.rows)
    assert np.all([r["trace"] == "ok" for r in report.rows[:1]])


def test_compare_takes_a_module_and_leaves_it_unchanged():
    from trace_corpus import GatedLayer
    m = GatedLayer()
    forward = m.forward
    report = compare(m, inputs=[t(1, 2, 3), t(-1, -2, -3)])
    assert [r["trace"] for r in report.rows] == ["ok", "WRONG"]
    assert report.rows[1]["guarded"].startswith("GUARD trace_corpus.py:")
    assert [p["source"] for p in report.points] == ["if h.mean() > 0:"]
    assert m.forward == forward
