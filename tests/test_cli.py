"""The ``d2s`` command line: every command and its --help, outputs checked against the API."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import d2s
from d2s.cli import main
from d2s.jit import InputSpec

MODEL = '''
import d2s

def f(x):
    if x.mean() > 0:
        x = x * 2
    return x + 1

def two(x, y):
    return x @ y

class Net(d2s.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = d2s.nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x) * 2

net = Net()
'''

COMMANDS = ["convert", "graph", "compare", "run", "export-onnx", "demo"]


@pytest.fixture
def model_file(tmp_path):
    p = tmp_path / "model.py"
    p.write_text(MODEL)
    return str(p)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    assert f"usage: d2s {command}" in capsys.readouterr().out


def test_module_entry_point_runs():
    r = subprocess.run([sys.executable, "-m", "d2s", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert all(c in r.stdout for c in COMMANDS)


def test_convert_prints_converted_code(model_file, capsys):
    assert main(["convert", f"{model_file}::f"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def f(x):") and "convert_ifelse" in out
    from d2s.transformers import convert_function
    from d2s.cli import load_target
    assert out.strip() == convert_function(load_target(f"{model_file}::f")).code.strip()


def test_graph_prints_the_program_and_writes_dot(model_file, tmp_path, capsys, monkeypatch):
    assert main(["graph", f"{model_file}::f", "--spec", "float32[?,3]"]) == 0
    out = capsys.readouterr().out
    assert "cond" in out and "f32[?,3]" in out
    dot = str(tmp_path / "g.dot")
    assert main(["graph", f"{model_file}::f", "--spec", "float32[?,3]", "--dot", dot]) == 0
    assert open(dot).read().lstrip().startswith("digraph")
    # --svg without Graphviz: a clear message, not a crash
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="needs Graphviz's `dot` program"):
        main(["graph", f"{model_file}::f", "--spec", "float32[?,3]", "--svg", str(tmp_path / "g.svg")])


def test_graph_with_two_specs(model_file, capsys):
    assert main(["graph", f"{model_file}::two", "--spec", "float32[?,3]", "--spec", "float32[3,2]"]) == 0
    assert "f32[?,2] = matmul" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["graph", "MODEL::f"], "describe each with --spec"),
    (["graph", "MODEL::f", "--spec", "float32(3)"], "bad --spec"),
    (["graph", "MODEL::f", "--spec", "complex[3]"], "bad --spec"),
    (["graph", "MODEL::nope", "--spec", "float32[3]"], "has no 'nope'"),
    (["graph", "missing.py::f", "--spec", "float32[3]"], "no such file"),
    (["convert", "MODEL"], "expected FILE::FUNC"),
    (["graph", "MODEL::f", "--spec", "float32[3]", "--spec", "float32[3]"], r"takes 1 input\(s\) \(x\) but 2 --spec"),
    (["graph", "MODEL::Net", "--spec", "float32[3]"], "is a class; name a function, or a module instance"),
    (["convert", "MODEL::Net"], "is a class"),
    (["export-onnx", "MODEL::f", "-o", "m.onnx"], "describe each with --spec"),
])
def test_bad_arguments_give_clear_messages(model_file, argv, message):
    argv = [a.replace("MODEL", model_file) for a in argv]
    with pytest.raises(SystemExit, match=message):
        main(argv)


def test_graph_and_convert_of_a_module_instance(model_file, capsys):
    assert main(["graph", f"{model_file}::net", "--spec", "float32[?,3]"]) == 0
    out = capsys.readouterr().out
    assert "f32[?,2] = matmul" in out and "f32[?,2] = mul" in out
    assert main(["convert", f"{model_file}::net"]) == 0
    assert "def forward(self, x):" in capsys.readouterr().out


def test_compare_prints_the_table(model_file, capsys):
    assert main(["compare", f"{model_file}::f", "--spec", "float32[2,3]"]) == 0
    out = capsys.readouterr().out
    assert "to_static" in out and "trace" in out


@d2s.jit.to_static
def _scaled(x):
    if x.sum() > 0:
        x = x * 3.0
    return x - 1.0, x.sum()


def test_run_a_saved_model(tmp_path, capsys):
    path = str(tmp_path / "m")
    d2s.jit.save(_scaled, path, input_spec=[InputSpec([None, 2], name="x")])
    x = np.array([[1.0, 2.0], [-4.0, 0.5]], "float32")
    np.save(tmp_path / "x.npy", x)
    assert main(["run", path, "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    out = capsys.readouterr().out
    assert "output_0: float32[2, 2]" in out and "output_1: float32[]" in out
    outdir = str(tmp_path / "out")
    assert main(["run", path, "--input", str(tmp_path / "x.npy"), "--out", outdir]) == 0
    want = _scaled(d2s.tensor(x))
    np.testing.assert_allclose(np.load(os.path.join(outdir, "output_0.npy")), want[0].numpy())
    np.testing.assert_allclose(np.load(os.path.join(outdir, "output_1.npy")), want[1].numpy())
    np.save(tmp_path / "bad.npy", np.zeros((2, 5), "float32"))
    assert main(["run", path, "--input", f"x={tmp_path / 'bad.npy'}"]) == 1
    assert "input 'x' must have shape [?, 2]" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "nothing")]) == 1
    assert "not a directory holding a saved d2s program" in capsys.readouterr().err


def test_export_onnx(model_file, tmp_path, capsys):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    out = str(tmp_path / "f.onnx")
    assert main(["export-onnx", f"{model_file}::f", "--spec", "float32[?,3]", "-o", out]) == 0
    assert "wrote" in capsys.readouterr().out
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    for x in (np.ones((2, 3), "float32"), -np.ones((5, 3), "float32")):
        want = np.where(x.mean() > 0, x * 2, x) + 1
        np.testing.assert_allclose(sess.run(None, {sess.get_inputs()[0].name: x})[0], want, rtol=1e-6)


class _TwoMethods(d2s.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = d2s.nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x)

    @d2s.jit.to_static
    def double(self, x):
        return x * 2.0


def test_run_another_method(tmp_path, capsys):
    m = d2s.jit.to_static(_TwoMethods())
    path = str(tmp_path / "m")
    d2s.jit.save(m, path, input_spec={"forward": [InputSpec([None, 2])], "double": [InputSpec([None, 2])]})
    np.save(tmp_path / "x.npy", np.ones((3, 2), "float32"))
    outdir = str(tmp_path / "o")
    assert main(["run", path, "--method", "double", "--input", str(tmp_path / "x.npy"), "--out", outdir]) == 0
    np.testing.assert_allclose(np.load(os.path.join(outdir, "output_0.npy")), np.full((3, 2), 2.0))
    with pytest.raises(SystemExit, match="no method 'triple'"):
        main(["run", path, "--method", "triple"])
