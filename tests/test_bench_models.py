"""Smoke test of benchmarks/bench_models.py at tiny sizes (no timing is checked): every
workload runs in the d2s eager, converted and torch columns from the same weights, and their
first losses agree, so the benchmark times the same computation everywhere, whether the columns
share one process (``--shared-process``) or each runs in a worker of its own (``--separate``);
a worker that fails says so instead of hanging the run; and the load its ``--contended`` mode
starts beside the timed process is stopped when the run ends."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _module(name):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(f"{name}_src", os.path.join(ROOT, "benchmarks", f"{name}.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))


def test_tiny_run_agrees_with_torch(capsys):
    pytest.importorskip("torch")
    bench = _module("bench_models")
    result = bench.main(["--tiny", "--repeat", "1", "--settle", "0", "--columns", "d2s eager,d2s static,torch",
                         "--shared-process"])
    out = capsys.readouterr().out
    assert "load average at start" in out and "load average at end" in out
    assert "every column in this process" in out
    assert set(result) == {"resnet18", "gpt", "lstm", "mobilenet"}
    for name, times in result.items():
        assert set(times) == {"d2s eager", "d2s static", "torch"}, (name, times)
    assert bench.MISMATCHES == []


def test_tiny_separate_workers_agree_with_torch(capsys):
    pytest.importorskip("torch")
    bench = _module("bench_models")
    result = bench.main(["--tiny", "--repeat", "2", "--settle", "0.01", "--only", "lstm", "--columns",
                         "d2s eager,d2s static,torch"])
    out = capsys.readouterr().out
    assert "each column in a process of its own" in out and "weights: torch's initialization" in out
    assert "CPU used between steps while waiting" in out
    assert set(result) == {"lstm"}
    for name, times in result.items():
        assert set(times) == {"d2s eager", "d2s static", "torch"}, (name, times)
    assert bench.MISMATCHES == [] and bench.FAILURES == []


def test_failing_worker_is_reported():
    bench = _module("bench_models")
    worker = bench.Worker("lstm", "d2s eager", os.path.join(ROOT, "no-such-weights.npz"), 10.0, True)
    try:
        with pytest.raises(RuntimeError, match="d2s eager: FileNotFoundError"):
            worker.ready()
    finally:
        worker.close()
    assert worker.proc.returncode == 0


def test_contended_load_is_started_and_stopped():
    contention = _module("_contention")
    with contention.Contention("busy", warm=0.1) as load:
        procs = list(load.procs)
        assert len(procs) == 1 and procs[0].poll() is None
    assert all(p.poll() is not None for p in procs)
    with pytest.raises(ValueError, match="busy, busy2, loader"):
        contention.Contention("spin")
