"""Saving and loading programs: round trips, and every kind of bad file rejected clearly."""
import json
import os

import numpy as np
import pytest

import d2s
import d2s_runtime
from d2s.static import build_program
from d2s_runtime import Executor
from d2s_runtime.serialize import FormatError, load_program, save_program

RNG = np.random.default_rng(1)


def _model():
    w = d2s.tensor(RNG.standard_normal((4, 3)).astype("float32"), requires_grad=True)
    c = RNG.standard_normal((6, 3)).astype("float32")  # large enough to live in program.constants
    prog = build_program(lambda x: d2s.tanh(x @ w) + c * 0.5, d2s.tensor(np.zeros((6, 4), "float32")))
    assert prog.constants
    return prog, {prog.params[0]: w.numpy()}


@pytest.fixture
def saved(tmp_path):
    prog, params = _model()
    d = str(tmp_path / "model")
    save_program(prog, d, params=params, meta={"inputs": [{"shape": [6, 4], "dtype": "float32"}]})
    return prog, params, d


def test_round_trip_gives_the_same_program_and_results(saved):
    prog, params, d = saved
    assert sorted(os.listdir(d)) == ["constants.npz", "meta.json", "params.npz", "program.json"]
    p2, params2, meta = load_program(d)
    assert str(p2) == str(prog)
    assert meta["inputs"][0]["shape"] == [6, 4]
    for _ in range(3):
        x = RNG.standard_normal((6, 4)).astype("float32")
        ref = Executor(prog, params=params).run(x)[0]
        np.testing.assert_allclose(Executor(p2, params=params2).run(x)[0], ref, rtol=1e-6)
        np.testing.assert_allclose(d2s_runtime.load(d)(x), ref, rtol=1e-6)


def test_program_json_is_versioned(saved):
    doc = json.load(open(os.path.join(saved[2], "program.json")))
    assert doc["format"] == "d2s-program" and doc["version"] == 1


def _edit(d, fn):
    path = os.path.join(d, "program.json")
    doc = json.load(open(path))
    fn(doc)
    json.dump(doc, open(path, "w"))


def test_unknown_version_and_format_are_rejected(saved):
    d = saved[2]
    _edit(d, lambda doc: doc.update(version=99))
    with pytest.raises(FormatError, match="version 99 is not supported"):
        load_program(d)
    _edit(d, lambda doc: doc.update(version=1, format="onnx"))
    with pytest.raises(FormatError, match="not a d2s program"):
        load_program(d)


def test_unknown_op_is_rejected(saved):
    d = saved[2]
    _edit(d, lambda doc: doc["program"]["block"]["ops"][0].update(type="os_system"))
    with pytest.raises(FormatError, match="unknown op type 'os_system'"):
        load_program(d)


def test_bad_shape_and_dtype_are_rejected(saved):
    d = saved[2]
    first = lambda doc: next(iter(doc["program"]["block"]["vars"].values()))  # noqa: E731
    _edit(d, lambda doc: first(doc).update(shape=[-3, "x"]))
    with pytest.raises(FormatError, match="bad shape"):
        load_program(d)
    _edit(d, lambda doc: first(doc).update(shape=[6, 4], dtype="complex64"))
    with pytest.raises(FormatError, match="bad dtype 'complex64'"):
        load_program(d)


def test_wrongly_typed_fields_are_rejected(saved):
    d = saved[2]
    _edit(d, lambda doc: doc["program"].update(inputs="a"))
    with pytest.raises(FormatError, match="program inputs must be a list"):
        load_program(d)


def test_inconsistent_program_is_rejected_by_verify(saved):
    d = saved[2]
    _edit(d, lambda doc: doc["program"]["block"]["ops"][0].update(inputs=["zz"]))
    with pytest.raises(FormatError, match="malformed.*'zz'"):
        load_program(d)


def test_truncated_and_missing_files_are_rejected(saved):
    d = saved[2]
    raw = open(os.path.join(d, "constants.npz"), "rb").read()
    open(os.path.join(d, "constants.npz"), "wb").write(raw[: len(raw) // 2])
    with pytest.raises(FormatError, match="constants.npz: cannot read arrays"):
        load_program(d)
    os.remove(os.path.join(d, "constants.npz"))
    with pytest.raises(FormatError, match="constants.npz: missing file"):
        load_program(d)
    text = open(os.path.join(d, "program.json")).read()
    open(os.path.join(d, "program.json"), "w").write(text[:100])
    with pytest.raises(FormatError, match="not valid JSON"):
        load_program(d)
    os.remove(os.path.join(d, "program.json"))
    with pytest.raises(FormatError, match="program.json: missing"):
        load_program(d)


def test_array_of_wrong_shape_is_rejected(saved):
    prog, params, d = saved
    np.savez(os.path.join(d, "params.npz"), **{prog.params[0]: np.zeros((3, 3), "float32")})
    with pytest.raises(FormatError, match=r"is float32\[3, 3\] but the program types it f32\[4,3\]"):
        load_program(d)


def test_pickled_arrays_are_never_loaded(saved):
    prog, params, d = saved
    np.savez(os.path.join(d, "params.npz"), **{prog.params[0]: np.array([object()], dtype=object)})
    with pytest.raises(FormatError, match="params.npz"):
        load_program(d)
