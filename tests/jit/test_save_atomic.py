"""``d2s.jit.save`` loses nothing: a save that fails at any step leaves the earlier model
loading bit-exactly, and a directory holding other files is never clobbered."""
import contextlib
import errno
import json
import os

import numpy as np
import pytest

import d2s
import d2s_runtime
from d2s.jit import InputSpec
from d2s_runtime import serialize

X = np.linspace(-2.0, 2.0, 8, dtype="float32").reshape(2, 4)
SPEC = [InputSpec([None, 4], name="x")]

d2s.manual_seed(3)
LIN = d2s.nn.Linear(4, 3)


@d2s.jit.to_static
def model_fn(x):
    h = LIN(x)
    if h.sum() > 0:
        h = h * 2.0
    return h


class TwoMethods(d2s.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = d2s.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)

    @d2s.jit.to_static
    def double(self, x):
        return x * 2.0


def _snapshot(path):
    """What loading ``path`` gives: outputs and param bytes."""
    model = d2s_runtime.load(path)
    out = np.asarray(model(X))
    return out.tobytes(), {k: v.tobytes() for k, v in model.params.items()}


def _new_weights():
    LIN.weight._data[...] = LIN.weight._data * -1.5 + 0.25  # in place: the cached program reads it


class _Faults:
    """Counts calls of the file-system functions a save uses; the ``fail_at``-th raises."""

    def __init__(self, fail_at):
        self.fail_at, self.calls = fail_at, 0

    def wrap(self, fn):
        def faulty(*args, **kwargs):
            self.calls += 1
            if self.calls == self.fail_at:
                raise OSError(errno.ENOSPC, f"injected fault #{self.calls} in {fn.__name__}")
            return fn(*args, **kwargs)
        return faulty

    @contextlib.contextmanager
    def installed(self, monkeypatch):
        with monkeypatch.context() as m:
            for mod, name in [(os, "open"), (os, "fsync"), (os, "rename"), (os, "replace"), (os, "mkdir"),
                              (os, "makedirs"), (np, "savez"), (json, "dump")]:
                m.setattr(mod, name, self.wrap(getattr(mod, name)))
            m.setattr(serialize, "open", self.wrap(open), raising=False)
            yield


@pytest.mark.parametrize("first", ["model", "empty"])
def test_a_save_failing_at_every_step_keeps_the_old_model(tmp_path, monkeypatch, first):
    path = str(tmp_path / "m")
    if first == "model":
        d2s.jit.save(model_fn, path, input_spec=SPEC)
        current = _snapshot(path)
    else:
        os.mkdir(path)
        current = None
    _new_weights()
    want = np.asarray(model_fn(d2s.tensor(X)).numpy())
    failures = 0
    for fail_at in range(1, 200):
        faults = _Faults(fail_at)
        try:
            with faults.installed(monkeypatch):
                d2s.jit.save(model_fn, path, input_spec=SPEC)
        except OSError as e:
            assert "injected fault" in str(e)
            failures += 1
            if current is not None:
                assert _snapshot(path) == current, f"fault #{fail_at} changed the saved model"
            else:
                assert os.listdir(path) == [], f"fault #{fail_at} left files in the empty directory"
            assert sorted(os.listdir(tmp_path)) == ["m"], f"fault #{fail_at} left temporary files behind"
            continue
        # saved: either the fault was never reached, or it was one the save may shrug off
        # (makedirs of an existing parent, fsync of a directory): the new model, complete
        current = _snapshot(path)
        np.testing.assert_array_equal(np.frombuffer(current[0], "float32").reshape(want.shape), want)
        assert sorted(os.listdir(tmp_path)) == ["m"]
        if faults.calls < fail_at:
            break
    else:
        pytest.fail("the save never completed")
    assert failures >= 8  # every write, fsync and rename of the save was made to fail once


def test_a_directory_with_other_files_is_refused_unless_overwrite(tmp_path):
    path = tmp_path / "work"
    (path / "methods").mkdir(parents=True)
    (path / "methods" / "notes.txt").write_text("mine")
    (path / "data.csv").write_text("1,2")
    with pytest.raises(FileExistsError, match="not a saved d2s model.*overwrite=True"):
        d2s.jit.save(model_fn, str(path), input_spec=SPEC)
    assert sorted(os.listdir(path)) == ["data.csv", "methods"]
    d2s.jit.save(model_fn, str(path), input_spec=SPEC, overwrite=True)
    assert (path / "methods" / "notes.txt").read_text() == "mine" and (path / "data.csv").read_text() == "1,2"
    np.testing.assert_array_equal(d2s_runtime.load(str(path))(X), model_fn(d2s.tensor(X)).numpy())
    # the directory still holds a user's files: a second save needs overwrite=True again
    with pytest.raises(FileExistsError):
        d2s.jit.save(model_fn, str(path), input_spec=SPEC)
    assert sorted(os.listdir(tmp_path)) == ["work"]


def test_a_file_at_the_path_is_refused(tmp_path):
    p = tmp_path / "model"
    p.write_text("not a directory")
    with pytest.raises(FileExistsError, match="is a file"):
        d2s.jit.save(model_fn, str(p), input_spec=SPEC)
    assert p.read_text() == "not a directory"


def test_saving_over_an_earlier_model_replaces_it_whole(tmp_path):
    path = str(tmp_path / "m")
    m = d2s.jit.to_static(TwoMethods())
    d2s.jit.save(m, path, input_spec={"forward": SPEC, "double": SPEC})
    assert os.path.isdir(os.path.join(path, "methods", "double"))
    np.testing.assert_array_equal(d2s_runtime.load(path).double(X), X * 2.0)
    d2s.jit.save(model_fn, path, input_spec=SPEC)  # an earlier save's directory: no overwrite needed
    assert sorted(os.listdir(path)) == ["constants.npz", "meta.json", "params.npz", "program.json"]
    np.testing.assert_array_equal(d2s_runtime.load(path)(X), model_fn(d2s.tensor(X)).numpy())
    assert sorted(os.listdir(tmp_path)) == ["m"]


def test_parents_are_created_and_the_result_loads(tmp_path):
    path = str(tmp_path / "a" / "b" / "m")
    assert d2s.jit.save(model_fn, path, input_spec=SPEC) == path
    np.testing.assert_array_equal(d2s.jit.load(path)(d2s.tensor(X)).numpy(), model_fn(d2s.tensor(X)).numpy())


def test_the_saved_directory_gets_plain_mkdir_permissions(tmp_path):
    (tmp_path / "plain").mkdir()
    path = str(tmp_path / "m")
    d2s.jit.save(model_fn, path, input_spec=SPEC)
    assert os.stat(path).st_mode == os.stat(tmp_path / "plain").st_mode
    d2s.jit.save(model_fn, path, input_spec=SPEC)  # replacing keeps them too
    assert os.stat(path).st_mode == os.stat(tmp_path / "plain").st_mode
