"""benchmarks/bench_gpu.py: without cupy and a GPU it says what it needs and times nothing;
with them, it times every workload (no timing is checked)."""
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
    rows = bench.main()
    if _gpu():
        assert set(rows) == {"control", "mlp", "rnn", "seed"}
        assert all(eager > 0 and converted > 0 for eager, converted, _ in rows.values())
    else:
        assert rows is None and "bench_gpu: needs cupy and a CUDA GPU" in capsys.readouterr().out
