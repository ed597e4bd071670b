"""Bad saved models and bad inputs: each is a clear error, and loading never runs code."""
import json
import os

import numpy as np
import pytest

import d2s
import d2s_runtime
from d2s.jit import InputSpec
from d2s_runtime.saved_model import InputError
from d2s_runtime.serialize import FormatError

RNG = np.random.default_rng(2)


@d2s.jit.to_static
def affine(x):
    if x.sum() > 0:
        x = x * 3.0
    return x + 1.0


@pytest.fixture
def saved(tmp_path):
    lin = d2s.nn.Linear(3, 2)

    @d2s.jit.to_static
    def f(x):
        return lin(x) * 2.0

    path = str(tmp_path / "m")
    d2s.jit.save(f, path, input_spec=[InputSpec([None, 3], name="x")])
    return path


def _both_loaders():
    return [d2s_runtime.load, d2s.jit.load]


def _edit_json(path, name, fn):
    p = os.path.join(path, name)
    doc = json.load(open(p))
    fn(doc)
    json.dump(doc, open(p, "w"))


@pytest.mark.parametrize("load", _both_loaders())
def test_missing_directory_and_files(tmp_path, saved, load):
    with pytest.raises(FormatError, match="not a directory"):
        load(str(tmp_path / "nowhere"))
    os.remove(os.path.join(saved, "params.npz"))
    with pytest.raises(FormatError, match="params"):
        load(saved)


@pytest.mark.parametrize("name", ["program.json", "params.npz", "meta.json"])
@pytest.mark.parametrize("load", _both_loaders())
def test_truncated_files(saved, name, load):
    p = os.path.join(saved, name)
    data = open(p, "rb").read()
    open(p, "wb").write(data[: len(data) // 2])
    with pytest.raises(FormatError, match="truncated or corrupt"):
        load(saved)


@pytest.mark.parametrize("load", _both_loaders())
def test_wrong_format_versions(saved, load):
    _edit_json(saved, "program.json", lambda d: d.update(version=99))
    with pytest.raises(FormatError, match="format version 99 is not supported"):
        load(saved)


def test_wrong_meta_version(saved):
    _edit_json(saved, "meta.json", lambda d: d.update(version=7))
    with pytest.raises(FormatError, match="meta version 7 is not supported"):
        d2s_runtime.load(saved)


def test_meta_disagreeing_with_the_program(saved):
    _edit_json(saved, "meta.json", lambda d: d["inputs"][0].update(shape=[None, 5]))
    with pytest.raises(FormatError, match=r"meta inputs\[0\] \(x\)"):
        d2s_runtime.load(saved)


def test_meta_methods_cannot_escape_the_directory(saved):
    _edit_json(saved, "meta.json", lambda d: d.update(methods={"evil": "../../etc"}))
    with pytest.raises(FormatError, match="relative directories inside the model"):
        d2s_runtime.load(saved)


@pytest.mark.parametrize("load", _both_loaders())
def test_unknown_op(saved, load):
    def rename_first_op(doc):
        doc["program"]["block"]["ops"][0]["type"] = "os_system"
    _edit_json(saved, "program.json", rename_first_op)
    with pytest.raises(FormatError, match="unknown op type 'os_system'"):
        load(saved)


@pytest.mark.parametrize("value,message", [([1.0, 2.0], r"holds 2 element\(s\) but its shape \[\] needs 1"),
                                           ("abc", "cannot be read as float32")])
@pytest.mark.parametrize("load", _both_loaders())
def test_constant_whose_value_disagrees_with_its_shape(saved, load, value, message):
    def edit_constant(doc):
        ops = doc["program"]["block"]["ops"]
        const = next(op for op in ops if op["type"] == "constant" and op["attrs"]["shape"] == [])
        const["attrs"]["value"] = value
    _edit_json(saved, "program.json", edit_constant)
    with pytest.raises(FormatError, match=message):
        load(saved)


class _Evil:
    """Unpickling this would create a file: proof that the loader ran code."""

    marker = None

    def __reduce__(self):
        return (open, (_Evil.marker, "w"))


@pytest.mark.parametrize("name", ["params.npz", "constants.npz"])
def test_npz_holding_a_pickled_object_is_refused_unread(tmp_path, saved, name):
    _Evil.marker = str(tmp_path / "pwned")
    prog_doc = json.load(open(os.path.join(saved, "program.json")))["program"]
    names = prog_doc["params"] if name == "params.npz" else prog_doc["params"][:1]
    arrays = {n: np.array([_Evil()], dtype=object) for n in names}
    np.savez(os.path.join(saved, name), **arrays)
    if name == "constants.npz":  # make the program read a constant from the file
        def add_constant(doc):
            doc["program"]["constants"] = names
            doc["program"]["params"] = [p for p in doc["program"]["params"] if p not in names]
        _edit_json(saved, "program.json", add_constant)
    for load in _both_loaders():
        with pytest.raises(FormatError):
            load(saved)
    assert not os.path.exists(_Evil.marker)


@pytest.mark.parametrize("load", _both_loaders())
def test_wrong_input_shape_dtype_count_and_name(saved, load):
    model = load(saved)
    good = RNG.standard_normal((4, 3)).astype("float32")
    model(good)
    with pytest.raises(InputError, match=r"input 'x' must have shape \[\?, 3\].*got \[4, 5\]"):
        model(np.zeros((4, 5), "float32"))
    with pytest.raises(InputError, match=r"input 'x' must have shape \[\?, 3\].*got \[3\]"):
        model(np.zeros(3, "float32"))
    with pytest.raises(InputError, match=r"input 'x' must be float32 \[\?, 3\], got int64"):
        model(np.zeros((4, 3), "int64"))
    with pytest.raises(InputError, match="takes 1 input"):
        model(good, good)
    with pytest.raises(InputError, match="no input named 'y'"):
        model(y=good)
    with pytest.raises(InputError, match=r"missing input\(s\) \['x'\]"):
        model()


def test_a_wrong_dtype_never_reaches_a_kernel(tmp_path):
    path = str(tmp_path / "cf")
    d2s.jit.save(affine, path, input_spec=[InputSpec([None], name="x")])
    model = d2s_runtime.load(path)
    np.testing.assert_allclose(model(np.ones(3, "float32")), np.full(3, 4.0, "float32"))
    with pytest.raises(InputError, match="got bool"):
        model(np.ones(3, bool))
    np.testing.assert_allclose(model(np.ones(3, "float64")), np.full(3, 4.0))  # same kind: cast
