"""Smoke test of benchmarks/bench_native.py at tiny sizes (no timing is checked): every
workload runs in every d2s column the installed d2s has, and each d2s column computes what
numpy by hand computes, so the benchmark times the same program everywhere."""
import importlib.util
import os


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_native_src", os.path.join(ROOT, "benchmarks", "bench_native.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tiny_run_agrees_with_numpy_by_hand(capsys):
    bench = _bench()
    result = bench.main(["--tiny", "--no-peers", "--native-wait", "60"])
    out = capsys.readouterr().out
    assert "load average at start" in out and "load average at end" in out
    assert set(result["times"]) == {"control@0", "control@3", "control@20", "mlp", "rnn", "seed"}
    for case, cols in result["times"].items():
        assert isinstance(cols["d2s-py"], float) and isinstance(cols["numpy"], float), (case, cols)
        assert isinstance(cols["d2s-native"], (float, bench.Unavailable)), (case, cols)
        for col, (diff, scale) in result["diffs"][case].items():
            assert diff <= 1e-5 * max(scale, 1.0), (case, col, diff, scale)
    assert [row[0] for row in result["rnn_slope"]] == [2, 4, 8]
    assert all(row[3] <= 1e-5 for row in result["rnn_slope"])


def test_unavailable_columns_are_reported_not_raised(monkeypatch):
    bench = _bench()
    monkeypatch.setattr(bench, "find_tf_python", lambda path: (None, "tensorflow is not importable here"))
    monkeypatch.setattr(bench, "jax_runner", lambda name, inputs: (_ for _ in ()).throw(ImportError(name="jax")))
    monkeypatch.setattr(bench, "torch_runner", lambda name, inputs: (_ for _ in ()).throw(ImportError(name="torch")))
    result = bench.main(["--tiny", "--peers", "--only", "seed"])
    cols = result["times"]["seed"]
    assert isinstance(cols["d2s-py"], float)
    for peer in ("jax", "torch", "tf"):
        assert isinstance(cols[peer], bench.Unavailable), (peer, cols[peer])
