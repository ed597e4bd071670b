"""Functions whose source cannot be read: eager with a warning by default, an error with
``fallback=False`` or ``d2s.jit.config.strict``; ``is_static`` and the repr tell which."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.jit import SourceUnavailableError, config

X = [d2s.tensor([1.0, -2.0, 3.0]), d2s.tensor([0.5]), d2s.zeros(2)]


def _exec_function():
    ns = {}
    exec("def made(x):\n    return x * 3 + 1\n", ns)  # no file: inspect cannot read it
    return ns["made"]


def in_a_file(x):
    if x.sum() > 0:
        return x * 3
    return x - 1


@pytest.fixture
def strict_off():
    saved = config.strict
    yield
    config.strict = saved


def test_default_warns_and_runs_eagerly():
    fn = _exec_function()
    sf = d2s.jit.to_static(fn)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for x in X:
            np.testing.assert_allclose(sf(x).numpy(), fn(x).numpy())
    assert len([m for m in w if "not available" in str(m.message)]) == 1  # warned once
    assert sf.is_static is False
    assert "eager" in repr(sf) and "source unavailable" in repr(sf)
    assert sf.programs == []


# a lambda written in a file converts (its source is found by line and column); one made by
# eval has no source
@pytest.mark.parametrize("make", [_exec_function, lambda: eval("lambda x: x + 1")])
def test_fallback_false_raises(make):
    with pytest.raises(SourceUnavailableError, match="fallback=False"):
        d2s.jit.to_static(make(), fallback=False)
    with pytest.raises(SourceUnavailableError):
        d2s.jit.to_static(fallback=False)(make())


def test_strict_config_raises(strict_off):
    config.strict = True
    with pytest.raises(SourceUnavailableError, match="strict"):
        d2s.jit.to_static(_exec_function())
    # a StaticFunction made before strict was set refuses at its call
    config.strict = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sf = d2s.jit.to_static(_exec_function())
    config.strict = True
    with pytest.raises(SourceUnavailableError):
        sf(X[0])


def test_readable_source_is_static(strict_off):
    config.strict = True
    sf = d2s.jit.to_static(in_a_file, fallback=False)
    for x in X:
        np.testing.assert_allclose(sf(x).numpy(), in_a_file(x).numpy())
    assert sf.is_static
    assert "static" in repr(sf) and f"{len(sf.programs)} programs" in repr(sf)


def test_disabled_conversion_is_not_static():
    sf = d2s.jit.to_static(in_a_file)
    d2s.jit.enable_to_static(False)
    try:
        assert sf.is_static is False
        assert "disabled" in repr(sf)
    finally:
        d2s.jit.enable_to_static(True)
    assert sf.is_static
