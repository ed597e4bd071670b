"""The public contract of API.md §4 (``d2s.onnx.export``): control flow exported as ``If``."""
import os

import pytest

import d2s

from api_helpers import branchy


class TestExport:
    def test_onnx_export(self, tmp_path):
        path = str(tmp_path / "m.onnx")
        d2s.onnx.export(branchy, path, input_spec=[d2s.jit.InputSpec([None, 3])])
        assert os.path.getsize(path) > 0
        onnx = pytest.importorskip("onnx")
        model = onnx.load(path)
        onnx.checker.check_model(model)
        assert "If" in [n.op_type for n in model.graph.node]
