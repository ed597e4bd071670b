"""The acceptance corpus of issues 25 and 26: PyTorch model files of the kinds people train
(``tests/model_zoo/``), run on d2s with only their import lines changed, stage by stage against
PyTorch (stored results, and live torch where it imports; see ``tests/zoo_harness.py``):

- ``import``, ``build``: the file imports and the model builds with PyTorch's state_dict keys,
  dtypes and shapes;
- ``load_numpy``: the torch weights load as numpy arrays through ``load_state_dict``;
  ``load_safetensors``: the torch-written ``.safetensors`` loads with ``d2s.load``, and
  ``d2s.save`` / ``d2s.load`` round-trips the model's state;
- ``forward``: the eval-mode forward equals PyTorch's (1e-4, float64 models closer);
- ``train``: two steps of the file's training loop: losses, gradients after each step, the
  state after (parameters and running statistics) equal PyTorch's;
- ``static_forward``, ``static_train``: the model converted with ``d2s.jit.to_static`` does the
  same, equal to PyTorch and to d2s eager;
- ``resume``: the first step, a checkpoint of the model and optimizers (and schedules) through
  ``d2s.save`` / ``d2s.load`` into new ones, the second step: equal to PyTorch's two steps;
- ``saved``: ``d2s.jit.save`` of the converted model run by ``d2s_runtime.load``; ``onnx``: its
  ONNX export run by onnxruntime; ``dynamic``: saved with the first dim of each input unknown
  (``InputSpec([None, ...])``) and run by ``d2s_runtime`` -- equal to PyTorch and to d2s eager;
- ``decode``: the file's decoding or prediction loop in eval mode (greedy) gives PyTorch's
  tokens (and scores).

No stage is marked as expected to fail: a failing stage is a missing name or a difference from
PyTorch in d2s.
"""
import json
import os
import tempfile

import numpy as np
import pytest

import d2s
import zoo_harness as zh

# ------------------------------------------------------------------ one model, its stages cached


class Blocked(Exception):
    """A stage needs what an earlier step failed to give (raised in place of that step's error, whose
    traceback would grow with every stage that raised it again)."""

    def __init__(self, what, error):
        super().__init__(f"{what} failed earlier: {type(error).__name__}: {error}")
        self.error = error


class _Zoo:
    """A model file's d2s module, stored and live torch results, and d2s eager results, each
    computed once (an error is kept and raised again to every stage that needs it)."""

    def __init__(self, name):
        self.name = name
        self._cache = {}

    def _once(self, key, fn):
        if key not in self._cache:
            try:
                self._cache[key] = (True, fn())
            except Exception as e:  # noqa: BLE001 -- kept and raised again where needed
                self._cache[key] = (False, e)
                raise
        ok, value = self._cache[key]
        if not ok:
            raise Blocked(key, value)
        return value

    def module(self):
        return self._once("module", lambda: zh.load_module(self.name, "d2s"))

    def stored(self):
        return zh.stored_results(self.name)

    def weights(self):
        return zh.stored_weights(self.name)

    def live(self):
        """torch's results for the stored weights, or None without torch."""
        def compute():
            if zh.live_torch() is None:
                return None
            return zh.torch_results(zh.load_module(self.name, "torch"), self.weights())
        return self._once("live", compute)

    def rtol(self):
        return zh.rtol_of(self.module())

    def build(self, weights=True):
        return zh.build(d2s, self.module(), self.weights() if weights else None)

    def eager_forward(self):
        return self._once("eager_forward", lambda: zh.run_forward(d2s, self.module(), self.build()))

    def eager_train(self):
        return self._once("eager_train", lambda: zh.run_train(d2s, self.module(), self.build()))

    def static_model(self):
        """A converted model in eval mode that has run its example once (one cached program)."""
        def make():
            model = d2s.jit.to_static(self.build())
            model.eval()
            with d2s.no_grad():
                model(*zh.to_lib(d2s, self.module().example_inputs()))
            return model
        return self._once("static_model", make)


_ZOOS = {}


def zoo(name):
    if name not in _ZOOS:
        _ZOOS[name] = _Zoo(name)
    return _ZOOS[name]


# ------------------------------------------------------------------ the stages
def stage_import(z):
    z.module()


def stage_build(z):
    model = z.build(weights=False)
    got = [[k, str(v.dtype), list(v.shape)] for k, v in model.state_dict().items()]
    want = z.stored()["state_dict"]
    got_keys, want_keys = [k for k, _, _ in got], [k for k, _, _ in want]
    assert got_keys == want_keys, (
        f"state_dict keys differ from PyTorch's: missing {[k for k in want_keys if k not in got_keys]}, "
        f"not in PyTorch {[k for k in got_keys if k not in want_keys]}, d2s's order {got_keys}")
    differ = [(g, w) for g, w in zip(got, want) if g != w]
    assert not differ, f"state_dict dtypes/shapes differ from PyTorch's (d2s, PyTorch): {differ}"


def _assert_state(model, weights, what):
    state = model.state_dict()
    assert list(state) == list(weights), f"{what}: keys {list(state)} != {list(weights)}"
    for k, w in weights.items():
        np.testing.assert_array_equal(state[k].numpy(), w, err_msg=f"{what}: {k}")
        assert str(state[k].dtype) == str(w.dtype), f"{what}: {k} is {state[k].dtype}, PyTorch {w.dtype}"


def stage_load_numpy(z):
    model = z.build()
    _assert_state(model, z.weights(), "state_dict after load_state_dict(numpy arrays)")
    n_params = len(z.stored()["train"]["grads"][-1])
    names = [n for n, _ in model.named_parameters()]
    assert len(names) == n_params, \
        f"named_parameters gives {len(names)} parameters, PyTorch {n_params} (tied weights count once): {names}"


def stage_load_safetensors(z):
    weights = z.weights()
    loaded = d2s.load(str(zh.weights_path(z.name)))
    assert sorted(loaded) == sorted(weights)
    for k, w in weights.items():
        assert str(loaded[k].dtype) == str(w.dtype), f"d2s.load: {k} is {loaded[k].dtype}, PyTorch {w.dtype}"
        np.testing.assert_array_equal(loaded[k].numpy(), w, err_msg=f"d2s.load: {k}")
    model = z.build(weights=False)
    model.load_state_dict(loaded)
    _assert_state(model, weights, "state_dict after load_state_dict(d2s.load(torch's .safetensors))")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.safetensors")
        d2s.save(model.state_dict(), path)
        back = d2s.load(path)
        assert list(back) == list(weights)
        plain = zh.read_safetensors(path)  # what another safetensors reader sees
        for k, w in weights.items():
            np.testing.assert_array_equal(back[k].numpy(), w, err_msg=f"d2s.save/d2s.load: {k}")
            np.testing.assert_array_equal(plain[k], w, err_msg=f"d2s.save read by a plain reader: {k}")
    again = z.build(weights=False)
    again.load_state_dict(back)
    _assert_state(again, weights, "state_dict after d2s.save/d2s.load")


def stage_forward(z):
    got = z.eager_forward()
    zh.compare_result(got, z.stored()["forward"], "eager forward vs stored PyTorch", z.rtol())
    live = z.live()
    if live is not None:
        zh.compare_result(got, live["forward"], "eager forward vs live PyTorch", z.rtol())


def stage_train(z):
    got = z.eager_train()
    zh.compare_train(got, z.stored()["train"], z.weights(), "eager training", z.rtol())
    live = z.live()
    if live is not None:
        zh.compare_train(got, live["train"], z.weights(), "eager training vs live PyTorch", z.rtol())


def _vs_eager(compute):
    """d2s eager's result where eager runs (else None: the stage is compared with PyTorch only)."""
    try:
        return compute()
    except Exception:  # noqa: BLE001 -- eager's own stage reports it
        return None


def _assert_programs(model, n):
    """The converted forward ran as programs (not eagerly): ``n`` of them were built."""
    sf = model.forward
    assert isinstance(sf, d2s.jit.StaticFunction) and sf.is_static, "to_static(model).forward runs eagerly"
    assert len(sf.programs) == n, f"to_static built {len(sf.programs)} programs, expected {n}"


def stage_static_forward(z):
    model = d2s.jit.to_static(z.build())
    got = zh.run_forward(d2s, z.module(), model)
    _assert_programs(model, 1)
    zh.compare_result(got, z.stored()["forward"], "to_static forward vs PyTorch", z.rtol())
    eager = _vs_eager(z.eager_forward)
    if eager is not None:
        zh.compare_result(got, eager, "to_static forward vs eager", z.rtol() / 10)


def stage_static_train(z):
    model = z.build()
    # the modules the training step calls: the model, or the parts it calls directly (a GAN's
    # generator and discriminator), each converted as a user converts it
    parts = [model.get_submodule(n) for n in getattr(z.module(), "STATIC_MODULES", ())] or [model]
    for part in parts:
        d2s.jit.to_static(part)
    got = zh.run_train(d2s, z.module(), model)
    for name, part in zip(getattr(z.module(), "STATIC_MODULES", ("model",)), parts):
        assert part.forward.is_static and part.forward.programs, f"to_static({name}).forward ran eagerly"
    zh.compare_train(got, z.stored()["train"], z.weights(), "to_static training vs PyTorch", z.rtol())
    eager = _vs_eager(z.eager_train)
    if eager is not None:
        zh.compare_train(got, eager, z.weights(), "to_static training vs eager", z.rtol())


def stage_resume(z):
    """Training resumed from a checkpoint: one step, then the model's and the optimizers' (and
    schedules') states through d2s.save / d2s.load into a new model and new optimizers, then the
    second step there -- equal to PyTorch's two steps without a break."""
    mod = z.module()
    first = z.build()
    first.train()
    state = mod.train_state(first)
    r1 = mod.train_step(first, state, *zh.to_lib(d2s, mod.example_batch()))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.safetensors")
        d2s.save({"model": first.state_dict(), "train": [o.state_dict() for o in zh.checkpointed(state)]}, path)
        back = d2s.load(path)
    model = z.build(weights=False)
    model.load_state_dict(back["model"])
    model.train()
    state = mod.train_state(model)
    for obj, saved in zip(zh.checkpointed(state), back["train"]):
        obj.load_state_dict(saved)
    r2 = mod.train_step(model, state, *zh.to_lib(d2s, mod.example_batch()))
    grads = {n: None if p.grad is None else p.grad.detach().numpy() for n, p in model.named_parameters()}
    got = {"returns": zh.describe(d2s, [r1, r2]), "grads": [None, grads],
           "state": {k: v.detach().numpy() for k, v in model.state_dict().items()}}
    zh.compare_train(got, z.stored()["train"], z.weights(), "training resumed from a checkpoint", z.rtol())


def _compare_flat(got, z, what, want=None):
    """Flat outputs against PyTorch's forward (``want``: another stored result) and d2s eager's."""
    compare_eager = want is None
    want = z.stored()["forward"] if want is None else want
    got = [np.asarray(g) for g in got]
    assert len(got) == len(want.arrays), f"{what}: {len(got)} outputs, PyTorch's forward returns {len(want.arrays)}"
    flat = zh.Result({"list": [{"tensor": i} for i in range(len(got))]}, got)
    ref = zh.Result(flat.tree, want.arrays)
    for i, (g, w) in enumerate(zip(got, want.arrays)):
        assert g.dtype == w.dtype, f"{what}: output {i} is {g.dtype}, PyTorch {w.dtype}"
    zh.compare_result(flat, ref, f"{what} vs PyTorch", z.rtol())
    eager = _vs_eager(z.eager_forward) if compare_eager else None
    if eager is not None:
        zh.compare_result(flat, zh.Result(flat.tree, eager.arrays), f"{what} vs eager", z.rtol() / 10)


def _arrays(out):
    if isinstance(out, dict):
        return [a for v in out.values() for a in _arrays(v)]
    if isinstance(out, (tuple, list)):
        return [a for v in out for a in _arrays(v)]
    return [out] if hasattr(out, "shape") and hasattr(out, "dtype") else []


def stage_saved(z):
    import d2s_runtime
    model = z.static_model()
    inputs = zh.flatten_inputs(z.module().example_inputs())
    with tempfile.TemporaryDirectory() as tmp:
        d2s.jit.save(model, os.path.join(tmp, "model"))
        outs = d2s_runtime.load(os.path.join(tmp, "model"))(*inputs)
    _compare_flat(_arrays(outs), z, "saved program (d2s_runtime)")


def stage_onnx(z):
    import onnxruntime as ort
    model = z.static_model()
    inputs = zh.flatten_inputs(z.module().example_inputs())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        d2s.onnx.export(model, path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        outs = sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), inputs)})
    _compare_flat(outs, z, "ONNX (onnxruntime)")


def stage_dynamic(z):
    """Saved with the first dim of every input unknown (a dynamic batch, or sequence length for
    sequence-first models: ``InputSpec([None, ...])``, how a model is saved for serving), run by
    d2s_runtime on the example and on it one shorter along that dim (where PyTorch takes that)."""
    import d2s_runtime
    inputs = z.module().example_inputs()
    specs = [d2s.jit.InputSpec([None] + list(a.shape[1:]), str(a.dtype)) for a in inputs]
    model = z.build()
    model.eval()
    with tempfile.TemporaryDirectory() as tmp:
        d2s.jit.save(model, os.path.join(tmp, "model"), input_spec=specs)
        loaded = d2s_runtime.load(os.path.join(tmp, "model"))
        outs = loaded(*inputs)
        _compare_flat(_arrays(outs), z, "saved with a dynamic first dim (d2s_runtime)")
        smaller = z.stored()["forward_smaller"]
        if smaller is not None:
            outs = loaded(*zh.smaller_inputs(z.module()))
            _compare_flat(_arrays(outs), z, "saved with a dynamic first dim, run one shorter", want=smaller)


def stage_decode(z):
    got = zh.run_decode(d2s, z.module(), z.build())
    zh.compare_result(got, z.stored()["decode"], "decode vs stored PyTorch", z.rtol())
    live = z.live()
    if live is not None:
        zh.compare_result(got, live["decode"], "decode vs live PyTorch", z.rtol())


STAGE_FNS = {s: globals()[f"stage_{s}"] for s in zh.STAGES}


def _cases():
    cases = []
    for name in zh.model_names():
        for stage in zh.STAGES:
            js = zh.REFS / f"{name}.json"
            meta = json.loads(js.read_text()) if js.exists() else {}
            if stage == "decode" and meta and "decode" not in meta:
                continue  # the file has no decoding loop
            if stage == "resume" and meta and not meta.get("resumable"):
                continue  # its training keeps state in an object of its own (a hidden state, a step count)
            if stage == "dynamic" and meta and not meta.get("inputs"):
                continue  # its forward takes nested inputs, which an InputSpec list cannot describe
            cases.append(pytest.param(name, stage, id=f"{name}-{stage}"))
    return cases


@pytest.mark.parametrize("name,stage", _cases())
def test_model_zoo(name, stage):
    STAGE_FNS[stage](zoo(name))


# ------------------------------------------------------------------ the harness itself
def test_only_import_lines_are_rewritten():
    src = ("import math\nimport torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
           "from torch.distributions import (\n    Categorical,\n    Normal)\nimport torch.optim\n"
           "x = torch.zeros(2)  # import torch stays in a comment\ndef f():\n    import torch.nn.functional as G\n"
           "    return G\n")
    out = zh.rewrite_imports(src)
    assert out == ("import math\nimport d2s as torch\nimport d2s.nn as nn\nfrom d2s.nn import functional as F\n"
                   "from d2s.distributions import Categorical, Normal\n\n\nimport d2s as torch; import d2s.optim\n"
                   "x = torch.zeros(2)  # import torch stays in a comment\ndef f():\n"
                   "    import d2s.nn.functional as G\n    return G\n")


@pytest.mark.parametrize("name", zh.model_names())
def test_a_zoo_file_depends_on_torch_by_its_imports_only(name):
    import ast
    src = (zh.ZOO / f"{name}.py").read_text()
    out = zh.rewrite_imports(src)
    spans = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] == "torch" for m in mods):
                spans.update(range(node.lineno, node.end_lineno + 1))
    a, b = src.splitlines(), out.splitlines()
    assert len(a) == len(b)
    changed = {i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y}
    assert changed and changed <= spans, f"lines changed outside torch imports: {sorted(changed - spans)}"
    for node in ast.walk(ast.parse(out)):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] == "torch" for a in node.names)
        if isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] != "torch"


def test_the_train_comparison_can_fail():
    w = {"a": np.ones(4, np.float32)}
    grads = [{"a": np.array([1.0, -2.0, 0.5, 1e-9], np.float32)}] * 2
    want = {"returns": zh.Result({"py": "float", "value": 1.0}, []), "grads": grads, "mask": zh._significant(grads),
            "state": {"a": w["a"] - np.array([1e-3, -2e-3, 5e-4, 0.0], np.float32)}}

    def got(**changes):
        out = {"returns": want["returns"], "grads": grads, "state": {"a": want["state"]["a"].copy()}}
        out.update(changes)
        return out
    zh.compare_train(got(), want, w, "same", 1e-4)
    # an update 1% off on one entry is found, though it is 1e-5 of the weight
    off = got()
    off["state"]["a"][1] += 2e-5
    with pytest.raises(AssertionError, match="changed by training differently"):
        zh.compare_train(off, want, w, "off", 1e-4)
    # the update of an entry whose gradient is rounding noise is not compared
    noise = got()
    noise["state"]["a"][3] -= 1e-3
    zh.compare_train(noise, want, w, "noise", 1e-4)
    with pytest.raises(AssertionError, match="a.grad"):
        zh.compare_train(got(grads=[{"a": grads[0]["a"] * 1.01}] * 2), want, w, "grad", 1e-4)
    with pytest.raises(AssertionError, match="a.grad is None"):
        zh.compare_train(got(grads=[{"a": None}] * 2), want, w, "grad", 1e-4)
    with pytest.raises(AssertionError, match="returns"):
        zh.compare_train(got(returns=zh.Result({"py": "float", "value": 1.001}, [])), want, w, "loss", 1e-4)


def test_the_result_comparison_can_fail():
    a = zh.describe(d2s, (d2s.tensor([1.0, 2.0]), 3, None))
    zh.compare_result(a, a, "same", 1e-4)
    with pytest.raises(AssertionError, match="returns"):
        zh.compare_result(zh.describe(d2s, (d2s.tensor([1.0, 2.0]), 3)), a, "structure", 1e-4)
    with pytest.raises(AssertionError, match="returns"):
        zh.compare_result(zh.describe(d2s, (d2s.tensor([1, 2]), 3, None)), a, "dtype", 1e-4)
    with pytest.raises(AssertionError):
        zh.compare_result(zh.describe(d2s, (d2s.tensor([1.0, 2.001]), 3, None)), a, "value", 1e-4)
    with pytest.raises(AssertionError):
        zh.compare_result(zh.describe(d2s, (d2s.tensor([1.0, 2.0]), 4, None)), a, "int", 1e-4)


# ------------------------------------------------------------------ the table
def _first_error(e):
    """``Type: message (model_file.py:line)`` of a stage's error, on one line."""
    import traceback
    while isinstance(e, Blocked):
        e = e.error
    where = ""
    for frame in traceback.extract_tb(e.__traceback__):
        path = frame.filename
        if os.path.dirname(path) in (str(zh.ZOO), zh._TMP[0] if zh._TMP else ""):
            where = f" ({os.path.basename(path)}:{frame.lineno})"
    text = " ".join(str(e).split())
    if isinstance(e, AssertionError):
        text = text.replace("Not equal to tolerance", "").strip()
    return f"{type(e).__name__}: {text[:150]}{where}".replace("|", "/")


def table(names=None):
    """Markdown table of every model file and stage: ``pass``, ``-`` (the file has no such
    loop), or the first error."""
    names = names or zh.model_names()
    rows = ["| model | " + " | ".join(zh.STAGES) + " |", "|---" * (len(zh.STAGES) + 1) + "|"]
    errors = []
    counts = [0, 0]
    for name in names:
        cells = []
        applicable = {c.values[1] for c in _cases() if c.values[0] == name}
        for stage in zh.STAGES:
            if stage not in applicable:
                cells.append("-")
                continue
            try:
                STAGE_FNS[stage](zoo(name))
                cells.append("pass")
                counts[0] += 1
            except Exception as e:  # noqa: BLE001 -- reported in the table
                counts[1] += 1
                msg = _first_error(e)
                if msg not in errors:
                    errors.append(msg)
                cells.append(f"E{errors.index(msg) + 1}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    rows.append("")
    rows.append(f"{counts[0]} stages pass, {counts[1]} fail.")
    rows.append("")
    rows += [f"- E{i + 1}: {m}" for i, m in enumerate(errors)]
    return "\n".join(rows)


if __name__ == "__main__":  # python tests/test_model_zoo.py [name ...]: the table of stages
    import sys
    import warnings
    # tests/ last, as tests/conftest.py has it: its onnx/ test package must not shadow onnx
    sys.path.remove(os.path.dirname(os.path.abspath(__file__)))
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    warnings.simplefilter("ignore")
    print(table(sys.argv[1:]))
