"""Values a converted function reads through Python objects (a class, a dataclass, a
SimpleNamespace, a dict, a module, ``self.cfg``, an argument) are re-checked on each call: a
changed value builds the program again, as eager Python reads the new value."""
import dataclasses
import functools
import enum
import types

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit.object_guards import chains_of
from d2s.user_errors import ConvertError


class CFG:
    scale = 2.0


class SubCFG(CFG):
    pass


@dataclasses.dataclass
class DC:
    scale: float = 2.0
    sizes: list = dataclasses.field(default_factory=lambda: [1, 2])


DCI = DC()
NS = types.SimpleNamespace(scale=2.0)
CFGD = {"scale": 2.0, "n": 2}
CONFIG = types.ModuleType("config")
CONFIG.dropout = 2.0
LOG = []


def _class(x):
    return x * CFG.scale


def _subclass(x):
    return x * SubCFG.scale


def _dataclass(x):
    return x * DCI.scale


def _namespace(x):
    return x * NS.scale


def _dict(x):
    return x * CFGD["scale"] + CFGD.get("n")


def _module_attr(x):
    return x * CONFIG.dropout


def _alias(x):
    c = DCI
    return x * c.scale


def _argument(x, c):
    return x * c.scale


def _helper(x):
    return x * CFG.scale


def _calls_helper(x):
    return _helper(x) + 1.0


def _list_len(x):
    return x * len(DCI.sizes)


def _appends(x):
    LOG.append(1)
    return x * 2.0


class _WithCfg(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = DC()

    def forward(self, x):
        return x * self.cfg.scale


def _value(fn, *args):
    return fn(d2s.ones(2), *args).numpy()[0]


@pytest.fixture(autouse=True)
def _reset():
    yield
    CFG.scale, DCI.scale, DCI.sizes, NS.scale, CONFIG.dropout = 2.0, 2.0, [1, 2], 2.0, 2.0
    CFGD.update(scale=2.0, n=2)
    SubCFG.__dict__.get("scale") is not None and delattr(SubCFG, "scale")


@pytest.mark.parametrize("fn, change, expected", [
    (_class, lambda: setattr(CFG, "scale", 3.0), 3.0),
    (_subclass, lambda: setattr(CFG, "scale", 3.0), 3.0),
    (_subclass, lambda: setattr(SubCFG, "scale", 5.0), 5.0),  # now shadows the base's
    (_dataclass, lambda: setattr(DCI, "scale", 3.0), 3.0),
    (_namespace, lambda: setattr(NS, "scale", 3.0), 3.0),
    (_dict, lambda: CFGD.update(scale=3.0), 5.0),
    (_dict, lambda: CFGD.update(n=4), 6.0),
    (_module_attr, lambda: setattr(CONFIG, "dropout", 3.0), 3.0),
    (_alias, lambda: setattr(DCI, "scale", 3.0), 3.0),
    (_calls_helper, lambda: setattr(CFG, "scale", 3.0), 4.0),
    (_list_len, lambda: DCI.sizes.append(3), 3.0),  # the same list, grown in place
], ids=["class", "subclass_reads_base", "subclass_shadows", "dataclass", "namespace", "dict_item", "dict_get",
        "module_attr", "local_alias", "helper_function", "list_grown_in_place"])
def test_a_changed_value_is_read_again(fn, change, expected):
    sf = d2s.jit.to_static(fn)
    before = _value(sf)
    assert before == _value(fn)
    change()
    assert _value(sf) == _value(fn) == expected


def test_an_unchanged_value_reuses_the_program():
    sf = d2s.jit.to_static(_class)
    for _ in range(3):
        _value(sf)
    assert sf.cache_info().misses == 1


def test_an_argument_objects_attribute():
    sf = d2s.jit.to_static(_argument)
    c = DC()
    assert _value(sf, c) == 2.0
    c.scale = 3.0
    assert _value(sf, c) == 3.0


def test_a_module_objects_attribute_through_self():
    m = _WithCfg()
    sm = d2s.jit.to_static(m)
    assert _value(sm) == 2.0
    m.cfg.scale = 3.0
    assert _value(sm) == 3.0
    m.cfg = DC(scale=4.0)  # another object: its value is read, not the old one's
    assert _value(sm) == 4.0
    m.cfg.scale = 6.0  # and the new object is the one watched
    assert _value(sm) == 6.0


def test_a_container_the_function_appends_to_is_refused_not_guarded():
    # eager code appends at every call, a program would append once: the build is refused
    # (tests/jit/test_side_effects.py), and LOG is left as it was, not guarded as a constant
    LOG.clear()
    sf = d2s.jit.to_static(_appends)
    with pytest.raises(ConvertError, match="changes the global 'LOG'"):
        _value(sf)
    assert LOG == []


def test_chains_found_in_bytecode():
    chains = chains_of(_dict.__code__)
    assert ("global", "CFGD", (("item", "scale"),)) in chains
    assert ("global", "CFGD", (("item", "n"),)) in chains
    assert ("global", "DCI", (("attr", "scale"),)) in chains_of(_alias.__code__)


def test_a_property_is_not_read_while_building_guards():
    class P:
        reads = 0

        @property
        def scale(self):
            P.reads += 1
            return 2.0

    p = P()

    def f(x):
        return x * p.scale

    np.testing.assert_allclose(d2s.jit.to_static(f)(d2s.ones(2)).numpy(), [2.0, 2.0])
    assert P.reads == 1  # once by the build itself, never by the guards


class _ClassScale(nn.Module):
    scale = 2.0

    def forward(self, x):
        return x * self.scale


def test_a_class_attribute_read_through_self():
    m = _ClassScale()
    sm = d2s.jit.to_static(m)
    assert _value(sm) == 2.0
    try:
        _ClassScale.scale = 3.0
        assert _value(sm) == _value(m.forward) == 3.0
        m.scale = 4.0  # an instance attribute now shadows the class's
        assert _value(sm) == 4.0
    finally:
        _ClassScale.scale = 2.0


W_SMALL = np.full(2, 2.0, np.float32)
W_LARGE = np.full(1000, 2.0, np.float32)  # read through a slice: a copied constant
NP_SCALE = np.float32(2.0)


def _small_array(x):
    return x * W_SMALL


def _large_array(x):
    return x * W_LARGE[:2]


def _numpy_scalar(x):
    return x * NP_SCALE


@pytest.mark.parametrize("fn, name", [(_small_array, "W_SMALL"), (_large_array, "W_LARGE")])
def test_a_global_numpy_array_changed_in_place_or_rebound(fn, name):
    global W_SMALL, W_LARGE
    old = globals()[name]
    sf = d2s.jit.to_static(fn)
    try:
        assert _value(sf) == 2.0
        old[:] = 3.0
        assert _value(sf) == _value(fn) == 3.0
        globals()[name] = np.full(old.shape, 5.0, np.float32)
        assert _value(sf) == _value(fn) == 5.0
    finally:
        globals()[name] = old
        old[:] = 2.0


def test_a_global_numpy_scalar_rebound():
    global NP_SCALE
    sf = d2s.jit.to_static(_numpy_scalar)
    try:
        assert _value(sf) == 2.0
        NP_SCALE = np.float32(3.0)
        assert _value(sf) == _value(_numpy_scalar) == 3.0
    finally:
        NP_SCALE = np.float32(2.0)


class _Mode(enum.Enum):
    A = 1
    B = 2


class _Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = types.SimpleNamespace(scale=2.0, sub=types.SimpleNamespace(k=1.0))

    def forward(self, x):
        return x * self.cfg.scale + self.cfg.sub.k


class _Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _Inner()
        self.mode = _Mode.A
        self.kernel = (2, 2)

    def forward(self, x):
        y = self.inner(x)
        if self.mode == _Mode.B:
            y = y * 10
        return y * self.kernel[0]


def _eager(m):
    d2s.jit.enable_to_static(False)
    try:
        return _value(m)
    finally:
        d2s.jit.enable_to_static(True)


@pytest.mark.parametrize("change", [
    lambda m: setattr(m.inner.cfg, "scale", 3.0),  # a submodule's object (its forward is a helper call)
    lambda m: setattr(m.inner.cfg.sub, "k", 5.0),  # two objects deep
    lambda m: setattr(m, "mode", _Mode.B),  # an enum member steering a Python if
    lambda m: setattr(m, "kernel", (3, 3)),  # a tuple attribute
], ids=["submodule_cfg", "nested_namespace", "enum_member", "tuple_attr"])
def test_module_settings_read_through_objects(change):
    m = _Outer()
    sm = d2s.jit.to_static(m)
    assert _value(sm) == _eager(m)
    change(m)
    assert _value(sm) == _eager(m)


G_NS = types.SimpleNamespace(s=2.0)


def _getattr_read(x):
    return x * getattr(G_NS, "s")


def _default_object(x, cfg=types.SimpleNamespace(s=2.0)):
    return x * cfg.s


def _closure_object():
    cfg = types.SimpleNamespace(s=2.0)

    def h(x):
        return x * cfg.s
    return h, cfg


def test_getattr_default_argument_and_closure_objects():
    sf = d2s.jit.to_static(_getattr_read)
    assert _value(sf) == 2.0
    G_NS.s = 3.0
    assert _value(sf) == 3.0
    G_NS.s = 2.0
    sd = d2s.jit.to_static(_default_object)
    assert _value(sd) == 2.0
    _default_object.__defaults__[0].s = 3.0
    assert _value(sd) == 3.0
    h, cfg = _closure_object()
    sh = d2s.jit.to_static(h)
    assert _value(sh) == 2.0
    cfg.s = 3.0
    assert _value(sh) == 3.0


def _block(x, cfg):
    return x * cfg.scale


class _CallsBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = types.SimpleNamespace(scale=2.0)

    def forward(self, x):
        return _block(x, self.cfg) + self._method_block(x, self.cfg)

    def _method_block(self, x, cfg):
        return x * cfg.scale


def test_an_object_passed_to_a_helper_function():
    # def block(x, cfg) reading cfg.scale, called as block(x, self.cfg): a common model layout
    m = _CallsBlock()
    sm = d2s.jit.to_static(m)
    assert _value(sm) == 4.0
    m.cfg.scale = 3.0
    assert _value(sm) == _eager(m) == 6.0


def _scaled(x, scale=2.0, shift=0.0):
    return x * scale + shift


PART = functools.partial(_scaled, scale=2.0)


def _global_partial(x):
    return PART(x)


def _partial_argument(x, fn):
    return fn(x)


class _WithAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = functools.partial(_scaled, shift=1.0)

    def forward(self, x):
        return self.act(x)


def test_a_global_partials_keywords_and_rebinding_are_seen():
    global PART
    sf = d2s.jit.to_static(_global_partial)
    try:
        assert _value(sf) == 2.0
        PART.keywords["scale"] = 3.0  # the same partial, changed in place
        assert _value(sf) == _value(_global_partial) == 3.0
        PART = functools.partial(_scaled, 5.0)  # another partial bound to the name
        assert _value(sf) == _value(_global_partial) == 5.0
        for _ in range(3):
            assert _value(sf) == 5.0
        PART = functools.partial(_scaled, 5.0)  # equal to the last one: its program is kept
        assert _value(sf) == 5.0
        assert sf.cache_info().misses == 3
    finally:
        PART = functools.partial(_scaled, scale=2.0)


def test_a_closure_and_a_module_attribute_partial():
    p = functools.partial(_scaled, shift=1.0)
    sf = d2s.jit.to_static(lambda x: p(x))
    assert _value(sf) == 3.0
    p.keywords["shift"] = 7.0
    assert _value(sf) == 9.0
    m = _WithAct()
    sm = d2s.jit.to_static(m)
    assert _value(sm) == 3.0
    m.act.keywords["scale"] = 4.0
    assert _value(sm) == 5.0
    m.act = functools.partial(_scaled, 1.0, 0.5)
    assert _value(sm) == 1.5


def test_a_partial_passed_as_argument_changed_in_place():
    sf = d2s.jit.to_static(_partial_argument)
    a, b = functools.partial(_scaled, scale=2.0), functools.partial(_scaled, scale=4.0)
    assert _value(sf, a) == 2.0 and _value(sf, b) == 4.0
    a.keywords["scale"] = 9.0
    assert _value(sf, a) == _value(_partial_argument, a) == 9.0
    assert _value(sf, b) == 4.0


ACT = d2s.relu
LIN = nn.Linear(2, 2)
LAYERS = [nn.Linear(2, 2)]


def _calls_global_function(x):
    return ACT(x)


def _calls_global_module(x):
    return LIN(x)


def _runs_global_layers(x):
    for layer in LAYERS:
        x = layer(x)
    return x


class _Acts:
    act = staticmethod(d2s.relu)


def _calls_class_function(x):
    return _Acts.act(x)


def test_a_rebound_global_function_module_or_grown_layer_list_builds_again():
    # the program inlined what the build called: the first call's function, module and layers
    # were run again, silently
    global ACT, LIN
    x = d2s.tensor([-1.0, 2.0])
    cases = [(_calls_global_function, lambda: globals().update(ACT=d2s.tanh)),
             (_calls_global_module, lambda: globals().update(LIN=nn.Linear(2, 2))),
             (_runs_global_layers, lambda: LAYERS.append(nn.Linear(2, 2))),
             (_runs_global_layers, lambda: LAYERS.__setitem__(0, nn.Linear(2, 2))),
             (_calls_class_function, lambda: setattr(_Acts, "act", staticmethod(d2s.tanh)))]
    try:
        for fn, change in cases:
            sf = d2s.jit.to_static(fn)
            np.testing.assert_array_equal(sf(x).numpy(), fn(x).numpy())
            change()
            np.testing.assert_array_equal(sf(x).numpy(), fn(x).numpy())
            misses = sf.cache_info().misses
            sf(x)
            assert sf.cache_info().misses == misses
    finally:
        ACT, LIN = d2s.relu, nn.Linear(2, 2)
        LAYERS[:] = [nn.Linear(2, 2)]
