"""Python containers that outlive a converted call: a program runs the function's Python once,
when it is built, so a list, dict or set it changes (a module's history list, a global log, a
closure's dict) would change at the first call only, where eager code changes it at every call.
Such a function is refused at its build, the container put back as it was; reading them, and
changing containers the call creates itself, stay allowed and equal eager results."""
import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.user_errors import ConvertError

LOG = {}
SEEN = set()
SCALES = [1.0, 2.0, 3.0]


class History(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.hist = []

    def forward(self, x):
        y = self.lin(x)
        self.hist.append(float(len(self.hist)))
        return y * len(self.hist)


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.stats = {"calls": 0}

    def forward(self, x):
        self.stats["calls"] += 1
        return x * 2


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x) + 1


def _global_log(x):
    LOG.setdefault("calls", []).append(1)
    return x * len(LOG["calls"])


def _global_set(x):
    SEEN.add("called")
    return x + 1


def _closure_log():
    calls = []

    def f(x):
        calls.append(1)
        return x + len(calls)
    return f, calls


@pytest.mark.parametrize("where, make, grown", [
    ("self.hist", lambda: History(), lambda m: m.hist),
    ("self.inner.stats", lambda: Outer(), lambda m: m.inner.stats),
])
def test_a_module_changing_a_container_attribute_is_refused_and_it_is_put_back(where, make, grown):
    d2s.manual_seed(0)
    model = make()
    eager = [model(d2s.ones(1, 2)).numpy() for _ in range(2)]  # eager: changes it at every call
    before = repr(grown(model))
    static = d2s.jit.to_static(model)
    with pytest.raises(ConvertError, match=f"changes {where} .*outlives the call") as info:
        static(d2s.ones(1, 2))
    assert "test_side_effects.py" in str(info.value)  # names the user's function
    assert repr(grown(model)) == before  # the build's change was undone
    if where == "self.hist":  # eager's answer follows the list, which a program would freeze
        assert not np.array_equal(eager[0], eager[1])


@pytest.mark.parametrize("fn, name, container", [
    (_global_log, "the global 'LOG'", LOG),
    (_global_set, "the global 'SEEN'", SEEN),
])
def test_a_function_changing_a_global_container_is_refused(fn, name, container):
    before = repr(container)
    with pytest.raises(ConvertError, match=f"changes {name}"):
        d2s.jit.to_static(fn)(d2s.ones(2))
    assert repr(container) == before


def test_a_closure_list_is_refused_too():
    f, calls = _closure_log()
    with pytest.raises(ConvertError, match="changes the closure variable 'calls'"):
        d2s.jit.to_static(f)(d2s.ones(2))
    assert calls == []


def test_reading_outside_containers_and_changing_own_ones_match_eager():
    def f(x, i: int):
        parts = []  # created by the call: may change freely
        for s in SCALES:
            parts.append(x * s)
        table = {"k": parts[i]}
        table["k"] = table["k"] + 1
        return sum(parts) + table["k"]

    static = d2s.jit.to_static(f)
    for i in range(3):
        x = d2s.tensor(np.arange(3, dtype=np.float32) - i)
        np.testing.assert_array_equal(static(x, i).numpy(), f(x, i).numpy())
    assert SCALES == [1.0, 2.0, 3.0]


# ------------------------------------------------------------------ containers rebound by forward
class Growing(nn.Module):
    """Rebinds a list attribute to a longer one at every call (no in-place change)."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen = self.seen + [x * 2]
        return x + len(self.seen)


class Carried(nn.Module):
    """Carries tensors from one call to the next in a list and a dict attribute."""

    def __init__(self):
        super().__init__()
        self.prev = [d2s.zeros(2)]
        self.state = {"h": d2s.zeros(2)}

    def forward(self, x):
        y = x + self.prev[0] + self.state["h"]
        self.prev = [y]
        self.state = {"h": y * 0.5}
        return y


class Resets(nn.Module):
    """Starts a fresh list at every call: one program serves every call."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.maps = []

    def forward(self, x):
        self.maps = []
        y = self.lin(x)
        self.maps.append(y * 2)
        self.names = ["a", "b"]
        return y


def _run(make, conv, n=4):
    d2s.manual_seed(0)
    model = make()
    if conv:
        d2s.jit.to_static(model)
    outs = [model(d2s.ones(1, 2) * (i + 1)).numpy() for i in range(n)]
    return model, outs


@pytest.mark.parametrize("make", [Growing, Carried, Resets])
def test_container_attributes_rebound_by_forward_match_eager(make):
    eager, want = _run(make, False)
    static, got = _run(make, True)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    for name in ("seen", "prev", "state", "maps"):
        if hasattr(eager, name):
            a, b = getattr(eager, name), getattr(static, name)
            a, b = (list(a.values()), list(b.values())) if isinstance(a, dict) else (a, b)
            assert [t.numpy().tolist() for t in a] == [t.numpy().tolist() for t in b]


def test_a_fresh_list_at_every_call_keeps_one_program_and_warns_of_nothing():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        static, _ = _run(Resets, True, n=5)
    assert len(static.forward.programs) == 1


def test_a_global_rebound_to_a_longer_list_is_read_anew():
    global HISTORY
    HISTORY = []

    def f(x):
        return x * len(HISTORY)

    static = d2s.jit.to_static(f)
    for n in range(3):
        HISTORY = HISTORY + [n]
        np.testing.assert_array_equal(static(d2s.ones(2)).numpy(), f(d2s.ones(2)).numpy())


class Tupled(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = (2, 2)

    def forward(self, x):
        return x * self.k[0] + self.k[1]


def test_a_tuple_attribute_is_read_anew_when_rebound_to_other_values_or_types():
    model = Tupled()
    static = d2s.jit.to_static(Tupled())
    for k in ((2, 2), (3, 1), (3.5, 1), (3.5, 1.0)):
        model.k = static.k = k
        got, want = static(d2s.ones(2)), model(d2s.ones(2))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.dtype == want.dtype


# ------------------------------------------------------------------ changed through helpers
HIST = []
STATS = {}


def _log(v):
    HIST.append(v)


def _count(v):
    _log(v)  # two helpers down
    STATS["n"] = STATS.get("n", 0) + 1


class _Recorder:
    def __init__(self):
        self.items = []

    def add(self, v):
        self.items.append(v)


REC = _Recorder()


def _through_helper(x):
    _log(x.sum())
    return x * 2


def _through_nested_helpers(x):
    _count(x.sum())
    return x * 2


def _through_a_method(x):
    REC.add(x.sum())
    return x * 2


def _through_an_attribute(x):
    REC.items.append(x.sum())
    return x * 2


@pytest.mark.parametrize("fn, name, container", [
    (_through_helper, r"the global 'HIST' \(through _log\)", HIST),
    (_through_nested_helpers, r"the global 'STATS' \(through _count\)", STATS),
    (_through_a_method, r"self.items \(through _Recorder.add\)", REC.items),
    (_through_an_attribute, r"REC.items", REC.items),
])
def test_a_container_changed_by_a_called_helper_is_refused_and_put_back(fn, name, container):
    # eager code appends at every call; a program would have appended a symbolic tensor once
    before = repr(container)
    with pytest.raises(ConvertError, match=f"changes .*{name}.*outlives the call"):
        d2s.jit.to_static(fn)(d2s.ones(2))
    assert repr(container) == before and HIST == []


def test_a_helper_that_only_reads_a_global_container_is_converted():
    def weighted(x):
        return _read_scales(x) + 1.0

    static = d2s.jit.to_static(weighted)
    np.testing.assert_array_equal(static(d2s.ones(2)).numpy(), weighted(d2s.ones(2)).numpy())


def _read_scales(x):
    return x * SCALES[1] + len(SCALES)


def test_a_nested_helper_changing_a_list_made_by_the_call_is_converted_and_an_outer_one_refused():
    outer = []

    def local_list(x):
        seen = []

        def record(v):
            seen.append(v.sum())

        for i in range(3):
            record(x * i)
        return d2s.stack(seen)

    def outer_list(x):
        def record(v):
            outer.append(v.sum())

        record(x)
        return x

    np.testing.assert_array_equal(d2s.jit.to_static(local_list)(d2s.ones(2)).numpy(), [0.0, 2.0, 4.0])
    with pytest.raises(ConvertError, match="changes the closure variable 'outer'"):
        d2s.jit.to_static(outer_list)(d2s.ones(2))
    assert outer == []


@d2s.jit.not_to_static
def _build_log(v):
    HIST.append(v)  # plain Python, run while the program is built, as its author marked it


def test_a_not_to_static_helper_runs_as_python_and_a_lambda_is_followed():
    def marked(x):
        _build_log(1)
        return x * 2

    def with_lambda(x):
        log = lambda v: HIST.append(v)  # noqa: E731
        log(x.sum())
        return x

    try:
        np.testing.assert_array_equal(d2s.jit.to_static(marked)(d2s.ones(2)).numpy(), [2.0, 2.0])
        assert HIST == [1]
    finally:
        HIST.clear()
    with pytest.raises(ConvertError, match="changes the global 'HIST'"):
        d2s.jit.to_static(with_lambda)(d2s.ones(2))
    assert HIST == []


# ------------------------------------------------------------------ tensors named by the function
TABLE = d2s.tensor([1.0, 2.0])


def _scaled_by_table(x):
    return x * TABLE


def _through_table_helper(x):
    return _scaled_by_table(x) + 1.0


@pytest.mark.parametrize("fn", [_scaled_by_table, _through_table_helper])
def test_a_global_tensor_changed_in_place_or_rebound_is_read_anew(fn):
    # the program read it as a constant: later calls returned the first call's values
    global TABLE
    static, x = d2s.jit.to_static(fn), d2s.ones(2)
    try:
        np.testing.assert_array_equal(static(x).numpy(), fn(x).numpy())
        TABLE.mul_(3.0)
        np.testing.assert_array_equal(static(x).numpy(), fn(x).numpy())
        TABLE = d2s.tensor([7.0, 8.0])
        np.testing.assert_array_equal(static(x).numpy(), fn(x).numpy())
        misses = static.cache_info().misses
        for _ in range(2):
            static(x)
        assert static.cache_info().misses == misses  # no build per call
    finally:
        TABLE = d2s.tensor([1.0, 2.0])


def test_closure_and_default_argument_tensors_changed_in_place_are_read_anew():
    w = d2s.tensor([1.0, 2.0])

    def closure(x):
        return x * w

    def default(x, b=d2s.tensor([1.0, 1.0])):
        return x + b

    x = d2s.ones(2)
    for fn, change in ((closure, lambda: w.add_(10.0)), (default, lambda: default.__defaults__[0].mul_(5.0))):
        static = d2s.jit.to_static(fn)
        np.testing.assert_array_equal(static(x).numpy(), fn(x).numpy())
        change()
        np.testing.assert_array_equal(static(x).numpy(), fn(x).numpy())


STEPS = d2s.zeros([])


def _rebinds_a_global(x):
    global STEPS
    STEPS = STEPS + 1
    return x * STEPS


def test_a_global_rebound_to_a_tensor_is_written_at_every_call():
    # the build left STEPS bound to a symbolic tensor: float(STEPS) raised after the call
    global STEPS
    static, x = d2s.jit.to_static(_rebinds_a_global), d2s.ones(2)
    try:
        for want in (1.0, 2.0, 3.0):
            np.testing.assert_array_equal(static(x).numpy(), [want, want])
            assert float(STEPS) == want
        assert static.cache_info().misses == 1
    finally:
        STEPS = d2s.zeros([])


# ------------------------------------------------------------- state of objects the code reaches
# A converted function (not a module's forward) that rebinds a tensor attribute of a module or a
# plain object it reads from a global or closure variable, or of the object whose method it is,
# left the attribute bound to a symbolic tensor of its build (printed as ``Tensor(symbolic ...)``),
# and later calls read the value of the first call: each call must update it as eager code does.
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", d2s.zeros([], dtype=d2s.int64))
        self.lin = nn.Linear(2, 2)


class RunningTotal:
    def __init__(self):
        self.total = d2s.zeros([2])

    def step(self, x):
        self.total += x
        return x + self.total


COUNTER = Counter()
TOTALS = RunningTotal()


def _bump_global_module(x):
    COUNTER.count += 1
    COUNTER.last = x * 2
    return COUNTER.lin(x) + COUNTER.count


def _accumulate_global_object(x):
    TOTALS.total = TOTALS.total + x
    return TOTALS.total * 2


def _closure_over_module():
    m = Counter()

    def step(x):
        m.count.add_(2)
        return x * m.count
    return m, step


@pytest.mark.parametrize("make", ["global module", "global object", "closure module", "method of an object"])
def test_state_of_reached_objects_is_updated_at_every_call(make):
    def build():
        if make == "global module":
            COUNTER.count.zero_()
            COUNTER.__dict__.pop("last", None)
            return _bump_global_module, lambda: (COUNTER.count, COUNTER.last)
        if make == "global object":
            TOTALS.total = d2s.zeros([2])
            return _accumulate_global_object, lambda: TOTALS.total
        if make == "closure module":
            m, step = _closure_over_module()
            return step, lambda: m.count
        obj = RunningTotal()
        return obj.step, lambda: obj.total

    fn, state = build()
    def snap(st):  # (a buffer bumped in place is the same tensor at every call: copy its value)
        return [s.numpy().copy() for s in (st if isinstance(st, tuple) else (st,))]
    eager = []
    for _ in range(3):
        out = fn(d2s.tensor([1.0, 2.0]))
        eager.append((out.detach().numpy(), snap(state())))
    fn, state = build()
    static = d2s.jit.to_static(fn)
    for want_out, want_state in eager:
        out = static(d2s.tensor([1.0, 2.0]))
        st = state()
        st = st if isinstance(st, tuple) else (st,)
        assert not any(s.is_symbolic for s in st)
        np.testing.assert_array_equal(out.detach().numpy(), want_out)
        for s, w in zip(st, want_state):
            np.testing.assert_array_equal(s.numpy(), w)
