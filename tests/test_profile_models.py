"""benchmarks/profile_models.py runs a workload of bench_models.py op by op (here at the tiny
sizes): it prints the step's CPU time and the ops by type, and leaves the executor as it was."""
import importlib.util
import os
import sys

from d2s_runtime import Executor
from d2s_runtime.tiers import TieredRunner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_tiny_profile_prints_the_ops_and_restores_the_executor(capsys):
    bench = os.path.join(ROOT, "benchmarks")
    sys.path.insert(0, bench)
    try:
        spec = importlib.util.spec_from_file_location("profile_models_src", os.path.join(bench, "profile_models.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        before = Executor._run_steps, TieredRunner.__init__
        mod.main(["lstm", "--tiny", "--steps", "1", "--top", "5"])
    finally:
        sys.path.remove(bench)
    out = capsys.readouterr().out
    assert "ms process CPU per step" in out and "by op type:" in out and "matmul" in out
    assert (Executor._run_steps, TieredRunner.__init__) == before
