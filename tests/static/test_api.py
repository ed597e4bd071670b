"""The public contract of API.md §5 (programs): Program and Op structure, build_program, verify,
d2s.passes.optimize and d2s_runtime.Executor."""
import numpy as np
import pytest

import d2s

from api_helpers import branchy, close


RNG = np.random.default_rng(0)


class TestPrograms:
    def prog(self):
        return d2s.static.build_program(lambda x, w: d2s.tanh(x @ w).sum(axis=1),
                                        d2s.jit.InputSpec([None, 3]), d2s.jit.InputSpec([3, 2]))

    def test_program_structure(self):
        p = self.prog()
        gb = p.global_block()
        assert gb is p.blocks[0]
        assert [op.type for op in gb.ops] == ["matmul", "tanh", "reduce_sum"] or len(gb.ops) == 3
        assert len(p.inputs) == 2 and len(p.outputs) == 1 and list(p.params) == []
        op = gb.ops[0]
        assert list(op.inputs) == list(p.inputs) and len(op.outputs) == 1 and isinstance(op.attrs, dict)
        assert isinstance(gb.vars, dict) and set(p.inputs) <= set(gb.vars)
        text = str(p)
        assert "matmul" in text and "tanh" in text
        assert p.to_dot().lstrip().startswith("digraph")
        p.verify()
        q = p.clone()
        assert str(q) == text
        q.global_block().ops.pop()
        assert len(p.global_block().ops) == 3

    def test_build_program_accepts_tensors_and_specs(self):
        f = lambda x: x * 2.0  # noqa: E731
        for arg in (d2s.ones(2, 3), d2s.jit.InputSpec([2, 3])):
            assert len(d2s.static.build_program(f, arg).global_block().ops) >= 1

    def test_build_program_refuses_python_control_flow_on_tensors(self):
        with pytest.raises(Exception, match="(?i)cond|while|symbolic|concrete"):
            d2s.static.build_program(branchy, d2s.jit.InputSpec([None, 3]))

    def test_verify_raises_on_a_malformed_program(self):
        p = self.prog()
        q = p.clone()
        op = q.global_block().ops[1]
        op.inputs[0] = "no_such_var"
        with pytest.raises(Exception):
            q.verify()

    def test_optimize(self):
        p = d2s.static.build_program(lambda a: (a * 1.0 + 0.0) * (a * 1.0 + 0.0), d2s.jit.InputSpec([None, 3]))
        n = len(p.global_block().ops)
        q = d2s.passes.optimize(p)
        assert len(q.global_block().ops) < n and len(p.global_block().ops) == n
        import d2s_runtime
        a = RNG.standard_normal((4, 3)).astype(np.float32)
        close(d2s_runtime.Executor(q).run(a)[0], a * a)
        assert len(d2s.passes.optimize(p, passes=["dce"]).global_block().ops) <= n

    def test_executor(self):
        import d2s_runtime
        p = self.prog()
        ex = d2s_runtime.Executor(p, device="cpu", parallel=False)
        for n in (1, 4):
            x = RNG.standard_normal((n, 3)).astype(np.float32)
            w = RNG.standard_normal((3, 2)).astype(np.float32)
            close(ex.run(x, w)[0], np.tanh(x @ w).sum(1), rtol=1e-5)
        close(d2s_runtime.Executor(p, parallel=True).run(x, w)[0], np.tanh(x @ w).sum(1), rtol=1e-5)
