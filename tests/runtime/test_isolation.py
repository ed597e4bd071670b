"""d2s_runtime runs a saved program in a fresh interpreter where d2s and gast cannot be imported."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import d2s
from d2s.static import build_program
from d2s_runtime.serialize import save_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent("""
    import sys

    class Block:
        # refuse d2s and gast, so any import of them by the runtime fails loudly
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("d2s", "gast"):
                raise ImportError(f"{name} must not be imported by d2s_runtime")
            return None

    sys.meta_path.insert(0, Block())
    import numpy as np
    import d2s_runtime
    model = d2s_runtime.load(sys.argv[1])
    x = np.load(sys.argv[2])
    np.save(sys.argv[3], model(x))
    bad = [m for m in sys.modules if m.split(".")[0] in ("d2s", "gast")]
    assert not bad, bad
""")


def test_saved_program_runs_without_d2s(tmp_path):
    w = d2s.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype("float32"), requires_grad=True)
    prog = build_program(lambda x: d2s.relu(x @ w).sum(axis=1), d2s.tensor(np.zeros((6, 4), "float32")))
    model_dir = str(tmp_path / "m")
    save_program(prog, model_dir, params={prog.params[0]: w.numpy()})
    x = np.random.default_rng(1).standard_normal((6, 4)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.path.join(ROOT, "runtime")
    # -S: no site-packages, so the editable install of d2s is not on the path either
    # (numpy is then found through PYTHONPATH entries below)
    import numpy
    env["PYTHONPATH"] += os.pathsep + os.path.dirname(os.path.dirname(numpy.__file__))
    r = subprocess.run([sys.executable, "-S", str(script), model_dir, str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                       env=env, capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), np.maximum(x @ w.numpy(), 0).sum(1), rtol=1e-5)
