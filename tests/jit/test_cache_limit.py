"""d2s.jit.config.cache_size_limit: a warning naming the varying dims, then LRU eviction;
StaticFunction.cache_info()."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.jit import InputSpec, to_static


def affine(x, y):
    return x * 2.0 + y.sum()


def _call(sf, n, m=3):
    x = d2s.tensor(np.arange(n * m, dtype=np.float32).reshape(n, m))
    y = d2s.tensor(np.ones(n, np.float32))
    out = sf(x, y)
    np.testing.assert_allclose(out.numpy(), affine(x, y).numpy())
    return out


def test_default_limit_is_eight_like_pytorch():
    assert d2s.jit.config.cache_size_limit == 8


def test_warning_names_the_varying_dims_and_suggests_an_input_spec(monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "cache_size_limit", 3)
    sf = to_static(affine)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (1, 2, 3):
            _call(sf, n)
    with pytest.warns(UserWarning) as rec:
        _call(sf, 4)
        _call(sf, 5)  # warned once only
    msgs = [str(w.message) for w in rec if "cache_size_limit" in str(w.message)]
    assert len(msgs) == 1
    msg = msgs[0]
    assert "x: dim 0 took 1, 2, 3, 4" in msg and "y: dim 0" in msg
    assert "input_spec=[InputSpec([None, 3], 'float32'), InputSpec([None], 'float32')]" in msg
    assert rec[0].filename == __file__  # points at the user's call
    # the suggestion works: one program for every size
    spec_sf = to_static(affine, input_spec=[InputSpec([None, 3], "float32"), InputSpec([None], "float32")])
    for n in range(1, 7):
        _call(spec_sf, n)
    assert len(spec_sf.programs) == 1


def test_lru_eviction_keeps_the_most_recently_used(monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "cache_size_limit", 2)
    sf = to_static(affine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _call(sf, 1)
        _call(sf, 2)
        _call(sf, 1)  # 1 is now more recent than 2
        _call(sf, 3)  # evicts 2
        shapes = sorted(p.block.lookup(p.inputs[0]).type.shape[0] for p in sf.programs)
        assert shapes == [1, 3]
        info = sf.cache_info()
        assert (info.hits, info.misses, info.size, info.limit, info.evictions) == (1, 3, 2, 2, 1)
        _call(sf, 2)  # built again, evicting 1
        assert sf.cache_info().misses == 4 and sf.cache_info().evictions == 2
        assert sorted(p.block.lookup(p.inputs[0]).type.shape[0] for p in sf.programs) == [2, 3]


def test_python_values_that_vary_are_named_too(monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "cache_size_limit", 2)

    def scaled(x, k):
        return x * k

    sf = to_static(scaled)
    with pytest.warns(UserWarning, match="non-tensor"):
        for k in range(4):
            np.testing.assert_allclose(sf(d2s.ones(2), k).numpy(), [k, k])
    assert len(sf.programs) == 2


def test_none_means_unbounded_and_cache_info_counts(monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "cache_size_limit", None)
    sf = to_static(affine)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 12):
            _call(sf, n)
        for n in range(1, 12):
            _call(sf, n)
    info = sf.cache_info()
    assert info == (11, 11, 11, None, 0)


def test_module_forward_has_its_own_bounded_cache(monkeypatch):
    monkeypatch.setattr(d2s.jit.config, "cache_size_limit", 2)
    model = to_static(d2s.nn.Linear(3, 2))
    with pytest.warns(UserWarning, match="x: dim 0|dim 0"):
        for n in (1, 2, 3, 4):
            x = d2s.randn(n, 3)
            with d2s.no_grad():
                np.testing.assert_allclose(model(x).numpy(), x.numpy() @ model.weight.numpy().T + model.bias.numpy(),
                                           rtol=1e-5, atol=1e-6)
    assert model.forward.cache_info().size == 2


def test_many_exact_shapes_of_one_dynamic_program_keep_one_program(monkeypatch):
    import d2s.jit.cache as cache_mod
    monkeypatch.setattr(cache_mod, "_MAX_KEYS", 8)  # forget old exact-shape aliases early
    builds = []
    record = builds.append  # (the list itself, changed by the function, would be refused)

    def f(x):
        record(1)
        return x * 2.0

    sf = to_static(f, input_spec=[InputSpec([None])])
    for n in list(range(1, 30)) + list(range(1, 30)):
        np.testing.assert_allclose(sf(d2s.ones(n)).numpy(), np.full(n, 2.0))
    assert len(builds) == 1 and len(sf._cache.by_key) <= 8
    assert sf.cache_info().misses == 1 and sf.cache_info().hits == 57
