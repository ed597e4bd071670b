"""tests/ mirrors the package tree: a test of ``d2s/<pkg>/`` lives in ``tests/<pkg>/`` (d2s_runtime's in
``tests/runtime/``, its passes in ``tests/runtime/passes/``), and tests/ itself holds only tests of
top-level modules (``tests/test_tensor.py``) and of the system as a whole. Every folder holding tests is
a package, so the same file name (``test_api.py``) may sit in several folders."""
import sys
from pathlib import Path

import d2s

TESTS = Path(__file__).resolve().parent
PACKAGE = Path(d2s.__file__).resolve().parent

# Prefixes that are not a d2s subpackage but still name a folder of tests/.
EXTRA_FOLDERS = {"runtime": "runtime", "passes": "runtime/passes", "ops": "ops"}


def _folders():
    """The folder of tests/ for each name a flat test file may start with."""
    folders = {p.name: p.name for p in PACKAGE.iterdir()
               if (p / "__init__.py").is_file() and not p.name.startswith("_")}
    folders.update(EXTRA_FOLDERS)
    return folders


def _misplaced():
    folders = _folders()
    top_level = {p.stem for p in PACKAGE.glob("*.py")}
    found = []
    for path in sorted(TESTS.glob("test_*.py")):
        stem = path.stem[len("test_"):]
        if stem in top_level:
            continue  # tests/test_<module>.py for d2s/<module>.py belongs here
        for prefix, folder in folders.items():
            if stem == prefix or stem.startswith(prefix + "_"):
                found.append(f"tests/{path.name} tests d2s's {prefix!r}: move it into tests/{folder}/ "
                             f"(as tests/{folder}/test_{stem[len(prefix) + 1:] or prefix}.py)")
    return found


def test_no_flat_test_file_names_a_subpackage():
    assert _misplaced() == []


def test_the_rule_refuses_a_flat_file_of_a_subpackage(tmp_path, monkeypatch):
    # The check above must be able to fail: a flat tests/test_jit_x.py and tests/test_passes_x.py are
    # refused, a flat test of a top-level module is not.
    monkeypatch.setattr(sys.modules[__name__], "TESTS", tmp_path)
    for name in ("test_jit_cache.py", "test_passes_cse.py", "test_tensor.py", "test_runtime.py"):
        (tmp_path / name).write_text("")
    assert [m.split()[0] for m in _misplaced()] == ["tests/test_jit_cache.py", "tests/test_passes_cse.py",
                                                    "tests/test_runtime.py"]


def test_every_folder_of_tests_is_a_package():
    missing = sorted(str(d.relative_to(TESTS)) for d in {p.parent for p in TESTS.rglob("test_*.py")}
                     if not (d / "__init__.py").is_file())
    assert missing == [], f"add an empty __init__.py to each of tests/{missing}"
