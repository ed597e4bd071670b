"""The command line on a user's mistakes: one clear message, a non-zero exit, no traceback
(``--debug`` shows it); ``d2s run`` writes nothing outside ``--out``, whatever the model says."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import d2s
from d2s.cli import main, output_file_names
from d2s.jit import InputSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOOD = '''
import d2s

def f(x, y):
    z = x * 2
    return z @ y
'''
SYNTAX = "import d2s\n\ndef f(x:\n    return x\n"
FAILING_IMPORT = "import d2s\nimport no_such_module_here\n\ndef f(x):\n    return x\n"
FAILING_CODE = "import d2s\n\ndef f(x):\n    return x.no_such_method()\n"


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, text in (("good", GOOD), ("syntax", SYNTAX), ("failing_import", FAILING_IMPORT),
                       ("failing_code", FAILING_CODE)):
        p = tmp_path / f"{name}.py"
        p.write_text(text)
        out[name] = str(p)
    return out


def _error(capsys):
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("case,argv,message", [
    ("syntax", ["convert", "{syntax}::f"], r"syntax\.py, line 3: syntax error: '\(' was never closed"),
    ("failing_import", ["graph", "{failing_import}::f", "--spec", "float32[3]"],
     r"failing_import\.py, line 2: importing the file failed: ModuleNotFoundError"),
    ("user_shape_error", ["graph", "{good}::f", "--spec", "float32[3,4]", "--spec", "float32[5,2]"],
     r"matmul: shapes \(3, 4\) and \(5, 2\) do not align.*good\.py\", line 6"),
    ("user_code_error", ["graph", "{failing_code}::f", "--spec", "float32[3]"],
     r"failing_code\.py, line 4: AttributeError: .*no_such_method"),
])
def test_a_mistake_in_the_users_file_is_one_message(files, capsys, case, argv, message):
    argv = [a.format(**files) for a in argv]
    assert main(argv) == 1
    err = _error(capsys)
    assert err.startswith(f"d2s {argv[0]}: error: ")
    import re
    assert re.search(message, err, re.S), err
    assert "--debug" in err


def test_debug_shows_the_traceback(files):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    argv = [sys.executable, "-m", "d2s", "convert", f"{files['syntax']}::f"]
    plain = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr and "syntax error" in plain.stderr
    for debug in (["--debug"] + argv[3:], argv[3:] + ["--debug"]):
        r = subprocess.run(argv[:3] + debug, capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 1 and "Traceback" in r.stderr and "SyntaxError" in r.stderr


def test_output_into_a_missing_directory(files, tmp_path):
    with pytest.raises(SystemExit, match=r"cannot write --dot .*no_dir.* does not exist; create it first"):
        main(["graph", f"{files['good']}::f", "--spec", "float32[3,4]", "--spec", "float32[4,2]",
              "--dot", str(tmp_path / "no_dir" / "g.dot")])
    assert not (tmp_path / "no_dir").exists()


@d2s.jit.to_static
def _matmul(x, y):
    return x @ y


@d2s.jit.to_static
def _forever(x):
    while x.sum() > 0:
        x = x + 1.0
    return x


def _save(fn, path, *specs):
    d2s.jit.save(fn, path, input_spec=list(specs))
    return path


def test_run_errors_are_one_message(tmp_path, capsys):
    path = _save(_matmul, str(tmp_path / "mm"), InputSpec([None, 3], name="x"), InputSpec([None, 2], name="y"))
    np.save(tmp_path / "x.npy", np.ones((2, 3), "float32"))
    np.save(tmp_path / "y.npy", np.ones((4, 2), "float32"))
    args = ["run", path, "--input", f"x={tmp_path / 'x.npy'}", "--input", f"y={tmp_path / 'y.npy'}"]
    assert main(args) == 1  # passes the signature ([?, 3] @ [?, 2]) but fails in the kernel
    assert "d2s run: error: op 'matmul'" in _error(capsys)
    (tmp_path / "a_file").write_text("keep me")
    with pytest.raises(SystemExit, match="--out .*a_file is an existing file"):
        main(args + ["--out", str(tmp_path / "a_file")])
    assert (tmp_path / "a_file").read_text() == "keep me"


def test_max_loop_iterations_stops_a_loop_that_never_ends(tmp_path, capsys):
    path = _save(_forever, str(tmp_path / "loop"), InputSpec([None], name="x"))
    np.save(tmp_path / "x.npy", np.ones(3, "float32"))
    assert main(["run", path, "--input", str(tmp_path / "x.npy"), "--max-loop-iterations", "50"]) == 1
    err = _error(capsys)
    assert "op 'while'" in err and "max_loop_iterations=50" in err
    np.save(tmp_path / "neg.npy", -np.ones(3, "float32"))
    assert main(["run", path, "--input", str(tmp_path / "neg.npy"), "--max-loop-iterations", "50"]) == 0
    with pytest.raises(SystemExit):
        main(["run", path, "--max-loop-iterations", "-3"])


def test_max_bytes_refuses_a_big_model(tmp_path, capsys):
    lin = d2s.nn.Linear(3, 2)
    d2s.jit.save(d2s.jit.to_static(lin), str(tmp_path / "lin"), input_spec=[InputSpec([None, 3], name="x")])
    np.save(tmp_path / "x.npy", np.ones((1, 3), "float32"))
    assert main(["run", str(tmp_path / "lin"), "--max-bytes", "8"]) == 1
    assert "over max_bytes=8" in _error(capsys)
    assert main(["run", str(tmp_path / "lin"), "--max-bytes", "32", "--input", str(tmp_path / "x.npy")]) == 0


@d2s.jit.to_static
def _three(x):
    return x + 1.0, x * 2.0, x - 3.0


HOSTILE_NAMES = ["../../escaped", "/tmp/d2s_absolute_escape", "sub/dir/x"]


def test_run_writes_only_inside_out_whatever_the_output_names(tmp_path, capsys):
    path = _save(_three, str(tmp_path / "m"), InputSpec([2], name="x"))
    meta_path = os.path.join(path, "meta.json")
    meta = json.load(open(meta_path))
    for spec, name in zip(meta["outputs"], HOSTILE_NAMES):
        spec["name"] = name
    json.dump(meta, open(meta_path, "w"))
    x = np.array([1.0, -2.0], "float32")
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "work" / "out"
    out.parent.mkdir()
    before = sorted(os.listdir(tmp_path))
    cwd = os.getcwd()
    try:
        os.chdir(out.parent)  # '../../escaped' would land in tmp_path's parent
        assert main(["run", path, "--input", str(tmp_path / "x.npy"), "--out", str(out)]) == 0
    finally:
        os.chdir(cwd)
    assert sorted(os.listdir(tmp_path)) == before
    assert not os.path.exists("/tmp/d2s_absolute_escape.npy")
    files = sorted(os.listdir(out))
    assert files == sorted(output_file_names(HOSTILE_NAMES)) and len(files) == 3
    assert all("/" not in f and not f.startswith(".") for f in files)
    by_name = dict(zip(HOSTILE_NAMES, output_file_names(HOSTILE_NAMES)))
    np.testing.assert_array_equal(np.load(out / by_name["../../escaped"]), x + 1.0)
    np.testing.assert_array_equal(np.load(out / by_name["sub/dir/x"]), x - 3.0)
    # a symlink planted in --out is not written through
    target = tmp_path / "victim.npy"
    target.write_bytes(b"precious")
    os.remove(out / by_name["../../escaped"])
    os.symlink(target, out / by_name["../../escaped"])
    with pytest.raises(SystemExit, match="refusing to write"):
        main(["run", path, "--input", str(tmp_path / "x.npy"), "--out", str(out)])
    assert target.read_bytes() == b"precious"


def test_output_file_names_are_safe_and_distinct():
    names = ["a", "A", "../x", "..", ".", "", "a/b", "\x1b[31m", "é", "a"]
    files = output_file_names(names)
    assert len(set(f.lower() for f in files)) == len(files)
    for f in files:
        assert f.endswith(".npy") and not f.startswith(".") and os.path.basename(f) == f
        assert all(c.isascii() and (c.isalnum() or c in "_.-") for c in f)
