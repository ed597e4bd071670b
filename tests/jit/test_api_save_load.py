"""The public contract of API.md §4 (deployment): d2s.jit.save / load, and d2s_runtime.load running
the saved directory without d2s."""
import os
import subprocess
import sys

import numpy as np
import pytest

import d2s

from api_helpers import LoopNet, X, branchy, close

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")



class TestSaveLoad:
    def test_save_load_and_runtime(self, tmp_path):
        d2s.manual_seed(0)
        net = LoopNet().eval()
        path = str(tmp_path / "net")
        d2s.jit.save(d2s.jit.to_static(net), path, input_spec=[d2s.jit.InputSpec([None, 3])])
        assert os.path.isdir(path)
        x = d2s.randn(4, 3)
        loaded = d2s.jit.load(path)
        close(loaded(x), net(x).numpy(), atol=1e-6)
        import d2s_runtime
        out = d2s_runtime.load(path)(x.numpy())
        out = out[0] if isinstance(out, (list, tuple)) else out
        assert isinstance(out, np.ndarray)
        close(out, net(x).numpy(), atol=1e-6)

    def test_saved_control_flow_runs_without_d2s(self, tmp_path):
        path = str(tmp_path / "fn")
        d2s.jit.save(branchy, path, input_spec=[d2s.jit.InputSpec([None, 3])])
        for v in (X, -X):
            close(d2s.jit.load(path)(d2s.tensor(v)), branchy(d2s.tensor(v)).numpy())
        code = ("import sys; sys.modules['d2s'] = None\n"
                "import numpy as np, d2s_runtime\n"
                f"m = d2s_runtime.load({path!r})\n"
                "o = m(-np.ones((2, 3), np.float32))\n"
                "o = o[0] if isinstance(o, (list, tuple)) else o\n"
                "print(float(o.sum()))")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert float(r.stdout.strip()) == pytest.approx(-12.0)
