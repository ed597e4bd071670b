"""benchmarks/bench_gpu.py: without cupy and a GPU it says what it needs and times nothing;
with them, it times every workload (no timing is checked). It exits with status 2 where
there is no GPU, which benchmarks/gpu_check.sh reads as "nothing to run here"."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _gpu():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def test_bench_gpu_runs_where_a_gpu_is_and_says_why_not_elsewhere(capsys):
    spec = importlib.util.spec_from_file_location("bench_gpu_src", os.path.join(ROOT, "benchmarks", "bench_gpu.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    status = bench.main(["--quick"])
    out = capsys.readouterr().out
    if _gpu():
        assert status == 0
        for case in ("control", "mlp", "rnn", "seed"):
            assert f"| {case}" in out, out
    else:
        assert status == 2 and "bench_gpu: needs cupy and a CUDA GPU" in out
