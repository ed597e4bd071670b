"""``examples/batch_inference_dask.py``: a saved model mapped over Dask chunks equals one
in-process call of ``d2s_runtime``."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "batch_inference_dask.py"

pytest.importorskip("dask.array", reason="pip install -e '.[dask]'")


def _example():
    spec = importlib.util.spec_from_file_location("batch_inference_dask", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_chunked_dask_inference_equals_one_call(tmp_path):
    ex = _example()
    path = ex.save_model(str(tmp_path / "model"))
    x = np.random.default_rng(1).standard_normal((1030, 16)).astype(np.float32)  # a ragged last chunk
    got = ex.predict(path, x, chunk=256, scheduler="threads")
    import d2s_runtime
    want = d2s_runtime.load(path)(x)
    assert got.shape == want.shape == (1030, 3)
    # equal up to float32 rounding: BLAS may sum in another order for another batch size
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_example_runs_on_worker_processes():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "runtime"), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, str(EXAMPLE), "--rows", "1030", "--chunk", "256"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "equal to one in-process call: True" in r.stdout
