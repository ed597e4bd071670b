"""Test files live in subfolders mirroring the package (tests/jit/ for d2s/jit/, tests/runtime/passes/
for d2s_runtime/passes/, ...); the shared helpers (jit_helpers, convert_helpers, references, fuzz,
trace_corpus, conformance/, ...) stay here and are imported by plain name, so this folder goes on
sys.path. It is appended, not prepended: the subfolders are packages named like real ones (onnx, trace),
and an import of those must still find the real one."""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.append(_HERE)

# the ``backend`` fixture (python / native executor backends), for the suites run on both
pytest_plugins = ["backend_fixture"]
