"""d2s against PyTorch: one case, written once, run with ``torch`` and with ``d2s`` as the library.

A case is a function ``fn(lib, *args)`` that uses ``lib`` the way a model file uses ``torch``
(``lib.sum(x, dim=1)``, ``x.max(1)``, ``lib.nn.functional.relu(x)``), and the numpy arrays
(and plain Python values) it is called with. PyTorch is a reference, not a dependency: its
results are kept as data in ``tests/torch_refs/<group>.npz`` + ``.json`` (values, dtypes, the
return structure, float gradients), written by

    python -m tests.torch_parity            # every test module that defines TORCH_CASES
    python -m tests.torch_parity ops.test_reduce   # one group (a module under tests/)

where torch is installed (``pip install torch==2.13.0`` takes the CPU wheel on these machines).
:func:`check` compares d2s eager with the stored result, with live torch too when it imports,
then the converted function (``to_static``), the saved program under ``d2s_runtime`` and the
ONNX export with d2s eager, each where the case allows. Loading references never unpickles.

A test module declares ``TORCH_CASES = [Case(...), ...]`` and runs them with::

    @pytest.mark.parametrize("case", TORCH_CASES, ids=str)
    def test_matches_torch(case):
        torch_parity.check(case, __name__)
"""
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

REFS = Path(__file__).resolve().parent / "torch_refs"
_FORMS = ("static", "saved", "onnx")


class Case:
    """One call to compare.

    Args:
        name: unique within its module.
        fn: ``fn(lib, *args)``; ``lib`` is ``torch`` or ``d2s``.
        args: numpy arrays (become tensors of their dtype) and plain Python values (passed as
            they are).
        grad: float array args that get ``requires_grad`` (True: all float ones; False: none).
            Gradients are those of a fixed random weighting of every float output.
        rtol, atol: value tolerance (gradients too).
        static, dynamic, saved, onnx: True, or a string saying why the form is not checked (e.g.
            "eager only: the result's shape depends on the data"). ``static``: ``to_static`` of
            the case on its arguments; ``dynamic``: converted with every dim of every array
            argument unknown (``InputSpec([None, ...])``); ``saved``: ``d2s.jit.save`` then
            ``d2s_runtime.load``; ``onnx``: exported and run in onnxruntime. All but ``static``
            need it.
    """

    def __init__(self, name, fn, *args, grad=True, rtol=1e-6, atol=1e-7, static=True, dynamic=True, saved=True,
                 onnx=True):
        self.name, self.fn, self.args = name, fn, args
        self.grad, self.rtol, self.atol = grad, rtol, atol
        self.forms = {"static": static, "dynamic": dynamic, "saved": saved, "onnx": onnx}
        for form, why in self.forms.items():
            if why is not True and not (isinstance(why, str) and why):
                raise ValueError(f"case {name!r}: {form}= must be True or a reason string, got {why!r}")

    def __str__(self):
        return self.name

    def wants_grad(self, k, a):
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or self.grad is False:
            return False
        return self.grad is True or k in self.grad


# ------------------------------------------------------------------ running a case
def _leaf_info(lib, v):
    """(array, dtype name) of a tensor result of either library."""
    if lib.__name__ == "torch":
        arr = v.detach().cpu().numpy()
        return arr, str(v.dtype).replace("torch.", "")
    return np.asarray(v.detach().numpy()), str(v.dtype)


def _tree(lib, out, leaves):
    """A JSON description of ``out``'s structure; tensor leaves appended to ``leaves``."""
    if isinstance(out, lib.Tensor):
        leaves.append(out)
        return {"tensor": len(leaves) - 1}
    if isinstance(out, tuple) and getattr(type(out), "__match_args__", None):
        # a named tuple, or one of torch's return types (structseqs such as torch.return_types.max)
        return {"namedtuple": list(type(out).__match_args__), "items": [_tree(lib, v, leaves) for v in out]}
    if isinstance(out, (tuple, list)):
        return {"list" if isinstance(out, list) else "tuple": [_tree(lib, v, leaves) for v in out]}
    if isinstance(out, dict):
        return {"dict": {str(k): _tree(lib, v, leaves) for k, v in out.items()}}
    if out is None:
        return {"none": True}
    if isinstance(out, (bool, int, float, str)):
        return {"py": type(out).__name__, "value": out}
    raise TypeError(f"a case returned {type(out).__name__}, which the parity harness cannot compare")


def run(lib, case, fn=None):
    """Call the case with ``lib``: {"tree", "values", "dtypes", "grads"} (grads per arg: an array,
    or None where the arg got no gradient or is not differentiated)."""
    fn = fn or case.fn
    args = []
    for k, a in enumerate(case.args):
        if isinstance(a, np.ndarray):
            args.append(lib.tensor(a, requires_grad=case.wants_grad(k, a)))
        else:
            args.append(a)
    out = fn(lib, *args)
    leaves = []
    tree = _tree(lib, out, leaves)
    infos = [_leaf_info(lib, v) for v in leaves]
    result = {"tree": tree, "values": [i[0] for i in infos], "dtypes": [i[1] for i in infos], "grads": []}
    wrt = [(k, t) for k, t in enumerate(args) if isinstance(case.args[k], np.ndarray) and case.wants_grad(k, case.args[k])]
    diff = [v for v in leaves if v.requires_grad and v.dtype in (lib.float32, lib.float64)]
    grads = [None] * len(args)
    if wrt and diff:
        total = 0
        for j, v in enumerate(diff):
            w = np.random.default_rng(j).standard_normal(tuple(v.shape))
            total = total + (v * lib.tensor(w, dtype=v.dtype)).sum()
        got = lib.autograd.grad(total, [t for _, t in wrt], allow_unused=True)
        for (k, _), g in zip(wrt, got):
            grads[k] = None if g is None else _leaf_info(lib, g)[0]
    result["grads"] = grads
    return result


# ------------------------------------------------------------------ references on disk
def _paths(group):
    return REFS / f"{group}.npz", REFS / f"{group}.json"


_LOADED = {}


def reference(group, name):
    """The stored torch result of case ``name`` of ``group`` (None if it was never written)."""
    if group not in _LOADED:
        npz, js = _paths(group)
        if not npz.exists() or not js.exists():
            _LOADED[group] = {}
        else:
            meta = json.loads(js.read_text())
            with np.load(npz, allow_pickle=False) as arrays:
                store = {k: arrays[k] for k in arrays.files}
            for case_name, m in meta.items():
                m["values"] = [store[f"{case_name}/v{i}"] for i in range(len(m["dtypes"]))]
                m["grads"] = [store.get(f"{case_name}/g{i}") if flag else None for i, flag in enumerate(m["has_grad"])]
            _LOADED[group] = meta
    return _LOADED[group].get(name)


def write_group(group, cases):
    """Run every case with torch and store the results (the reference files of ``group``)."""
    import torch
    REFS.mkdir(exist_ok=True)
    meta, arrays = {}, {}
    for case in cases:
        torch.manual_seed(0)
        r = run(torch, case)
        meta[case.name] = {"tree": r["tree"], "dtypes": r["dtypes"], "has_grad": [g is not None for g in r["grads"]],
                           "torch": torch.__version__.split("+")[0]}
        for i, v in enumerate(r["values"]):
            arrays[f"{case.name}/v{i}"] = v
        for i, g in enumerate(r["grads"]):
            if g is not None:
                arrays[f"{case.name}/g{i}"] = g
    npz, js = _paths(group)
    np.savez_compressed(npz, **arrays)
    js.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    _LOADED.pop(group, None)


# ------------------------------------------------------------------ comparing
def compare(got, want, case, what):
    """Structure, dtypes, values and gradients of two results equal (values within tolerance)."""
    assert got["tree"] == want["tree"], f"{case.name} ({what}): return structure {got['tree']} != {want['tree']}"
    assert got["dtypes"] == want["dtypes"], f"{case.name} ({what}): dtypes {got['dtypes']} != {want['dtypes']}"
    for i, (g, w) in enumerate(zip(got["values"], want["values"])):
        assert g.shape == w.shape, f"{case.name} ({what}): output {i} shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol, equal_nan=True,
                                   err_msg=f"{case.name} ({what}): output {i}")
    for i, (g, w) in enumerate(zip(got["grads"], want["grads"])):
        assert (g is None) == (w is None), f"{case.name} ({what}): gradient of arg {i} is {g is None and 'None'} " \
                                           f"where the reference has {w is None and 'None' or 'a value'}"
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-6), equal_nan=True,
                                       err_msg=f"{case.name} ({what}): gradient of arg {i}")


def live_torch():
    """The torch module where it imports (the live comparison), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def check(case, group):
    """d2s eager equals torch (stored, and live where torch imports); the converted, saved and
    exported forms equal d2s eager, each where the case allows."""
    import d2s
    if group.startswith("tests."):
        group = group[len("tests."):]
    got = run(d2s, case)
    want = reference(group, case.name)
    torch = live_torch()
    if want is None:
        raise AssertionError(f"no stored torch result for {group}::{case.name}: write it with "
                             f"`python -m tests.torch_parity {group}` where torch is installed")
    compare(got, want, case, "d2s eager vs stored torch")
    if torch is not None:
        torch.manual_seed(0)
        compare(got, run(torch, case), case, "d2s eager vs live torch")
    if case.forms["static"] is True:
        check_static(case, got)


def _tensor_positions(case):
    return [k for k, a in enumerate(case.args) if isinstance(a, np.ndarray)]


def _bound(case):
    """The case as a function of its array args alone (its Python args bound)."""
    pos = _tensor_positions(case)

    def fn(*tensors):
        import d2s
        args = list(case.args)
        for k, t in zip(pos, tensors):
            args[k] = t
        return case.fn(d2s, *args)
    return fn


def check_static(case, eager):
    """The case converted with ``to_static`` equals eager (values, structure, gradients); then
    its saved program under ``d2s_runtime`` and its ONNX export, where the case allows."""
    import d2s
    converted = d2s.jit.to_static(case.fn)
    compare(run(d2s, case, fn=converted), eager, case, "to_static vs eager")
    pos = _tensor_positions(case)
    if not pos:
        return
    arrays = [case.args[k] for k in pos]
    specs = [d2s.jit.InputSpec(list(a.shape), str(a.dtype), name=f"x{i}") for i, a in enumerate(arrays)]
    flat = [np.asarray(v) for v in eager["values"]]
    if case.forms["dynamic"] is True:
        dyn = [d2s.jit.InputSpec([None] * a.ndim, str(a.dtype)) for a in arrays]
        outs = d2s.jit.to_static(_bound(case), input_spec=dyn)(*[d2s.tensor(a) for a in arrays])
        _compare_flat([np.asarray(o.numpy()) for o in _flatten_tensors(outs)], flat, case,
                      "to_static with dynamic dims vs eager")
    bound = d2s.jit.to_static(_bound(case))
    if case.forms["saved"] is True:
        import d2s_runtime
        with tempfile.TemporaryDirectory() as tmp:
            d2s.jit.save(bound, os.path.join(tmp, "m"), input_spec=specs)
            outs = d2s_runtime.load(os.path.join(tmp, "m"))(*arrays)
        _compare_flat(_flatten(outs), flat, case, "saved program (d2s_runtime) vs eager")
    if case.forms["onnx"] is True:
        import onnxruntime as ort
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            d2s.onnx.export(bound, path, specs)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            outs = sess.run(None, {f"x{i}": a for i, a in enumerate(arrays)})
        _compare_flat(outs, flat, case, "ONNX (onnxruntime) vs eager")


def _flatten_tensors(out):
    import d2s
    if isinstance(out, dict):
        return [a for v in out.values() for a in _flatten_tensors(v)]
    if isinstance(out, (tuple, list)):
        return [a for v in out for a in _flatten_tensors(v)]
    return [out] if isinstance(out, d2s.Tensor) else []


def _flatten(out):
    if isinstance(out, dict):
        return [a for v in out.values() for a in _flatten(v)]
    if isinstance(out, (tuple, list)):
        return [a for v in out for a in _flatten(v)]
    if out is None:  # a None among the outputs (MultiheadAttention's weights without need_weights)
        return []
    return [np.asarray(out)]


def _compare_flat(got, want, case, what):
    assert len(got) == len(want), f"{case.name} ({what}): {len(got)} outputs != {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, \
            f"{case.name} ({what}): output {i} {g.dtype}{g.shape} != {w.dtype}{w.shape}"
        np.testing.assert_allclose(g, w, rtol=max(case.rtol, 1e-6), atol=max(case.atol, 1e-6), equal_nan=True,
                                   err_msg=f"{case.name} ({what}): output {i}")


# ------------------------------------------------------------------ writing the references
def _groups(names):
    """(group, TORCH_CASES) of the named test modules, or of every one that defines TORCH_CASES."""
    root = Path(__file__).resolve().parent
    if not names:
        names = sorted(".".join(p.relative_to(root).with_suffix("").parts) for p in root.rglob("test_*.py")
                       if "TORCH_CASES" in p.read_text())
    for name in names:
        module = importlib.import_module(f"tests.{name}")
        yield name, module.TORCH_CASES


def main(argv):
    sys.path.append(str(Path(__file__).resolve().parent))  # as tests/conftest.py does
    for group, cases in _groups(argv):
        write_group(group, cases)
        print(f"{group}: {len(cases)} cases -> {_paths(group)[0]}")


if __name__ == "__main__":
    main(sys.argv[1:])
