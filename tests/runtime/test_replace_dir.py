"""A saved model is replaced and read as a whole (runtime/d2s_runtime/replace_dir.py): loads racing
saves in a loop each get one whole model (program, params and methods of one save); a save killed
at any file-system call leaves the earlier model or the new one at the path, never nothing or a
mix, and its leftovers are removed by the next save; a save refuses what the loader would refuse,
keeping the earlier model."""
import builtins
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import d2s
import d2s_runtime
from d2s.jit import InputSpec
from d2s_runtime import replace_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
X = np.ones(3, "float32")


class Scaled(d2s.nn.Module):
    """Two saves of this class differ in program (``mul``) and in parameter (``p``), so a load
    mixing one save's program with the other's parameter gives a value neither gives."""

    def __init__(self, p, mul):
        super().__init__()
        self.p = d2s.nn.Parameter(d2s.tensor(np.full(3, p, "float32")))
        self.mul = mul

    def forward(self, x):
        return x * self.p + 1.0 if self.mul else x + self.p * 2.0

    @d2s.jit.to_static
    def shift(self, x):
        return x - 100.0 if self.mul else x - 200.0


def _save(model, path):
    d2s.jit.save(model, path, input_spec={"forward": [InputSpec([3], name="x")], "shift": [InputSpec([3], name="x")]})


def _models():
    return Scaled(3.0, True), Scaled(5.0, False)  # forward(1) = 4 | 11; shift(1) = -99 | -199


WHOLE = {(4.0, -99.0), (11.0, -199.0)}


@pytest.fixture
def quick_dir(tmp_path, monkeypatch):
    """A directory in memory where there is one (the loops below save a hundred times), with
    fsync made free: it still counts as a call where the killed saves count calls."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    if not os.path.isdir("/dev/shm"):
        return tmp_path
    import tempfile
    d = tempfile.mkdtemp(dir="/dev/shm")
    yield __import__("pathlib").Path(d)
    shutil.rmtree(d, ignore_errors=True)


def _whole_read(path):
    """(forward(1), shift(1)) of the save at ``path``, computed from its files alone (no executor
    is prepared: reading is what races)."""
    from d2s_runtime.serialize import read_model
    program, params, meta, methods = read_model(path)
    (p,) = params.values()
    mul = any(op.type == "mul" and op.inputs[0] == program.inputs[0] for op in program.block.ops)
    forward = p[0] + 1.0 if mul else 1.0 + p[0] * 2.0
    (c,) = [op.attrs["value"] for op in methods["shift"][0].block.ops if op.type == "constant"]
    return float(forward), 1.0 - c


def _prepared(tmp_path):
    """Both models saved once, to be copied into place again and again."""
    a, b = _models()
    _save(d2s.jit.to_static(a), tmp_path / "a")
    _save(d2s.jit.to_static(b), tmp_path / "b")
    return tmp_path / "a", tmp_path / "b"


SAVER = r"""
import os, shutil, sys, time
sys.path[:0] = [sys.argv[4], os.path.join(sys.argv[4], "runtime")]
from d2s_runtime import replace_dir
target, a, b = sys.argv[1:4]
k = 0
while not os.path.exists(target + ".stop"):
    tmp = replace_dir.sibling(target, "save")
    shutil.copytree((a, b)[k % 2], tmp, dirs_exist_ok=True)
    replace_dir.replace(tmp, target)
    k += 1
    time.sleep(0.002)  # a save every few ms: far more often than any trainer checkpoints
print(k)
"""


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_loads_racing_saves_each_read_one_whole_model(quick_dir, exchange):
    tmp_path = quick_dir
    a, b = _prepared(tmp_path)
    assert _whole_read(str(a)) == (4.0, -99.0) and _whole_read(str(b)) == (11.0, -199.0)
    target = tmp_path / "model"
    shutil.copytree(a, target)
    env = dict(os.environ)
    script = SAVER if exchange else SAVER.replace("from d2s_runtime import replace_dir",
                                                  "from d2s_runtime import replace_dir; replace_dir._RENAMEAT2 = None")
    saver = subprocess.Popen([sys.executable, "-c", script, str(target), str(a), str(b), ROOT], env=env,
                             stdout=subprocess.PIPE, text=True)
    seen = set()
    try:
        for _ in range(1500 if exchange else 600):
            seen.add(_whole_read(str(target)))
    finally:
        (tmp_path / "model.stop").touch()
        saves = int(saver.communicate(timeout=60)[0])
    assert seen <= WHOLE, f"loads mixed two saves: {seen - WHOLE}"
    assert saves > 100 and len(seen) == 2  # the race really ran both ways
    # and through d2s.jit.load, which reads the same way
    loaded = d2s.jit.load(str(target))
    assert (float(loaded(X).numpy()[0]), float(loaded.shift(X).numpy()[0])) in WHOLE


_FS_CALLS = ("open", "mkdir", "rename", "replace", "rmdir", "unlink", "fsync", "link", "write", "makedirs")


def _save_dying_at(n, model, path, exchange):
    """In a forked child: save ``model`` at ``path``, exiting (as ``kill -9`` would) at the
    ``n``-th file-system call. The child's exit status: 9 if it died, 0 if the save finished."""
    pid = os.fork()
    if pid:
        return os.waitpid(pid, 0)[1] >> 8
    try:
        count = [0]

        def counted(fn):
            def call(*args, **kwargs):
                count[0] += 1
                if count[0] == n:
                    os._exit(9)
                return fn(*args, **kwargs)
            return call

        for name in _FS_CALLS:
            setattr(os, name, counted(getattr(os, name)))
        builtins.open = counted(builtins.open)
        if exchange and replace_dir._RENAMEAT2 is not None:
            replace_dir._RENAMEAT2 = counted(replace_dir._RENAMEAT2)
        else:
            replace_dir._RENAMEAT2 = None
        _save(model, path)
    except BaseException:  # noqa: BLE001 - the child reports through its exit status only
        os._exit(3)
    os._exit(0)


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_a_save_killed_at_every_step_leaves_one_whole_model(quick_dir, exchange):
    tmp_path = quick_dir
    old, new = (d2s.jit.to_static(m) for m in _models())
    for m in (old, new):  # programs built before the children fork
        m.forward.get_program(InputSpec([3], name="x"))
        m.shift.get_program(InputSpec([3], name="x"))
    target = str(tmp_path / "model")
    _save(old, target)
    n, outcomes = 0, set()
    while True:
        n += 1
        status = _save_dying_at(n, new, target, exchange)
        assert status in (0, 9), f"the save raised in the child (status {status}) at call {n}"
        m = d2s_runtime.load(target)  # recovers a model a killed two-rename swap moved aside
        got = (float(m(X)[0]), float(m.shift(X)[0]))
        assert got in WHOLE, f"killed at call {n}: the path holds {got}"
        outcomes.add(got)
        if status == 0:
            break
        _save(old, target)  # back to the old model for the next step (this save also cleans up)
        assert not [f for f in os.listdir(tmp_path) if ".d2s-" in f], f"litter after the save following call {n}"
    assert n > 10 and outcomes == WHOLE  # every step was tried, and both models were seen
    _save(new, target)
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_leftovers_of_a_live_process_are_kept(tmp_path):
    """Another process saving the same path right now owns its sibling: only a dead process's
    leftovers are removed."""
    target = tmp_path / "model"
    mine = replace_dir.sibling(target, "save")  # this process is alive
    dead = tmp_path / ".model.d2s-save-999999999-abcdef"
    dead.mkdir()
    replace_dir.remove_leftovers(target)
    assert os.path.isdir(mine) and not dead.exists()


@pytest.mark.parametrize("spec, fn, what", [
    ([InputSpec([3], name="x\x1b[31m")], lambda x: x * 2.0, "control character"),
    ([InputSpec([3], name="x")], lambda x: {"a\u202eb": x * 2.0}, "control character"),
    # (a float tensor: an integer one refuses a bound its dtype cannot hold, as PyTorch does)
    ([InputSpec([3], name="x")], lambda x: d2s.clip(x, 0, 10 ** 25), "26 digits"),
    ([InputSpec([3], name="x")], "nested", "nested deeper than 128"),
])
def test_a_save_refuses_what_its_loader_would_refuse_keeping_the_earlier_model(tmp_path, spec, fn, what):
    target = str(tmp_path / "model")
    _save(d2s.jit.to_static(_models()[0]), target)
    if fn == "nested":
        def fn(x):
            out = x
            for _ in range(140):
                out = (out,)
            return out
    with pytest.raises(ValueError, match=what):
        d2s.jit.save(d2s.jit.to_static(fn), target, input_spec=spec)
    m = d2s_runtime.load(target)
    assert (float(m(X)[0]), float(m.shift(X)[0])) == (4.0, -99.0)
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_a_model_loaded_once_keeps_its_methods_from_that_save(tmp_path):
    """``d2s_runtime.load`` reads every method with the model: a later save does not change what
    ``m.shift`` computes."""
    target = str(tmp_path / "model")
    old, new = _models()
    _save(d2s.jit.to_static(old), target)
    m = d2s_runtime.load(target)
    _save(d2s.jit.to_static(new), target)
    assert (float(m(X)[0]), float(m.shift(X)[0])) == (4.0, -99.0)
    script = textwrap.dedent("""
        import sys, numpy as np, d2s_runtime
        m = d2s_runtime.load(sys.argv[1])
        print(float(m(np.ones(3, "float32"))[0]), float(m.shift(np.ones(3, "float32"))[0]))
    """)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "runtime"))
    out = subprocess.run([sys.executable, "-c", script, target], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.split() == ["11.0", "-199.0"], out.stderr
