"""memory_plan: buffer reuse planned by last use, honoured by the executor, peaks reported."""
import numpy as np

import d2s
from d2s.static import build_program
from d2s_runtime import Executor
from d2s_runtime.executor import OUT
from d2s_runtime.passes import memory_plan, planned_peak

from _pass_helpers import assert_same_outputs, check_pure

X = d2s.tensor(np.zeros((64, 64), "float32"))


def _chain(x):
    a = d2s.exp(x)
    b = a * 2.0
    c = d2s.tanh(b) + a
    d = c @ c
    e = d * d
    return d2s.sin(e) - 1.0


def test_elementwise_chain_reuses_buffers_and_lowers_the_peak():
    p = build_program(_chain, X)
    q = check_pure(memory_plan, p)
    plan = q.annotations["memory_plan"]
    assert plan["reuse"]
    for receiver, donor in plan["reuse"].items():
        assert q.block.vars[receiver].type == q.block.vars[donor].type
    assert plan["planned_peak_bytes"] <= plan["freed_peak_bytes"] < plan["no_reuse_peak_bytes"]
    assert planned_peak(q)["planned_peak_bytes"] == plan["planned_peak_bytes"]
    assert_same_outputs(p, q)


def test_executor_writes_into_planned_buffers():
    q = memory_plan(build_program(_chain, X))
    ex = Executor(q)
    assert any(step.kind == OUT for step in ex._main.steps)
    x = np.random.default_rng(0).standard_normal((64, 64)).astype("float32")
    first = ex.run(x)[0].copy()
    for _ in range(2):  # repeated runs must not see buffers of earlier runs
        np.testing.assert_allclose(ex.run(x)[0], first)


def test_buffers_seen_through_views_are_not_reused_early():
    def f(x):
        a = d2s.exp(x)
        v = a.T  # a view of a's buffer, alive after a's last direct use
        b = d2s.tanh(x) * 2.0
        c = b + 1.0
        return v + c

    p = build_program(f, X)
    q = memory_plan(p)
    a = next(op.outputs[0] for op in p.block.ops if op.type == "exp")
    reuse = q.annotations["memory_plan"]["reuse"]
    assert reuse, "b -> c may reuse b's buffer in place"
    assert a not in reuse.values(), "a's buffer is still seen through its transpose"
    assert_same_outputs(p, q)
