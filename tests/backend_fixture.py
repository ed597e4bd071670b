"""The ``backend`` fixture: runs a test once per executor backend ("python", "native").

Use it on a module (``pytestmark = pytest.mark.usefixtures("backend")``) or a test. Under
"native", every Executor built without ``backend=`` (``d2s_runtime.tiers.default_backend``)
and every to_static program (``d2s.jit.config.backend``) asks for the native backend, and
compiles synchronously (``tiers.synchronous``), so the test's calls run natively from the
first one; compiled programs are shared by the whole session through one temporary disk cache
(a program met again, in another test or with other data, loads instead of compiling).
Programs the native backend does not support run on Python: after the test, each executor
must run natively or say why not in its ``backend_report()``. The "native" runs are skipped
where numba (or the native compiler) is missing; with ``D2S_TEST_FAKE_NATIVE=1`` they run on
the stand-in compiler of ``native_fake.py`` instead (the tiers exercised without numba).
"""
import os
import re

import pytest

import d2s
from d2s_runtime import tiers

_REPORTS = {}  # backend_report() line -> how many executors ended the test with it
_FALLBACK = re.compile(r"python \(native (unsupported|failed): \S.*\)$")


@pytest.fixture(scope="session")
def native_cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("native-cache"))


@pytest.fixture(params=["python", "native"])
def backend(request, monkeypatch):
    if request.param == "python":
        yield "python"
        return
    if os.environ.get("D2S_TEST_FAKE_NATIVE") == "1":
        from native_fake import FakeNative
        monkeypatch.setattr(tiers, "_AVAILABLE", [(FakeNative(), None)])
    module, reason = tiers.native_module()
    if module is None:
        pytest.skip(f"native backend unavailable: {reason}")
    monkeypatch.setenv("D2S_CACHE_DIR", request.getfixturevalue("native_cache_dir"))
    monkeypatch.setattr(tiers, "default_backend", "native")
    monkeypatch.setattr(tiers, "synchronous", True)
    monkeypatch.setattr(d2s.jit.config, "backend", "native")
    built = []
    init = tiers.NativeTier.__init__

    def recording_init(self, runner, base):
        init(self, runner, base)
        built.append(runner)  # (the ladder of an executor asking for the native backend)

    monkeypatch.setattr(tiers.NativeTier, "__init__", recording_init)
    yield "native"
    for ex in built:
        line = ex.backend_report()
        _REPORTS[line] = _REPORTS.get(line, 0) + 1
        assert line == "native" or _FALLBACK.match(line), f"a native executor without a reason: {line!r}"


def pytest_terminal_summary(terminalreporter):
    if not _REPORTS:
        return
    native = _REPORTS.get("native", 0)
    total = sum(_REPORTS.values())
    terminalreporter.write_line(f"native backend: {native} of {total} executors ran natively; fallbacks:")
    for line, n in sorted(_REPORTS.items(), key=lambda kv: -kv[1]):
        if line != "native":
            terminalreporter.write_line(f"  {n:4d}  {line}")
