"""Smoke test of benchmarks/bench_generate.py at a tiny size (no timing is checked): every
column runs, the converted program's tokens equal d2s eager's for the same seed, and the
ratios and the preparation time are printed."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_generate_src",
                                                  os.path.join(ROOT, "benchmarks", "bench_generate.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tiny_run_gives_eager_tokens_in_every_column(capsys):
    rows = _bench().main(["--tiny"])
    out = capsys.readouterr().out
    assert "load average" in out and "load average at the end" in out
    assert "py/torch" in out and "best/eager" in out
    assert [(r["batch"], r["cache"]) for r in rows] == [(1, True), (1, False)]
    for r in rows:
        assert r["check"] == ["python: ="], r
        assert set(r["rates"]) >= {"d2s eager", "conv python"}
        assert all(v > 0 for v in r["rates"].values())
        assert isinstance(r["prep"], float)
