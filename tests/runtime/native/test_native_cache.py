"""The native backend's disk cache (runtime/d2s_runtime/native/__init__.py): a second process
loads the compiled machine code instead of compiling (numba's own counters say so), and
processes compiling the same program at once do not break each other."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = r"""
import json, sys
import numpy as np
import d2s
from d2s.static import InputSpec, build_program
from d2s_runtime import native

def f(x, n):
    def body(i, x):
        return i + 1, d2s.tanh(x) * 0.5 + x.sum() * 0.01
    return d2s.while_loop(lambda i, x: i < n, body, (d2s.tensor(0), x))[1]

prog = build_program(f, InputSpec([8]), InputSpec([], "int64"))
low = native.lower_program(prog)
cached = native.is_cached(low, cache_dir=sys.argv[1])
fn = native.compile_lowered(low, cache_dir=sys.argv[1])
out = fn(np.linspace(-1, 1, 8).astype("float32"), np.array(5))[0]
st = fn.dispatcher.stats
print(json.dumps({"cached_before": cached, "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values()),
                  "out": out.tolist(), "key": low.key}))
"""


def _run(cache_dir, n=1):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(cache_dir)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(n)]
    out = []
    for p in procs:
        so, se = p.communicate(timeout=300)
        assert p.returncode == 0, se
        out.append(json.loads(so.strip().splitlines()[-1]))
    return out


def test_a_second_process_loads_the_machine_code_from_disk(tmp_path):
    # two processes compile at once into an empty cache: both work, with the same result
    first = _run(tmp_path, n=2)
    assert not first[0]["cached_before"] and first[0]["out"] == first[1]["out"]
    (again,) = _run(tmp_path)
    assert again["cached_before"] and again["hits"] == 1 and again["misses"] == 0
    assert again["out"] == first[0]["out"] and again["key"] == first[0]["key"]
    assert os.path.exists(tmp_path / f"d2s_native_{again['key']}.py")
