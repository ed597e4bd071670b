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


# ------------------------------------------------------------------ exits that are not tracebacks
def test_a_forged_npy_header_is_refused_before_its_data_is_read(tmp_path, capsys):
    """A 129-byte .npy whose header declares 3.6 TiB: refused from its header, against the file's
    size and --max-bytes, before any allocation."""
    path = _save(_forever, str(tmp_path / "loop"), InputSpec([None], name="x"))
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }"
    header += " " * (118 - len(header)) + "\n"
    (tmp_path / "huge.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    assert main(["run", path, "--input", str(tmp_path / "huge.npy")]) == 1
    assert "declares float32[1000000, 1000000] (4000000000000 bytes) but the file holds 0 bytes" in _error(capsys)
    np.save(tmp_path / "x.npy", np.ones(30, "float32"))
    assert main(["run", path, "--input", str(tmp_path / "x.npy"), "--max-bytes", "100"]) == 1
    assert "is 120 bytes, over max_bytes=100" in _error(capsys)
    np.save(tmp_path / "objects.npy", np.array([{}, 1], dtype=object))
    assert main(["run", path, "--input", str(tmp_path / "objects.npy")]) == 1
    assert "Python objects (a pickle); refused unread" in _error(capsys)


RECURSIVE_AND_EXEC = '''
import d2s

def rec(x):
    return rec(x * 2)

def ok(x):
    return x * 2 + 1

ns = {}
exec("def made_by_exec(x):\\n    return x + 1\\n", ns)
made_by_exec = ns["made_by_exec"]
'''


@pytest.mark.parametrize("argv, message", [
    (["graph", "{f}::rec", "--spec", "float32[3]"], "recursed past Python's recursion limit"),
    (["graph", "{f}::made_by_exec", "--spec", "float32[3]"], "made_by_exec cannot be converted: cannot read the source"),
    (["compare", "{f}::ok", "--spec", "float32[100000,100000]"], "would take 74.5 GiB"),
])
def test_programs_the_command_cannot_build_are_one_line(tmp_path, capsys, argv, message):
    f = tmp_path / "m.py"
    f.write_text(RECURSIVE_AND_EXEC)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no warning besides the message
        assert main([a.format(f=f) for a in argv]) == 1
    err = _error(capsys)  # (no traceback)
    assert message in err and err.startswith(f"d2s {argv[0]}: error: ") and err.endswith("--debug to see the traceback)\n")


def _cli(args, **kw):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    # Python's own Ctrl-C handler, as a command started from a terminal has (a test run launched
    # in the background by a shell without job control passes SIGINT on ignored)
    code = ("import signal, sys, d2s.cli\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "sys.stderr.write('ready\\n'); sys.stderr.flush()\n"
            f"sys.exit(d2s.cli.main({args!r}))")
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **kw)


def test_a_closed_output_pipe_ends_the_command_quietly(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(RECURSIVE_AND_EXEC)
    p = _cli(["graph", f"{f}::ok", "--spec", "float32[3]"])
    p.stdout.close()  # the reader went away before the program was printed (`| head -0`)
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 1
    assert err == "ready\n", err


def test_ctrl_c_during_run_is_one_line_and_status_130(tmp_path):
    import signal
    import time
    path = _save(_forever, str(tmp_path / "loop"), InputSpec([None], name="x"))
    np.save(tmp_path / "x.npy", np.ones(3, "float32"))
    p = _cli(["run", path, "--input", str(tmp_path / "x.npy")])
    assert p.stderr.readline() == b"ready\n"
    time.sleep(1.0)  # the model loads and its loop starts
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err.decode() == "d2s run: interrupted\n", err
