"""to_static(backend=...), d2s.jit.config.backend, StaticFunction.backend_report and the
backend of loaded models, with a stand-in native compiler (tests/native_fake.py): converted
calls return what eager calls return on every tier, before and after the native swap."""
import re

import numpy as np
import pytest

import d2s
import d2s_runtime
from d2s_runtime import tiers

from native_fake import FakeNative, install


def _loop(x, n):
    s = d2s.zeros_like(x)
    i = 0
    while i < n:
        if x.sum() > 0:
            s = s + x * 0.5
        else:
            s = s - x
        x = d2s.tanh(x) - 0.1
        i += 1
    return s


def _inputs():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(8).astype("float32") for _ in range(3)] + [np.full(8, -1, "float32")]
    return [(d2s.tensor(x), d2s.tensor(n)) for x in xs for n in (0, 3)]


def _same_as_eager(sf, calls=2):
    for x, n in _inputs():
        ref = _loop(x, n).numpy()
        for _ in range(calls):
            out = sf(x, n)
            assert isinstance(out, d2s.Tensor) and out.dtype == ref.dtype
            np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)


def test_default_backend_is_python():
    sf = d2s.jit.to_static(_loop)
    assert sf.backend == "python" and sf.backend_report() == "no program built yet"
    _same_as_eager(sf)
    assert sf.backend_report() == "python"


def test_native_backend_tiers_and_swaps(monkeypatch, tmp_path):
    fake = install(monkeypatch, FakeNative(), tmp_path)
    fake.release.clear()
    sf = d2s.jit.to_static(_loop, backend="native")
    x, n = _inputs()[1]
    sf(x, n)
    assert sf.backend_report() == "python (native pending: compiling in background)"
    _same_as_eager(sf)
    fake.release.set()
    assert sf.wait_native(30)
    assert sf.backend_report() == "native"
    calls = fake.calls
    _same_as_eager(sf)
    assert fake.calls > calls
    lines = sf.backend_report(per_program=True).splitlines()
    assert len(lines) == len(sf.programs) and all(line.endswith(": native") for line in lines)
    assert lines[0].startswith("(float32[8], int64[]")


def test_config_backend_and_method_and_module(monkeypatch, tmp_path):
    install(monkeypatch, FakeNative(), tmp_path)
    monkeypatch.setattr(d2s.jit.config, "backend", "auto")
    sf = d2s.jit.to_static(_loop)
    assert sf.backend == "auto"
    _same_as_eager(sf)
    assert sf.wait_native(30) is False  # ready: the next calls time both backends
    assert sf.backend_report() == "python (auto: native ready, timing both backends on the next calls)"
    for _ in range(3 + 2 * tiers.AUTO_TRIAL_CALLS):  # the check, then a block on each backend
        _same_as_eager(sf)
    assert re.match(r"(native|python) \(auto: measured .* \(median of 5 calls each: native .* ms, python .* ms\)\)$",
                    sf.backend_report())

    class Net(d2s.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = d2s.nn.Linear(8, 8)

        def forward(self, x):
            h = self.lin(x)
            if h.sum() > 0:
                h = d2s.tanh(h)
            return h

    net = d2s.jit.to_static(Net(), backend="native")
    assert net.forward.backend == "native"
    x = d2s.randn(2, 8)
    with d2s.no_grad():
        ref = net.forward.eager(x).numpy()
        np.testing.assert_allclose(net(x).numpy(), ref, rtol=1e-6)
        assert net.forward.wait_native(30)
        np.testing.assert_allclose(net(x).numpy(), ref, rtol=1e-6)
    assert net.forward.backend_report() == "native"
    # gradients still flow (the training path runs its own programs)
    net(x).sum().backward()
    assert net.lin.weight.grad is not None


def test_unsupported_program_reports_the_reason(monkeypatch, tmp_path):
    install(monkeypatch, FakeNative(refuse={"tanh"}), tmp_path)
    sf = d2s.jit.to_static(_loop, backend="native")
    _same_as_eager(sf)
    assert sf.backend_report() == "python (native unsupported: op 'tanh' has no native lowering)"


def test_bad_backend_is_refused():
    with pytest.raises(ValueError, match="backend must be"):
        d2s.jit.to_static(_loop, backend="fast")


def test_saved_model_loads_on_a_backend(monkeypatch, tmp_path):
    install(monkeypatch, FakeNative(), tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    sf = d2s.jit.to_static(_loop)
    x, n = _inputs()[1]
    d2s.jit.save(sf, str(tmp_path / "m"), input_spec=[x, n])
    model = d2s_runtime.load(str(tmp_path / "m"), backend="native")
    assert model.wait_native(30) and model.backend_report() == "native"
    # the disk cache has it now: a second load runs natively at once
    model2 = d2s_runtime.load(str(tmp_path / "m"), backend="native")
    assert model2.backend == "native"
    loaded = d2s.jit.load(str(tmp_path / "m"), backend="native")
    for x, n in _inputs():
        if n.item() != 3:
            continue
        ref = _loop(x, n).numpy()
        np.testing.assert_allclose(model(x.numpy(), n.numpy()), ref, rtol=1e-6)
        np.testing.assert_allclose(loaded(x, n).numpy(), ref, rtol=1e-6)
    assert loaded.backend_report() == "native"
    assert d2s_runtime.load(str(tmp_path / "m")).backend_report() == "python"


def test_synchronous_compiles_for_tests(monkeypatch, tmp_path):
    fake = install(monkeypatch, FakeNative(), tmp_path)
    monkeypatch.setattr(tiers, "synchronous", True)
    sf = d2s.jit.to_static(_loop, backend="native")
    x, n = _inputs()[0]
    sf(x, n)
    assert sf.backend_report() == "native" and fake.compiles == 1


def test_training_calls_report_their_programs_backends(monkeypatch, tmp_path):
    """A call that records autograd runs a training forward and a backward program, not the
    inference forward: backend_report() and wait_native() are about those, and gradients equal
    eager ones before and after the swap."""
    fake = install(monkeypatch, FakeNative(refuse=()), tmp_path)
    fake.release.clear()
    sf = d2s.jit.to_static(_loop, backend="native")
    rng = np.random.default_rng(3)

    def grads(fn, x0, n):
        x = d2s.tensor(x0, requires_grad=True)
        fn(x, d2s.tensor(n)).sum().backward()
        return x.grad.numpy()

    cases = [(rng.standard_normal(8).astype("float32"), n) for n in (1, 2, 5)]
    for x0, n in cases:
        np.testing.assert_allclose(grads(sf, x0, n), grads(_loop, x0, n), rtol=1e-6, atol=1e-6)
    report = sf.backend_report()
    assert report.startswith("training forward: python (native pending") and "; backward: python" in report
    fake.release.set()
    assert sf.wait_native(30)
    assert sf.backend_report() == "native"
    for x0, n in cases:
        np.testing.assert_allclose(grads(sf, x0, n), grads(_loop, x0, n), rtol=1e-6, atol=1e-6)
    with d2s.no_grad():  # then the inference forward runs too: still one word while all are native
        sf(d2s.tensor(cases[0][0]), d2s.tensor(2))
    assert sf.wait_native(30) and sf.backend_report() == "native"


def test_a_training_program_left_on_python_says_which(monkeypatch, tmp_path):
    """The backward has an op the native compiler refuses (stack_pop: only the backward pops the
    stacks the training forward pushes): the report names the backward."""
    install(monkeypatch, FakeNative(refuse=("stack_pop",)), tmp_path)
    sf = d2s.jit.to_static(_loop, backend="native")
    x = d2s.tensor(np.linspace(-1, 1, 8).astype("float32"), requires_grad=True)
    sf(x, d2s.tensor(3)).sum().backward()
    sf.wait_native(30)
    report = sf.backend_report()
    assert re.fullmatch(r"training forward: native; backward: python \(native unsupported: .*stack_pop.*\)", report), report
