"""``d2s compare``: the command line parses its arguments (d2s.cli), d2s.trace.compare does the
comparison and never imports the command line."""
import ast
import os
import textwrap

import pytest

import d2s.trace
from d2s.cli import main, run_compare
from d2s.trace.compare import compare

LOOP = textwrap.dedent("""
    import d2s

    COMPARE_SHAPES = ["float32[3]"]

    def halve(x):
        while x.abs().max() > 1:
            x = x / 2
        return x
""")


def _help(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    return capsys.readouterr().out


def test_compare_help_describes_its_arguments(capsys):
    out = _help(["compare", "--help"], capsys)
    assert out.startswith("usage: d2s compare ")
    assert "FILE.py::FUNC" in out and "--spec SPEC" in out and "(repeat per input)" in out
    assert "run FILE::FUNC through eager, trace and to_static side by side" in _help(["--help"], capsys)


def test_trace_package_never_imports_the_command_line():
    pkg = os.path.dirname(d2s.trace.__file__)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            tree = ast.parse(open(os.path.join(pkg, name)).read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    assert "cli" not in (node.module or "").split("."), f"d2s/trace/{name} imports the CLI"
                elif isinstance(node, ast.Import):
                    assert all("cli" not in a.name.split(".") for a in node.names), f"d2s/trace/{name}"


def test_compare_uses_the_files_shapes_without_spec(tmp_path, capsys):
    src = tmp_path / "loop.py"
    src.write_text(LOOP)
    assert main(["compare", f"{src}::halve"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("d2s compare halve: eager vs trace")
    assert "loop.py:7" in out and out == run_compare(f"{src}::halve") + "\n"


def test_bad_spec_is_named(tmp_path, capsys):
    src = tmp_path / "loop.py"
    src.write_text(LOOP)
    with pytest.raises(SystemExit) as e:
        main(["compare", f"{src}::halve", "--spec", "float32(3)"])
    assert str(e.value).startswith("d2s: bad --spec 'float32(3)': write it as DTYPE[DIM,...]")


def test_compare_function_rejects_a_bad_shape_string():
    with pytest.raises(ValueError, match=r"d2s.trace.compare: bad shape 'float32\(3\)': write it as DTYPE"):
        compare(lambda x: x, shapes=["float32(3)"])
    with pytest.raises(ValueError, match=r"bad shape 'complex\[3\]'"):
        compare(lambda x: x, shapes=["complex[3]"])
