"""The calling convention of a saved model, read from its meta.json (numpy only).

``d2s.jit.save`` writes, next to the program, a meta dict::

    {"format": "d2s-saved-model", "version": 1, "d2s_version": str, "name": str,
     "inputs":  [{"name": str, "shape": [int | null], "dtype": str}],
     "outputs": [{"name": str, "shape": [int | null], "dtype": str}],
     "output_tree": tree,     # how the flat outputs nest: see build_outputs
     "methods": {name: relative directory}}   # other converted methods (top level only)

A :class:`Signature` checks that meta once at load time (a malformed one is a FormatError,
like any other bad file) and then, per call, binds positional or named arrays to the inputs,
checks their shapes and dtypes (a clear :class:`InputError` naming the input, never a crash
deep inside a kernel), and nests the outputs as the original function returned them.
Programs saved without this meta (plain ``save_program``) keep the bare convention: inputs
checked against the program's own types, one array or a tuple of arrays out.
"""
import os
import warnings

import numpy as np

from .dtypes import DTYPES
from .errors import FormatError
from .untrusted import inside

SAVED_MODEL_FORMAT = "d2s-saved-model"
SAVED_MODEL_VERSION = 1
META_FILE = "meta.json"


class InputError(TypeError, ValueError):
    """Inputs that do not fit a saved model: wrong number, name, shape or dtype."""


def _fail(where, msg):
    raise FormatError(f"{where}: {msg}")


def _check_tree(tree, n_out, where, depth=0):
    """Raise FormatError unless ``tree`` is a well-formed output tree over ``n_out`` leaves."""
    if depth > 64 or not isinstance(tree, dict) or len(tree) != 1:
        _fail(where, f"bad output_tree node {tree!r}")
    (kind, value), = tree.items()
    if kind == "leaf":
        if type(value) is not int or not 0 <= value < n_out:
            _fail(where, f"output_tree leaf {value!r} is not an output index in [0, {n_out})")
    elif kind in ("tuple", "list"):
        if not isinstance(value, list):
            _fail(where, f"output_tree {kind} must hold a list")
        for v in value:
            _check_tree(v, n_out, where, depth + 1)
    elif kind == "dict":
        if not isinstance(value, list) or not all(isinstance(kv, list) and len(kv) == 2 for kv in value):
            _fail(where, "output_tree dict must hold [key, subtree] pairs")
        for k, v in value:
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                _fail(where, f"output_tree dict key {k!r} is not a plain value")
            _check_tree(v, n_out, where, depth + 1)
    elif kind == "const":
        if value is not None and not isinstance(value, (str, int, float, bool)):
            _fail(where, f"output_tree const {value!r} is not a plain value")
    else:
        _fail(where, f"unknown output_tree node kind {kind!r}")


def _check_specs(specs, names, program, where, what):
    if not isinstance(specs, list) or len(specs) != len(names):
        _fail(where, f"meta {what} must list {len(names)} specs (the program has {len(names)} {what})")
    out = []
    for k, (s, var) in enumerate(zip(specs, names)):
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            _fail(where, f"meta {what}[{k}] needs a string 'name'")
        t = program.block.lookup(var).type
        if s.get("dtype") != t.dtype or s.get("shape") != list(t.shape):
            _fail(where, f"meta {what}[{k}] ({s.get('name')}) says {s.get('dtype')}{s.get('shape')} but the "
                         f"program types it {t}")
        out.append(s["name"])
    return out


def build_outputs(tree, arrays):
    """The nested structure ``tree`` describes, with leaf ``i`` replaced by ``arrays[i]``."""
    (kind, value), = tree.items()
    if kind == "leaf":
        return arrays[value]
    if kind == "tuple":
        return tuple(build_outputs(v, arrays) for v in value)
    if kind == "list":
        return [build_outputs(v, arrays) for v in value]
    if kind == "dict":
        return {k: build_outputs(v, arrays) for k, v in value}
    return value


class Signature:
    """Input binding and checking, and output nesting, of one saved program."""

    def __init__(self, program, meta, where="meta.json"):
        self.program = program
        self.types = [program.block.lookup(n).type for n in program.inputs]
        if meta.get("format") == SAVED_MODEL_FORMAT:
            version = meta.get("version")
            if type(version) is not int or not 1 <= version <= SAVED_MODEL_VERSION:
                _fail(where, f"saved-model meta version {version!r} is not supported by this d2s_runtime "
                             f"(it reads versions 1..{SAVED_MODEL_VERSION}); upgrade d2s_runtime")
            self.input_names = _check_specs(meta.get("inputs"), program.inputs, program, where, "inputs")
            self.output_names = _check_specs(meta.get("outputs"), program.outputs, program, where, "outputs")
            self.tree = meta.get("output_tree")
            _check_tree(self.tree, len(program.outputs), where)
            self.methods = method_paths(meta, where)
            if meta.get("training") is True:
                _warn_training(program, where)
        else:
            self.input_names = list(program.inputs)
            self.output_names = list(program.outputs)
            n = len(program.outputs)
            self.tree = {"leaf": 0} if n == 1 else {"tuple": [{"leaf": i} for i in range(n)]}
            self.methods = {}
        if len(set(self.input_names)) != len(self.input_names):
            _fail(where, f"input names {self.input_names} are not distinct")

    def describe(self):
        return ", ".join(f"{n}: {t}" for n, t in zip(self.input_names, self.types))

    def bind(self, args, named):
        """The input arrays in program order, from positional ``args`` and ``named`` ones."""
        n = len(self.types)
        if len(args) > n:
            raise InputError(f"the model takes {n} input(s) ({self.describe()}), got {len(args)}")
        values = list(args) + [None] * (n - len(args))
        for name, v in named.items():
            if name not in self.input_names:
                raise InputError(f"the model has no input named {name!r}; its inputs are {self.describe()}")
            k = self.input_names.index(name)
            if k < len(args):
                raise InputError(f"input {name!r} given both by position and by name")
            values[k] = v
        missing = [self.input_names[k] for k, v in enumerate(values) if v is None]
        if missing:
            raise InputError(f"missing input(s) {missing}; the model takes {self.describe()}")
        return [self._checked(k, v) for k, v in enumerate(values)]

    def _checked(self, k, value):
        t, name = self.types[k], self.input_names[k]
        if not hasattr(value, "dtype") or not hasattr(value, "shape"):
            value = np.asarray(value)
        got = np.dtype(value.dtype)
        want = np.dtype(t.dtype)
        if got.name not in DTYPES or got.kind != want.kind:
            raise InputError(f"input {name!r} must be {t.dtype} {_fmt(t.shape)}, got {got.name} "
                             f"{_fmt(value.shape)}; convert it first (e.g. x.astype('{t.dtype}'))")
        shape = tuple(value.shape)
        if len(shape) != len(t.shape) or any(d is not None and d != s for d, s in zip(t.shape, shape)):
            raise InputError(f"input {name!r} must have shape {_fmt(t.shape)} ('?' is any size), got "
                             f"{_fmt(shape)}")
        return value if got == want else value.astype(want)

    def outputs(self, arrays):
        return build_outputs(self.tree, arrays)


class TrainingModeWarning(UserWarning):
    """A saved model that was in training mode when it was saved."""


def _warn_training(program, where):
    """Say so when a model saved in training mode is loaded: its layers keep their training
    behaviour (dropout drawing new masks on every call)."""
    from .ops import OPS
    random = sorted({op.type for b in program.blocks for op in b.ops if op.type in OPS and OPS[op.type].random})
    what = (f"its dropout stays active (the program draws random numbers: {', '.join(random)}), so every call "
            "gives a different answer" if random else
            "layers that act differently in training (dropout, batch normalization) keep their training behaviour")
    warnings.warn(f"{where}: this model was saved in training mode: {what}. Call model.eval() before "
                  "d2s.jit.save(...) to save its inference behaviour.", TrainingModeWarning, stacklevel=5)


def _fmt(shape):
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _relative(path):
    norm = os.path.normpath(path)
    return (bool(path) and not os.path.isabs(path) and norm.split(os.sep)[0] != ".." and norm != "."
            and "\0" not in path)


def method_paths(meta, where):
    """The saved methods of a model's meta: ``{name: relative directory}`` (FormatError naming
    ``where`` unless every entry is a name and a relative path inside the model); none for a
    program saved without ``d2s.jit.save``'s meta."""
    if not isinstance(meta, dict) or meta.get("format") != SAVED_MODEL_FORMAT:
        return {}
    methods = meta.get("methods", {})
    if not isinstance(methods, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _relative(v) for k, v in methods.items()):
        _fail(where, "meta methods must map names to relative directories inside the model")
    return dict(methods)


def method_dir(root, signature, name):
    """The directory of saved method ``name`` of the model at ``root``."""
    if name not in signature.methods:
        raise AttributeError(f"the saved model has no method {name!r} (its methods: "
                             f"{', '.join(sorted(signature.methods)) or 'none besides the default'})")
    # the path comes from the file: it must stay in the model directory, symlinks resolved
    return inside(root, os.path.join(root, signature.methods[name]), os.path.join(root, META_FILE),
                  f"directory of method {name!r}")
