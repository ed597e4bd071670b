"""d2s.jit.save / d2s.jit.load: round trips equal the original on several inputs (dynamic batch,
both branches, loops), several methods, traced functions, the runtime alone in a fresh
interpreter, and fine-tuning a loaded model."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
import d2s_runtime
from d2s import nn
from d2s.jit import InputSpec

# every test runs on "cpu" and on "strict" (cupy-like arrays, tests/strict_device.py)
pytestmark = pytest.mark.usefixtures("device")

# a representative part runs on the python and the native backend (tests/backend_fixture.py)
on_both_backends = pytest.mark.usefixtures("backend")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RNG = np.random.default_rng(0)


def f32(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype("float32")


@d2s.jit.to_static
def halve_until_small(x):
    if x.mean() > 0:
        x = x * 2.0
    else:
        x = -x
    steps = d2s.zeros([], dtype="int64")
    while x.abs().max() > 1.0:
        x = x * 0.5
        steps = steps + 1
    return x, steps


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        if h.mean() > 0.3:
            h = h * 0.5
        return {"logits": self.fc2(h), "hidden": h}

    @d2s.jit.to_static
    def encode(self, x):
        return F.tanh(self.fc1(x))


def _inputs():
    # both branches of the `if`, several batch sizes, loops of 0 and several iterations
    return [f32(1, 3, lo=0.0, hi=0.2), f32(5, 3, lo=0.5, hi=4.0), f32(7, 3, lo=-6.0, hi=-0.1), f32(2, 3)]


@on_both_backends
def test_function_with_control_flow_round_trips(tmp_path):
    path = str(tmp_path / "f")
    d2s.jit.save(halve_until_small, path, input_spec=[InputSpec([None, 3], name="x")])
    assert sorted(os.listdir(path)) == ["constants.npz", "meta.json", "params.npz", "program.json"]
    loaded = d2s.jit.load(path)
    runtime_model = d2s_runtime.load(path)
    for x in _inputs():
        want_x, want_steps = halve_until_small(d2s.tensor(x))
        got_x, got_steps = loaded(d2s.tensor(x))
        assert isinstance(got_x, d2s.Tensor) and isinstance(got_steps, d2s.Tensor)
        np.testing.assert_allclose(got_x.numpy(), want_x.numpy(), rtol=1e-6)
        assert got_steps.item() == want_steps.item()
        rx, rsteps = runtime_model(x)
        assert isinstance(rx, np.ndarray)
        np.testing.assert_allclose(rx, want_x.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(rsteps, want_steps.numpy())


def test_meta_records_specs_and_version(tmp_path):
    path = str(tmp_path / "f")
    d2s.jit.save(halve_until_small, path, input_spec=[InputSpec([None, 3], name="x")])
    meta = json.load(open(os.path.join(path, "meta.json")))
    assert meta["d2s_version"] == d2s.__version__
    assert meta["format"] == "d2s-saved-model" and meta["version"] == 1
    assert meta["inputs"] == [{"name": "x", "shape": [None, 3], "dtype": "float32"}]
    assert [o["dtype"] for o in meta["outputs"]] == ["float32", "int64"]
    assert meta["outputs"][0]["shape"] == [None, 3]
    assert meta["output_tree"] == {"tuple": [{"leaf": 0}, {"leaf": 1}]}
    doc = json.load(open(os.path.join(path, "program.json")))
    assert doc["format"] == "d2s-program" and doc["version"] == 1


def test_module_with_two_methods(tmp_path):
    d2s.manual_seed(1)
    model = d2s.jit.to_static(Gated())
    path = str(tmp_path / "m")
    d2s.jit.save(model, path, input_spec={"forward": [InputSpec([None, 4], name="x")],
                                           "encode": [InputSpec([None, 4], name="x")]})
    assert os.path.isfile(os.path.join(path, "methods", "encode", "program.json"))
    loaded = d2s.jit.load(path)
    rt = d2s_runtime.load(path)
    for n in (1, 6):
        x = f32(n, 4, lo=-3, hi=3)
        want = model(d2s.tensor(x))
        got = loaded(d2s.tensor(x))
        assert set(got) == {"logits", "hidden"}
        for k in got:
            np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rt(x=x)["logits"], want["logits"].numpy(), rtol=1e-5, atol=1e-6)
        enc = model.encode(d2s.tensor(x)).numpy()
        np.testing.assert_allclose(loaded.encode(d2s.tensor(x)).numpy(), enc, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rt.encode(x), enc, rtol=1e-5, atol=1e-6)
    # the methods share the module's parameters after loading
    assert loaded.encode.parameters()[0] is dict(loaded.named_parameters())["fc1.weight"]


def test_ambiguous_program_needs_input_spec(tmp_path):
    @d2s.jit.to_static
    def double(x):
        return x * 2

    double(d2s.tensor(f32(2)))
    double(d2s.tensor(f32(3)))
    with pytest.raises(ValueError, match="2 cached programs and no input_spec"):
        d2s.jit.save(double, str(tmp_path / "d"))
    d2s.jit.save(double, str(tmp_path / "d"), input_spec=[InputSpec([None])])
    x = f32(9)
    np.testing.assert_allclose(d2s.jit.load(str(tmp_path / "d"))(x).numpy(), x * 2)


def test_traced_function_round_trips(tmp_path):
    lin = nn.Linear(3, 2)

    def f(x):
        return F.relu(lin(x)).sum(axis=1), x.max()

    traced = d2s.jit.trace(f, (d2s.tensor(f32(4, 3)),))
    path = str(tmp_path / "t")
    d2s.jit.save(traced, path)
    loaded = d2s.jit.load(path)
    for _ in range(3):
        x = f32(4, 3, lo=-3, hi=3)
        want = f(d2s.tensor(x))
        got = loaded(x)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_method_converted_on_the_instance_is_saved(tmp_path):
    # paddle style: `model.encode = to_static(model.encode)` puts a StaticFunction on the instance
    d2s.manual_seed(2)

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x)

        def score(self, x, y):
            return (self.fc(x) - y).sum(axis=1)

    model = d2s.jit.to_static(Two())
    model.score = d2s.jit.to_static(model.score)
    path = str(tmp_path / "m")
    d2s.jit.save(model, path, input_spec={"forward": [InputSpec([None, 4])],
                                           "score": [InputSpec([None, 4]), InputSpec([None, 3])]})
    assert os.path.isfile(os.path.join(path, "methods", "score", "program.json"))
    loaded = d2s.jit.load(path)
    for n in (1, 5):
        x, y = f32(n, 4), f32(n, 3)
        want = model.score(d2s.tensor(x), d2s.tensor(y)).numpy()
        np.testing.assert_allclose(loaded.score(x, y).numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(loaded(x).numpy(), model(d2s.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_traced_function_rejects_a_dynamic_input_spec(tmp_path):
    traced = d2s.jit.trace(lambda x: x * 2, (d2s.tensor(f32(4, 3)),))
    # a trace is fixed to its example's shapes: a None dim must not be silently dropped
    with pytest.raises(ValueError, match=r"fixed to the shapes.*to_static"):
        d2s.jit.save(traced, str(tmp_path / "t"), input_spec=[InputSpec([None, 3])])
    d2s.jit.save(traced, str(tmp_path / "t"), input_spec=[InputSpec([4, 3], name="inp")])
    loaded = d2s.jit.load(str(tmp_path / "t"))
    assert loaded.input_names == ["inp"]
    x = f32(4, 3)
    np.testing.assert_allclose(loaded(x).numpy(), x * 2)


@on_both_backends
def test_fine_tuning_a_loaded_model_matches_eager_gradients(tmp_path):
    d2s.manual_seed(3)
    model = Gated()
    eager = Gated()
    eager.load_state_dict(model.state_dict())
    d2s.jit.to_static(model)
    path = str(tmp_path / "m")
    with pytest.warns(UserWarning, match="method 'encode' of Gated is not saved"):
        d2s.jit.save(model, path, input_spec={"forward": [InputSpec([None, 4], name="x")]})
    loaded = d2s.jit.load(path)
    named = dict(loaded.named_parameters())
    for x in (f32(5, 4, lo=-3, hi=3), f32(3, 4, lo=0.5, hi=3)):  # both branches
        for p in list(named.values()) + list(eager.parameters()):
            p.grad = None
        (loaded(d2s.tensor(x))["logits"] ** 2).sum().backward()
        (eager(d2s.tensor(x))["logits"] ** 2).sum().backward()
        for name, p in eager.named_parameters():
            np.testing.assert_allclose(named[name].grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6)
    opt = d2s.optim.SGD(loaded.parameters(), lr=0.1)
    x = d2s.tensor(f32(5, 4))
    before = loaded(x)["logits"].numpy()
    opt.zero_grad()
    (loaded(x)["logits"] ** 2).sum().backward()
    opt.step()
    assert not np.allclose(loaded(x)["logits"].numpy(), before)


RUNTIME_ONLY = textwrap.dedent("""
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("d2s", "gast"):
                raise ImportError(f"{name} must not be imported here")
            return None

    sys.meta_path.insert(0, Block())
    import numpy as np
    import d2s_runtime
    model = d2s_runtime.load(sys.argv[1])
    for k, x in enumerate(np.load(sys.argv[2]).values()):
        out = model(x=x)
        np.save(f"{sys.argv[3]}_{k}.npy", out["logits"])
    assert not [m for m in sys.modules if m.split(".")[0] in ("d2s", "gast")]
""")


@on_both_backends
def test_saved_module_runs_with_the_runtime_alone(tmp_path):
    model = d2s.jit.to_static(Gated())
    path = str(tmp_path / "m")
    model.encode(d2s.tensor(f32(2, 4)))  # one cached program: saved without a spec
    d2s.jit.save(model, path, input_spec=[InputSpec([None, 4], name="x")])
    assert os.path.isdir(os.path.join(path, "methods", "encode"))
    xs = {f"x{k}": f32(n, 4, lo=-3, hi=3) for k, n in enumerate((1, 4, 9))}
    np.savez(tmp_path / "xs.npz", **xs)
    (tmp_path / "child.py").write_text(RUNTIME_ONLY)
    import numpy
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "runtime"),
                                         os.path.dirname(os.path.dirname(numpy.__file__))])
    r = subprocess.run([sys.executable, "-S", str(tmp_path / "child.py"), path, str(tmp_path / "xs.npz"),
                        str(tmp_path / "y")], env=env, capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    for k, x in enumerate(xs.values()):
        np.testing.assert_allclose(np.load(tmp_path / f"y_{k}.npy"), model(d2s.tensor(x))["logits"].numpy(),
                                   rtol=1e-5, atol=1e-6)


def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


@on_both_backends
def test_saved_trace_keeps_its_guards(tmp_path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = d2s.jit.trace(_branchy, (d2s.tensor(np.ones(3, "float32")),))
    path = str(tmp_path / "t")
    d2s.jit.save(traced, path)
    x = f32(3, lo=0.1, hi=1)
    np.testing.assert_allclose(d2s_runtime.load(path)(x), x * 2)
    np.testing.assert_allclose(d2s.jit.load(path)(x).numpy(), x * 2)
    with pytest.raises(d2s_runtime.GuardError, match="another path than the traced one"):
        d2s_runtime.load(path)(-x)
    with pytest.raises(d2s.jit.TraceGuardError, match="test_save_load.py"):
        d2s.jit.load(path)(-x)


@on_both_backends
def test_module_attribute_writes_are_not_saved_as_outputs(tmp_path):
    """A forward that assigns tensors to its module (``self.last = h``) saves only what it returns."""
    from d2s import nn

    class Recorder(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)
            self.last = None

        def forward(self, x):
            h = self.lin(x)
            self.last = h
            return h.sum(axis=1)

    model = d2s.jit.to_static(Recorder())
    x = d2s.randn(4, 3)
    expected = model(x).numpy()
    d2s.jit.save(model, str(tmp_path / "m"), input_spec=[d2s.jit.InputSpec([None, 3])])
    loaded = d2s.jit.load(str(tmp_path / "m"))
    for batch in (x, d2s.randn(7, 3)):
        out = loaded(batch)
        assert isinstance(out, d2s.Tensor)
        np.testing.assert_allclose(out.numpy(), model(batch).numpy(), rtol=1e-6)
    np.testing.assert_allclose(loaded(x).numpy(), expected, rtol=1e-6)
