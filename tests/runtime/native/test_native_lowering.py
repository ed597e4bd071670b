"""Lowering a program for the native backend (runtime/d2s_runtime/native/lower.py): what is not
supported raises NativeUnsupported with a one-line reason naming the op and its output var;
the cache key is stable; untrusted var names and attrs never reach the generated source; and
d2s_runtime imports and runs without numba. Lowering needs no numba; the tests that compile
skip where it is absent."""
import builtins
import os
import subprocess
import sys

import numpy as np
import pytest

import d2s
from d2s.static import InputSpec, build_program
from d2s_runtime import Executor, native
from hostile_programs import PAYLOAD, hostile_program

from .helpers import check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_an_op_without_lowering_names_itself_in_one_line():
    prog = build_program(lambda x: d2s.one_hot(x + 1, 4) + 1, InputSpec([2, 3], "int64"))
    out = [op.outputs[0] for op in prog.block.ops if op.type == "one_hot"][0]
    with pytest.raises(native.NativeUnsupported) as e:
        native.lower_program(prog)
    msg = str(e.value)
    assert "\n" not in msg and "one_hot" in msg and out in msg


def test_unsupported_dtype_and_attrs_are_reasons_not_errors():
    # integer matmul: numba's np.dot is for floats
    prog = build_program(lambda a, b: a @ b, InputSpec([2, 2], "int64"), InputSpec([2, 2], "int64"))
    with pytest.raises(native.NativeUnsupported, match="matmul.*integer"):
        native.lower_program(prog)
    # an attr the lowering does not know
    prog = build_program(lambda x: x.sum(axis=0), InputSpec([2, 3]))
    prog.block.ops[-1].attrs["surprise"] = 1
    with pytest.raises(native.NativeUnsupported, match="reduce_sum.*attrs"):
        native.lower_program(prog)


def test_the_key_is_stable_and_follows_structure_and_dtypes():
    def f(x):
        return d2s.tanh(x) * 2.0

    k1 = native.lower_program(build_program(f, InputSpec([4]))).key
    k2 = native.lower_program(build_program(f, InputSpec([4]))).key
    k3 = native.lower_program(build_program(f, InputSpec([4], "float64"))).key
    k4 = native.lower_program(build_program(lambda x: d2s.tanh(x) * 3.0, InputSpec([4]))).key
    assert k1 == k2 != k3
    assert k4 == k1  # literals are arguments, not source: programs differing only in them share code


def test_untrusted_names_and_attrs_never_reach_the_source(tmp_path):
    p = hostile_program()
    low = native.lower_program(p)
    for piece in ("__import__", "PWNED", "builtins", "#"):
        assert piece not in low.source
    # attrs holding code: a reduction's axes and keepdims, scan's structure attrs, are refused
    p.block.ops[2].blocks["body"].ops[0].attrs["keepdims"] = PAYLOAD
    with pytest.raises(native.NativeUnsupported, match="keepdims"):
        native.lower_program(p)
    p.block.ops[2].blocks["body"].ops[0].attrs["keepdims"] = False
    p.block.ops[2].blocks["body"].ops[0].attrs["axes"] = [PAYLOAD]
    with pytest.raises(native.NativeUnsupported, match="axis must be an int"):
        native.lower_program(p)
    p.block.ops[2].blocks["body"].ops[0].attrs["axes"] = None
    p.block.ops[1].attrs["value"] = PAYLOAD  # a literal is an argument value, never source
    with pytest.raises((native.NativeUnsupported, ValueError, TypeError)):
        native.lower_program(p)
    p.block.ops[1].attrs["value"] = 0
    if native.available()[0]:
        fn = native.compile_lowered(native.lower_program(p), cache_dir=str(tmp_path))
        xv = np.array([1.0, -2.0, 0.5], "float32")
        check(p, fn, [(xv, np.array(3)), (xv, np.array(0))])
    assert not hasattr(builtins, "D2S_PWNED")


def test_runtime_imports_and_runs_without_numba():
    code = r"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "numba" or name.startswith("numba.") or name.startswith("llvmlite"):
            raise ImportError("numba blocked for this test")
sys.meta_path.insert(0, Block())
import numpy as np
import d2s_runtime
from d2s_runtime import Executor, native
from d2s_runtime.ir import Op, Program
from d2s_runtime.ops import TensorType
p = Program()
p.block.add_var("x", TensorType((2,), "float32"))
p.block.add_var("y", TensorType((2,), "float32"))
p.block.ops = [Op("tanh", ["x"], ["y"])]
p.block.inputs = p.inputs = ["x"]
p.outputs = p.block.outputs = ["y"]
print(Executor(p).run(np.zeros(2, "float32"))[0].tolist())
ok, why = native.available()
assert not ok and why, (ok, why)
assert native.lower_program(p).source  # lowering is pure Python
assert "numba" not in sys.modules
print("ok")
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "runtime"), ROOT]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[0.0,", "0.0]", "ok"]


def test_lowering_does_not_import_numba():
    r = subprocess.run([sys.executable, "-c", "import sys; import d2s_runtime.native as n; from d2s_runtime.ir import "
                        "Program; assert 'numba' not in sys.modules; print('ok')"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "runtime"), ROOT])))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_executor_still_runs_a_program_whose_lowering_fails():
    # the fallback contract: NativeUnsupported is a reason; the Python backend runs the program
    prog = build_program(lambda x: d2s.one_hot(x, 4), InputSpec([2, 3], "int64"))
    with pytest.raises(native.NativeUnsupported):
        native.lower_program(prog)
    x = np.array([[0, 1, 2], [3, 3, 0]])
    np.testing.assert_array_equal(Executor(prog).run(x)[0], np.eye(4, dtype="int64")[x])
