"""The public contract of API.md §6 (the command line): --help, convert, graph and run."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import d2s

from api_helpers import X, branchy


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "d2s", *args], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(__file__))


class TestCLI:
    def test_help(self):
        r = _cli("--help")
        assert r.returncode == 0
        for cmd in ("convert", "graph", "compare", "run", "demo"):
            assert cmd in r.stdout

    def test_convert_graph_run(self, tmp_path):
        src = tmp_path / "model.py"
        src.write_text(textwrap.dedent("""
            import d2s

            def f(x):
                if x.sum() > 0:
                    return x * 2.0
                return x - 1.0
        """))
        r = _cli("convert", f"{src}::f")
        assert r.returncode == 0 and "def f" in r.stdout
        r = _cli("graph", f"{src}::f", "--spec", "float32[?,3]")
        assert r.returncode == 0 and "cond" in r.stdout
        out_dir = str(tmp_path / "saved")
        d2s.jit.save(branchy, out_dir, input_spec=[d2s.jit.InputSpec([None, 3])])
        np.save(tmp_path / "x.npy", X)
        r = _cli("run", out_dir, "--input", f"x={tmp_path / 'x.npy'}")
        assert r.returncode == 0, r.stderr
        assert "6." in r.stdout and "-2." in r.stdout  # branchy(X) = 2 X = [[2, 4, 6], [-2, 1, 4]]
