"""The README is a front door: short, and it names CI's test command (tests/test_docs.py runs its
tour and every other Python block of the README and of docs/, and checks its links)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_names_the_ci_test_command():
    readme = open(os.path.join(ROOT, "README.md")).read()
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    command = ("pip install -e '.[test,onnx,distributed,dask,native,mkl,docs]' && "
               "python -m pytest -q -x -p no:cacheprovider -n 2 tests")
    assert command in readme and command in ci


def test_readme_is_a_front_door_not_a_manual():
    lines = open(os.path.join(ROOT, "README.md")).read().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move details into docs/ (see docs/index.md)"
    readme = "\n".join(lines)
    assert "pip install -e . && d2s demo" in readme
    for page in ("docs/getting_started.md", "docs/to_static/index.md", "docs/pytorch_compat.md",
                 "docs/deployment/index.md", "docs/performance.md"):
        assert f"({page})" in readme, f"the README's map of the docs lacks {page}"
