"""The README's tour runs as written (the front door stays true to the code)."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_tour_runs(tmp_path):
    text = open(os.path.join(ROOT, "README.md")).read()
    block = re.search(r"## A tour\n\n```python\n(.*?)```", text, re.S).group(1)
    script = tmp_path / "tour.py"
    script.write_text(block)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "gated" / "program.json").exists()


def test_readme_names_the_ci_test_command():
    readme = open(os.path.join(ROOT, "README.md")).read()
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    command = "pip install -e '.[test,onnx,distributed,dask,native,mkl]' && python -m pytest -q -x -p no:cacheprovider -n 2 tests"
    assert command in readme and command in ci
