"""The model zoo: PyTorch model files, written the way public ones are, run on d2s with only
their imports changed (issues 25 and 26).

Each file of ``tests/model_zoo/`` is a plain PyTorch model file (``import torch``, ``import
torch.nn as nn``, ``import torch.nn.functional as F``, ...) that ends with the entry points this
harness calls::

    build_model()                     the model (the harness seeds torch first)
    example_inputs()                  numpy arrays (tuples of them allowed) for ``model(*inputs)``
    example_batch()                   what ``train_step`` takes after its state (arrays, Python values)
    train_state(model)                the second argument of ``train_step``: optimizer(s), a schedule...
    train_step(model, state, *batch)  one step of the file's training loop; returns the loss(es)
    decode_inputs(), decode(model, *inputs)   optional: the file's decoding / prediction loop (its
                                      inputs as they are: numpy arrays, strings, numbers)
    RTOL                              optional: the value tolerance (default 1e-4; float64 models less)
    STATIC_MODULES                    optional: names of the submodules train_step calls directly
                                      (converted with to_static for the converted training stage;
                                      by default the model itself)

The harness gives numpy arrays to ``model`` and ``train_step`` as ``lib.tensor(array)`` (same
dtype), other values as they are; ``decode`` converts its own inputs, as an evaluation script
does. The harness loads a file twice: as it is (with torch) and with its import lines rewritten to
d2s (``import d2s as torch``, ``import d2s.nn as nn``, ... -- what a user does, nothing else
changed: the rewrite keeps every line where it was, so tracebacks point at the file's own lines).

PyTorch is a reference, not a dependency. ``python -m tests.zoo_harness [name ...]`` (where torch
is installed) builds each model with ``torch.manual_seed(0)``, moves its weights away from their
initialization (:func:`away_from_init`) and writes, under ``tests/torch_refs/model_zoo/``:

- ``<name>.safetensors``: the torch model's ``state_dict`` (``safetensors.torch.save_file``), the
  weights every d2s model is loaded with;
- ``<name>.npz`` + ``<name>.json``: what torch computed (the eval forward on ``example_inputs``,
  and on them one shorter along their first dim;
  two ``train_step``s: their returns, the gradients after each, the state after; the ``decode``
  result), as arrays and a JSON description of their structure and dtypes. Nothing is pickled.

The stages a test checks (``STAGES``) each compare d2s with the stored torch results, and with
live torch where it imports; the converted, saved and ONNX forms also with d2s eager.
"""
import ast
import atexit
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ZOO = HERE / "model_zoo"
REFS = HERE / "torch_refs" / "model_zoo"
TRAIN_STEPS = 2
STAGES = ("import", "build", "load_numpy", "load_safetensors", "forward", "train", "static_forward",
          "static_train", "resume", "saved", "onnx", "dynamic", "decode")


def model_names():
    return sorted(p.stem for p in ZOO.glob("*.py") if not p.name.startswith("_"))


# ------------------------------------------------------------------ loading a file twice
def _rewrite_alias(alias):
    """``import`` clause text for one alias of ``import torch...``."""
    name, asname = alias.name, alias.asname
    if name == "torch":
        return f"import d2s as {asname or 'torch'}"
    rest = name[len("torch"):]
    if asname:
        return f"import d2s{rest} as {asname}"
    # ``import torch.nn`` binds ``torch``: a user writes both lines
    return f"import d2s as torch; import d2s{rest}"


def rewrite_imports(source):
    """``source`` with its torch import statements rewritten to d2s and nothing else changed.

    Each statement keeps its first line (a multi-line one is padded with blank lines), so every
    other line of the file keeps its number."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "torch" or a.name.startswith("torch.") for a in node.names):
            parts = [_rewrite_alias(a) if a.name == "torch" or a.name.startswith("torch.") else
                     f"import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names]
            edits.append((node, "; ".join(parts)))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                (node.module == "torch" or node.module.startswith("torch.")):
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
            edits.append((node, f"from d2s{node.module[len('torch'):]} import {names}"))
    for node, text in sorted(edits, key=lambda e: -e[0].lineno):
        first = lines[node.lineno - 1]
        indent = first[:len(first) - len(first.lstrip())]
        span = node.end_lineno - node.lineno + 1
        lines[node.lineno - 1:node.end_lineno] = [indent + text + "\n"] + ["\n"] * (span - 1)
    return "".join(lines)


_TMP = []


def _tmpdir():
    if not _TMP:
        _TMP.append(tempfile.mkdtemp(prefix="d2s_model_zoo_"))
        atexit.register(shutil.rmtree, _TMP[0], True)
    return _TMP[0]


def load_module(name, lib):
    """The model file ``name`` as a module: as written (``lib='torch'``) or with its imports
    rewritten to d2s (``lib='d2s'``, from a copy in a temporary folder, so ``inspect`` and
    ``to_static`` read the source the module runs)."""
    path = ZOO / f"{name}.py"
    mod_name = f"model_zoo_{lib}_{name}"
    if lib == "d2s":
        copy = Path(_tmpdir()) / f"{name}.py"
        copy.write_text(rewrite_imports(path.read_text()))
        path = copy
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses and inspect look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return module


# ------------------------------------------------------------------ safetensors, read without d2s
_ST_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "I64": "int64", "I32": "int32",
              "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


def read_safetensors(path):
    """``{name: numpy array}`` of a safetensors file, in the file's order (the reference reader:
    the weights reach d2s as numpy arrays without d2s reading the file)."""
    data = Path(path).read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for key, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = e["data_offsets"]
        dt = np.dtype(_ST_DTYPES[e["dtype"]]).newbyteorder("<")
        out[key] = np.frombuffer(data[base + begin:base + end], dt).astype(dt.newbyteorder("=")).reshape(e["shape"])
    return out


def weights_path(name):
    return REFS / f"{name}.safetensors"


def stored_weights(name):
    """The torch model's state_dict, as numpy arrays, in torch's key order."""
    arrays = read_safetensors(weights_path(name))
    order = stored_results(name)["state_dict"]
    return {k: arrays[k] for k, _, _ in order}


# ------------------------------------------------------------------ results as data
class Result:
    """What one run computed: a JSON ``tree`` whose leaves index ``arrays``."""

    def __init__(self, tree, arrays):
        self.tree, self.arrays = tree, arrays


def describe(lib, out):
    """A :class:`Result` of ``out`` (tensors of ``lib``, numpy arrays, Python values, containers)."""
    arrays = []

    def walk(v):
        if isinstance(v, lib.Tensor):
            arrays.append(np.array(v.detach().cpu().numpy() if lib.__name__ == "torch" else v.detach().numpy()))
            return {"tensor": len(arrays) - 1, "dtype": str(v.dtype).replace("torch.", "")}
        if isinstance(v, np.ndarray):
            arrays.append(np.array(v))
            return {"array": len(arrays) - 1, "dtype": str(v.dtype)}
        if isinstance(v, np.generic):
            v = v.item()
        if v is None or isinstance(v, (bool, int, float, str)):
            return {"py": type(v).__name__, "value": v}
        if isinstance(v, dict):
            return {"dict": [[str(k), walk(x)] for k, x in v.items()]}
        if isinstance(v, (tuple, list)):
            return {"list" if isinstance(v, list) else "tuple": [walk(x) for x in v]}
        raise TypeError(f"the model zoo cannot compare a {type(v).__name__}")
    return Result(walk(out), arrays)


def _strip_values(tree):
    """The tree without Python float values (compared with a tolerance, apart)."""
    if isinstance(tree, dict):
        if tree.get("py") == "float":
            return {"py": "float"}
        return {k: _strip_values(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_strip_values(v) for v in tree]
    return tree


def _floats(tree, out):
    if isinstance(tree, dict):
        if tree.get("py") == "float":
            out.append(tree["value"])
        for v in tree.values():
            _floats(v, out)
    elif isinstance(tree, list):
        for v in tree:
            _floats(v, out)
    return out


def _tol(want, rtol):
    """Absolute tolerance of ``want``: rtol of its largest magnitude (float32 sums err relative to
    their terms, not to each small result)."""
    scale = float(np.max(np.abs(want))) if want.size and np.isfinite(want).any() else 0.0
    return rtol * scale


def compare_result(got, want, what, rtol):
    """Structure, dtypes and values of two Results (ints, bools and strings exactly)."""
    assert _strip_values(got.tree) == _strip_values(want.tree), \
        f"{what}: returns {_brief(got.tree)}, PyTorch {_brief(want.tree)}"
    for g, w in zip(_floats(got.tree, []), _floats(want.tree, [])):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * abs(w), err_msg=f"{what}: a Python float")
    for i, (g, w) in enumerate(zip(got.arrays, want.arrays)):
        assert g.shape == w.shape, f"{what}: output {i} has shape {g.shape}, PyTorch {w.shape}"
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=_tol(w, rtol), equal_nan=True,
                                       err_msg=f"{what}: output {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: output {i}")


def _brief(tree, depth=0):
    """A short text of a result tree for messages."""
    if depth > 3:
        return "..."
    if "tensor" in tree or "array" in tree:
        return ("tensor" if "tensor" in tree else "ndarray") + f"[{tree['dtype']}]"
    if "py" in tree:
        return tree["py"] if tree["py"] != "NoneType" else "None"
    if "dict" in tree:
        return "{" + ", ".join(f"{k}: {_brief(v, depth + 1)}" for k, v in tree["dict"]) + "}"
    kind = "list" if "list" in tree else "tuple"
    items = [_brief(v, depth + 1) for v in tree[kind]]
    return ("[" if kind == "list" else "(") + ", ".join(items) + ("]" if kind == "list" else ")")


# ------------------------------------------------------------------ running a model with a library
def to_lib(lib, value):
    """Numpy arrays (in tuples, lists and dicts) as tensors of ``lib``; other values as they are."""
    if isinstance(value, np.ndarray):
        return lib.tensor(value)
    if isinstance(value, tuple):
        return tuple(to_lib(lib, v) for v in value)
    if isinstance(value, list):
        return [to_lib(lib, v) for v in value]
    if isinstance(value, dict):
        return {k: to_lib(lib, v) for k, v in value.items()}
    return value


def flatten_inputs(value):
    """The numpy arrays of an input structure, in order."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in flatten_inputs(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in flatten_inputs(v)]
    return []


def build(lib, module, weights):
    """``module.build_model()`` with ``weights`` (numpy arrays) loaded as a state dict."""
    lib.manual_seed(0)
    model = module.build_model()
    if weights is not None:
        if lib.__name__ == "torch":
            model.load_state_dict({k: lib.from_numpy(np.array(v)) for k, v in weights.items()})
        else:
            model.load_state_dict(dict(weights))
    return model


def run_forward(lib, module, model, inputs=None):
    model.eval()
    with lib.no_grad():
        return describe(lib, model(*to_lib(lib, module.example_inputs() if inputs is None else inputs)))


def smaller_inputs(module):
    """The example inputs one shorter along their first dim (a dynamic dim's other size), or None
    where they are nested."""
    inputs = module.example_inputs()
    if not all(isinstance(a, np.ndarray) for a in inputs):
        return None
    return tuple(np.ascontiguousarray(a[:max(1, a.shape[0] - 1)]) for a in inputs)


def run_train(lib, module, model):
    """``TRAIN_STEPS`` training steps: {"returns": Result, "grads": [{name: array or None}] per
    step, "mask": {name: bool array}, "state": {key: array} after}. ``mask`` marks the entries
    whose gradient is above rounding at every step (see :func:`compare_train`)."""
    model.train()
    state = module.train_state(model)
    batch = module.example_batch()
    returns, grads = [], []
    for _ in range(TRAIN_STEPS):
        returns.append(module.train_step(model, state, *to_lib(lib, batch)))
        grads.append({n: None if p.grad is None else _numpy(lib, p.grad) for n, p in model.named_parameters()})
    return {"returns": describe(lib, returns), "grads": grads, "mask": _significant(grads),
            "state": {k: _numpy(lib, v) for k, v in model.state_dict().items()}}


def _significant(grads):
    """{name: entries whose gradient is above 1e-5 of the step's largest, at every step}."""
    mask = {}
    for step in grads:
        scale = max([float(np.max(np.abs(g))) for g in step.values() if g is not None and g.size] or [0.0])
        for n, g in step.items():
            if g is not None:
                m = np.abs(g) > 1e-5 * scale
                mask[n] = m & mask[n] if n in mask else m
    return mask


def checkpointed(state):
    """The objects of a train_state whose own state a checkpoint keeps (optimizers, schedules;
    losses are modules with an empty one), or None where the train_state holds other objects
    (a class of the file's own keeping a hidden state or a step count)."""
    items = list(state) if isinstance(state, (tuple, list)) else [state]
    if not all(hasattr(o, "state_dict") or isinstance(o, (int, float, str)) for o in items):
        return None
    return [o for o in items if hasattr(o, "state_dict")]


def run_decode(lib, module, model):
    model.eval()
    return describe(lib, module.decode(model, *module.decode_inputs()))


def _numpy(lib, t):
    t = t.detach()
    return np.array(t.cpu().numpy() if lib.__name__ == "torch" else t.numpy())


def rtol_of(module):
    return getattr(module, "RTOL", 1e-4)


# ------------------------------------------------------------------ training results compared
def compare_train(got, want, weights, what, rtol):
    """Returns (losses) and gradients of each step, then the state after the steps.

    Parameters are compared by their change from the loaded weights (an optimizer's update is
    small beside a weight; comparing weights would hide a wrong update). An adaptive optimizer
    (Adam: ``g / (|g| + eps)``) turns a gradient that is zero up to rounding -- an attention
    key's bias, a bias before a normalization: the loss does not depend on it -- into an update
    of any size, so updates are compared where every step's reference gradient is above rounding
    (``want["mask"]``); the gradients themselves are compared everywhere. A step whose reference
    gradients are not stored (None: the stored references keep the last step's) is compared
    through the returns and the state."""
    compare_result(got["returns"], want["returns"], f"{what}: train_step's returns", rtol)
    for step, (g_step, w_step) in enumerate(zip(got["grads"], want["grads"]), 1):
        if w_step is None or g_step is None:
            continue
        missing = sorted(set(w_step) - set(g_step))
        extra = sorted(set(g_step) - set(w_step))
        assert not missing and not extra, \
            f"{what}: named_parameters differ from PyTorch's: missing {missing}, not in PyTorch {extra}"
        step_scale = max([float(np.max(np.abs(w))) for w in w_step.values() if w is not None and w.size] or [0.0])
        for name, w in w_step.items():
            g = g_step[name]
            assert (g is None) == (w is None), \
                f"{what}: after step {step}, {name}.grad is {'None' if g is None else 'a tensor'}, " \
                f"in PyTorch {'None' if w is None else 'a tensor'}"
            if w is not None:
                assert g.shape == w.shape, f"{what}: {name}.grad has shape {g.shape}, PyTorch {w.shape}"
                np.testing.assert_allclose(g, w, rtol=rtol, atol=_tol(w, rtol) + 1e-5 * step_scale,
                                           err_msg=f"{what}: {name}.grad after step {step}")
    assert list(got["state"]) == list(want["state"]), \
        f"{what}: state_dict keys after training {list(got['state'])} != PyTorch's {list(want['state'])}"
    deltas = {k: w - weights[k].astype(w.dtype) for k, w in want["state"].items() if w.dtype.kind == "f"}
    # a floor per kind: updates of parameters, changes of buffers (running statistics)
    floor = {}
    for k, d in deltas.items():
        kind = k in want["mask"]
        floor[kind] = max(floor.get(kind, 0.0), float(np.max(np.abs(d))) if d.size else 0.0)
    for key, w in want["state"].items():
        g = got["state"][key]
        assert g.shape == w.shape and g.dtype == w.dtype, \
            f"{what}: {key} after training is {g.dtype}{g.shape}, PyTorch {w.dtype}{w.shape}"
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: {key} after training")
            continue
        before = weights[key].astype(w.dtype)
        dw, dg = deltas[key], g - before
        mask = want["mask"].get(key, np.ones(w.shape, bool))
        # an adaptive optimizer's update divides by a gradient: its small entries carry more
        # than the gradient's relative error, hence 1e-3 of the largest change of the tensor
        bound = (rtol * np.abs(dw) + 10 * _tol(dw, rtol) + 1e-5 * floor[key in want["mask"]]
                 + 4 * np.finfo(w.dtype).eps * np.abs(before))
        err = np.abs(dg - dw)
        bad = (err > bound) & mask
        if bad.any():
            i = np.unravel_index(np.argmax(np.where(bad, err - bound, -np.inf)), w.shape)
            raise AssertionError(f"{what}: {key} changed by training differently from PyTorch at {bad.sum()} of "
                                 f"{w.size} entries; at {tuple(int(j) for j in i)}: {dg[i]:.6g} vs {dw[i]:.6g} "
                                 f"(from {before[i]:.6g})")


# ------------------------------------------------------------------ torch references
def torch_results(module, weights):
    """Everything torch computes for a model file: {"state_dict": {key: array}, "forward",
    "train", "decode", "forward_smaller"} (decode None where the file has none; forward_smaller
    None where its inputs are nested or do not fit each other once shortened)."""
    import torch
    # one thread: these models are tiny, and torch's worker threads spinning for a core another
    # process holds cost seconds per model on a shared machine
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            # torch's own advice (nested tensors want batch_first) is not the test's business
            warnings.simplefilter("ignore", UserWarning)
            return _torch_results(torch, module, weights)
    finally:
        torch.set_num_threads(threads)


def _torch_results(torch, module, weights):
    model = build(torch, module, weights)
    state = {k: _numpy(torch, v) for k, v in model.state_dict().items()}
    if weights is None:
        weights = state
    out = {"state_dict": state, "forward": run_forward(torch, module, build(torch, module, weights)),
           "train": run_train(torch, module, build(torch, module, weights)), "decode": None,
           "forward_smaller": None}
    if hasattr(module, "decode"):
        out["decode"] = run_decode(torch, module, build(torch, module, weights))
    if smaller_inputs(module) is not None:
        try:
            out["forward_smaller"] = run_forward(torch, module, build(torch, module, weights), smaller_inputs(module))
        except Exception:  # noqa: BLE001 -- inputs that do not fit each other once shortened
            pass
    return out


def away_from_init(torch, module, model):
    """Weights like a trained model's: every parameter plus noise of its fan-in's scale (matrices
    and kernels 1/sqrt(fan_in), vectors 0.1), and running statistics from the example inputs.

    At initialization a model's activations are small (GPT-style 0.02 weights), where GELU's
    forms agree, norms' gains are all 1 and biases 0, and eval-mode batch norm is the identity:
    differences that matter on trained weights would pass unseen."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, p in model.named_parameters():
            sigma = 1.0 / p[0].numel() ** 0.5 if p.dim() >= 2 else 0.1
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * sigma)
        if any(n.endswith("running_mean") for n, _ in model.named_buffers()):
            model.train()
            for _ in range(5):
                model(*to_lib(torch, module.example_inputs()))
            model.eval()


def write_refs(name):
    """Run model file ``name`` with torch and store its weights and results."""
    import torch
    from safetensors.torch import save_file
    module = load_module(name, "torch")
    torch.manual_seed(0)
    model = build(torch, module, None)
    away_from_init(torch, module, model)
    REFS.mkdir(parents=True, exist_ok=True)
    # cloned: tied weights (an embedding shared with the output layer) are stored once per key
    save_file({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()},
              str(weights_path(name)))
    r = torch_results(module, read_safetensors(weights_path(name)))
    arrays = {}
    inputs = module.example_inputs()
    meta = {"torch": torch.__version__.split("+")[0],
            "resumable": checkpointed(module.train_state(build(torch, module, None))) is not None,
            # the forward's inputs when they are flat arrays (the dynamic stage saves with their specs)
            "inputs": [[str(a.dtype), list(a.shape)] for a in inputs]
            if all(isinstance(a, np.ndarray) for a in inputs) else None,
            "state_dict": [[k, str(v.dtype), list(v.shape)] for k, v in r["state_dict"].items()]}

    def put(prefix, result):
        for i, a in enumerate(result.arrays):
            arrays[f"{prefix}/{i}"] = a
        return result.tree
    meta["forward"] = put("forward", r["forward"])
    if r["forward_smaller"] is not None:
        meta["forward_smaller"] = put("forward_smaller", r["forward_smaller"])
    train = r["train"]
    # the last step's gradients (the earlier ones show in its returns and the state), the
    # entries compared after the steps as bits, and the state after
    meta["train"] = {"returns": put("train/returns", train["returns"]),
                     "grads": {n: g is not None for n, g in train["grads"][-1].items()},
                     "state": list(train["state"])}
    for n, g in train["grads"][-1].items():
        if g is not None:
            arrays[f"train/grad/{n}"] = g
    for n, m in train["mask"].items():
        arrays[f"train/mask/{n}"] = np.packbits(m.ravel())
    for k, v in train["state"].items():
        arrays[f"train/state/{k}"] = v
    if r["decode"] is not None:
        meta["decode"] = put("decode", r["decode"])
    np.savez_compressed(REFS / f"{name}.npz", **arrays)
    (REFS / f"{name}.json").write_text(_json_text(meta))
    _STORED.pop(name, None)


def _json_text(meta):
    """The references' JSON, one line per top-level key (one per state_dict entry)."""
    def compact(v):
        return json.dumps(v, separators=(",", ":"))
    lines = []
    for k, v in meta.items():
        if k == "state_dict":
            v = "[\n" + ",\n".join("  " + compact(e) for e in v) + "\n ]"
        else:
            v = compact(v)
        lines.append(f" {json.dumps(k)}: {v}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


_STORED = {}


def stored_results(name):
    """The stored torch results of ``name`` (the shape of :func:`torch_results`, ``state_dict``
    as ``[[key, dtype, shape]]``)."""
    if name not in _STORED:
        js, npz = REFS / f"{name}.json", REFS / f"{name}.npz"
        if not js.exists() or not npz.exists() or not weights_path(name).exists():
            raise AssertionError(f"no stored torch results for model_zoo/{name}.py: write them with "
                                 f"`python -m tests.zoo_harness {name}` where torch is installed")
        meta = json.loads(js.read_text())
        with np.load(npz, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}

        def take(prefix, tree):
            n = len([k for k in arrays if k.startswith(prefix + "/") and k[len(prefix) + 1:].isdigit()])
            return Result(tree, [arrays[f"{prefix}/{i}"] for i in range(n)])
        train = meta["train"]
        last = {n: arrays[f"train/grad/{n}"] if has else None for n, has in train["grads"].items()}
        shapes = {k: v for k, _, v in meta["state_dict"]}
        mask = {}
        for n in train["grads"]:
            bits = arrays.get(f"train/mask/{n}")
            if bits is not None:
                size = int(np.prod(shapes[n])) if n in shapes else last[n].size
                mask[n] = np.unpackbits(bits)[:size].astype(bool).reshape(shapes.get(n, last[n].shape))
        _STORED[name] = {
            "state_dict": meta["state_dict"],
            "forward": take("forward", meta["forward"]),
            "train": {"returns": take("train/returns", train["returns"]),
                      "grads": [None] * (TRAIN_STEPS - 1) + [last], "mask": mask,
                      "state": {k: arrays[f"train/state/{k}"] for k in train["state"]}},
            "forward_smaller": take("forward_smaller", meta["forward_smaller"]) if "forward_smaller" in meta else None,
            "decode": take("decode", meta["decode"]) if "decode" in meta else None}
    return _STORED[name]


def live_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def main(argv):
    for name in argv or model_names():
        write_refs(name)
        print(f"model_zoo/{name}.py -> {REFS / name}.npz, .json, .safetensors")


if __name__ == "__main__":
    sys.path.append(str(HERE))
    main(sys.argv[1:])
