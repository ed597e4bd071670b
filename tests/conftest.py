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


# ------------------------------------------------------------------ devices
# "strict" (tests/strict_device.py) is numpy behind an array type that behaves like cupy's: the
# GPU path checked without a GPU. It exists only in the tests: registered here, never by d2s.
import pytest  # noqa: E402

import strict_device  # noqa: E402

strict_device.register()

# The suites that run once per device (their modules use the ``device`` fixture);
# tests/test_gpu.py runs them on "gpu" with ``--devices=gpu``.
PARAMETRIZED_SUITES = ("tests/ops/test_ops.py", "tests/ops/test_ops_new.py", "tests/ops/test_logaddexp.py",
                       "tests/runtime/test_executor.py", "tests/static/test_control_flow.py",
                       "tests/jit/test_patterns_if.py", "tests/jit/test_patterns_loops.py",
                       "tests/jit/test_patterns_python.py", "tests/jit/test_save_load.py",
                       "tests/jit/test_api_save_load.py", "tests/jit/test_training.py")


def pytest_addoption(parser):
    parser.addoption("--devices", default="cpu,strict",
                     help="comma-separated devices the device-parametrized suites run on (default cpu,strict; "
                          "tests/test_gpu.py runs them with --devices=gpu)")


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        devices = [d for d in metafunc.config.getoption("devices").split(",") if d]
        metafunc.parametrize("device", devices, indirect=True)


@pytest.fixture
def device(request):
    """Each test that asks for it runs once per device of ``--devices``, with that device as
    d2s's default (tensors, creation ops and new parameters land there unless told otherwise)."""
    import d2s
    prev = d2s.set_default_device(request.param)
    try:
        yield request.param
    finally:
        d2s.set_default_device(prev)


# the ``backend`` fixture (python / native executor backends), for the suites run on both
pytest_plugins = ["backend_fixture"]


def pytest_configure(config):
    config.addinivalue_line("markers", "on_devices(*names): run the device-parametrized test only on these devices")


def pytest_collection_modifyitems(config, items):
    # native code runs on the CPU: a test parametrized over devices and backends runs the
    # native backend on "cpu" only (the strict device x native pair is not a case)
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        native_off_cpu = params.get("backend") == "native" and params.get("device", "cpu") != "cpu"
        # @pytest.mark.on_devices(...): a test of one device's own semantics (numpy's read-only
        # views, a device's copies) is a case only there
        only = item.get_closest_marker("on_devices")
        off_device = only is not None and "device" in params and params["device"] not in only.args
        (drop if native_off_cpu or off_device else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
