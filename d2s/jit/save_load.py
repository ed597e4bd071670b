"""``d2s.jit.save`` and ``d2s.jit.load``: a model as a directory that runs without its source.

A saved model is what ``d2s_runtime.serialize.save_program`` writes (versioned program.json,
params.npz, constants.npz) plus a meta.json describing the calling convention (see
``d2s_runtime.saved_model``): input names, shapes with dynamic dims and dtypes; output names,
specs and nesting; the module's names for the params; the d2s version. A module with several
converted methods keeps ``forward`` (or its first converted method) at the top of the directory
and each other method in ``methods/<name>/``::

    model/
      program.json  params.npz  constants.npz  meta.json      # forward
      methods/encode/program.json ...                          # model.encode

``d2s_runtime.load(path)`` runs it with numpy alone; ``d2s.jit.load(path)`` gives a callable
taking and returning d2s Tensors, whose parameters can be fine-tuned: the backward program is
not stored but rebuilt on first use by replaying the saved program through the same gradient
rules that differentiate a ``to_static`` program.
"""
import os
import shutil
import warnings

import numpy as np

import d2s
from d2s_runtime import replace_dir
from d2s_runtime.device import device_of, get_xp
from d2s_runtime.untrusted import DEFAULT_MAX_BYTES

from ..nn.module import Module, Parameter
from ..ops import cast
from ..static.replay import replay_op
from ..tensor import Tensor, get_default_device
from ..guards import find_guard_error, guard_error_from
from .concrete import ConcreteProgram
from .export_support import Exported, converted_methods, module_static_function, program_and_params
from . import config
from .static_function import StaticFunction, _check_backend

METHODS_DIR = "methods"


def _version():
    return d2s.__version__


def _meta(exported, name, methods=None):
    from d2s_runtime.saved_model import SAVED_MODEL_FORMAT, SAVED_MODEL_VERSION
    meta = {"format": SAVED_MODEL_FORMAT, "version": SAVED_MODEL_VERSION, "d2s_version": _version(),
            "producer": "d2s.jit.save", "name": name, "kind": exported.kind,
            "inputs": exported.input_specs, "outputs": exported.output_specs,
            "output_tree": exported.output_tree, "param_names": exported.param_names}
    if exported.training is not None:
        meta["training"] = bool(exported.training)
    if methods:
        meta["methods"] = methods
    return meta


def _exports(obj, input_spec):
    """``[(method name, Exported)]`` for ``obj``, the default method first."""
    if isinstance(obj, Module):
        methods = converted_methods(obj) or {"forward": module_static_function(obj)}
        specs = input_spec if isinstance(input_spec, dict) else {"forward" if "forward" in methods else
                                                                  next(iter(methods)): input_spec}
        unknown = [k for k in specs if k not in methods]
        if unknown:
            raise ValueError(f"input_spec names methods {unknown} that are not converted methods of "
                             f"{type(obj).__name__} (converted: {', '.join(methods)})")
        default = next(iter(methods))
        out = []
        for n, sf in methods.items():
            if n != default and specs.get(n) is None and sf.input_spec is None and not sf.concrete_programs:
                # never called and no spec: nothing says what its inputs are
                warnings.warn(f"d2s.jit.save: method {n!r} of {type(obj).__name__} is not saved: it has no "
                              f"program yet; call it once, or pass input_spec={{{n!r}: [InputSpec(...)]}}",
                              UserWarning, stacklevel=3)
                continue
            out.append((n, program_and_params(sf, specs.get(n))))
        return out
    if isinstance(input_spec, dict):
        raise TypeError("input_spec as a dict {method: specs} is for modules; pass a list of InputSpecs")
    name = "forward"
    if isinstance(obj, StaticFunction):
        name = getattr(obj._fn, "__name__", "forward")
    return [(name, program_and_params(obj, input_spec))]


def save(obj, path, input_spec=None, overwrite=False):
    """Save ``obj`` as a directory that runs without its Python source.

    The save is atomic: the model is written into a temporary sibling directory, flushed to
    disk, and only then exchanged with the earlier one in one step (see
    ``d2s_runtime.replace_dir``), so whatever stops the process midway -- an error, ``kill -9``
    -- ``path`` holds either the earlier model or the new one, whole. What the save writes is
    first checked by the loader's own rules (a name the loader would refuse fails the save,
    before anything is replaced). An earlier model there is replaced as a whole; a directory
    holding anything else is refused unless ``overwrite=True``.

    Args:
        obj: a to_static function, a module (every converted method is saved; a module never
            converted has its ``forward`` converted for the save), a traced function, or a
            Program (its params then cannot be known: use ``d2s_runtime.save_program``).
        path: the directory (created, with its parents, if missing).
        input_spec: ``InputSpec``s for the inputs (``None`` dims stay dynamic in the saved
            program). Optional when the function has its own ``input_spec`` or exactly one
            cached program, and for a traced function. For a module with several converted
            methods, a dict ``{method name: [InputSpec, ...]}``.
        overwrite: save into an existing directory that holds files other than a saved
            model's. Its other files are kept (nothing the save did not create is deleted),
            the model's files are replaced one by one (each replacement atomic, the program
            last).

    Returns:
        ``path``.

    Raises:
        FileExistsError: ``path`` is a file, or a directory with other files and not
            ``overwrite``.
    """
    from d2s_runtime.serialize import save_program
    exports = _exports(obj, input_spec)
    methods = {n: f"{METHODS_DIR}/{n}" for n, _ in exports[1:]}
    for name, ex in exports:
        if ex.program.params and set(ex.params) != set(ex.program.params):
            raise ValueError(f"cannot save {name}: no values for params "
                             f"{sorted(set(ex.program.params) - set(ex.params))}")
    target = os.path.realpath(path) if os.path.islink(path) else os.fspath(path)
    replace_dir.recover(target)  # a model a killed save moved aside (systems without the exchange)
    kind = _existing(target, overwrite)
    parent = os.path.dirname(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    replace_dir.remove_leftovers(target)
    tmp = replace_dir.sibling(target, "save")
    try:
        for k, (name, ex) in enumerate(exports):
            where = tmp if k == 0 else os.path.join(tmp, methods[name])
            save_program(ex.program, where, params=ex.params, meta=_meta(ex, name, methods if k == 0 else None))
        replace_dir.fsync_tree(tmp)
        if kind == "other":
            _merge(tmp, target)
        else:
            stuck = replace_dir.replace(tmp, target)
            if stuck is not None:
                warnings.warn(f"d2s.jit.save: the model is saved, but the earlier one, moved to {stuck}, could not "
                              "be removed", RuntimeWarning, stacklevel=2)
        replace_dir.fsync_dir(parent)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return path


_MODEL_FILES = {"program.json", "params.npz", "constants.npz", "meta.json"}


def _is_model_dir(path, methods_allowed=True):
    """Whether directory ``path`` holds only what a save writes (a model, its methods)."""
    names = set(os.listdir(path))
    if "program.json" not in names:
        return False
    for n in names - _MODEL_FILES:
        sub = os.path.join(path, n)
        if n != METHODS_DIR or not methods_allowed or os.path.islink(sub) or not os.path.isdir(sub):
            return False
        for m in os.listdir(sub):
            d = os.path.join(sub, m)
            if os.path.islink(d) or not os.path.isdir(d) or not _is_model_dir(d, methods_allowed=False):
                return False
    return all(not os.path.islink(os.path.join(path, n)) for n in names)


def _existing(path, overwrite):
    """What is at ``path``: None (nothing), 'model' (an earlier save, or an empty directory)
    or 'other' (allowed only with ``overwrite``)."""
    if not os.path.lexists(path):
        return None
    if not os.path.isdir(path):
        raise FileExistsError(f"d2s.jit.save: {path} is a file, not a directory; choose another path")
    if not os.listdir(path) or _is_model_dir(path):
        return "model"
    if not overwrite:
        raise FileExistsError(f"d2s.jit.save: {path} holds files that are not a saved d2s model; choose another "
                              "path, or pass overwrite=True to save into it (its other files are kept)")
    return "other"


def _merge(new, target):
    """Move the files of ``new`` into ``target`` one by one (program.json of each model last)."""
    for root, _, files in os.walk(new):
        rel = os.path.relpath(root, new)
        dest = os.path.normpath(os.path.join(target, rel))
        os.makedirs(dest, exist_ok=True)
        for f in sorted(files, key=lambda f: f == "program.json"):
            os.replace(os.path.join(root, f), os.path.join(dest, f))


# ------------------------------------------------------------------ loading
class LoadedFunction:
    """A saved model loaded into d2s: call it on tensors (or arrays), by position or by input
    name; it returns d2s Tensors nested as the saved function returned them.

    Its parameters (``parameters()``, ``named_parameters()``) are d2s Parameters: gradients flow
    to them (and to inputs that require grad), so a loaded model can be fine-tuned with an
    optimizer. Other saved methods are attributes (``loaded.encode(x)``).

    Attributes:
        program: the Program. meta: the saved meta dict. input_names, output_names.
    """

    def __init__(self, path, device=None, _shared=None, max_bytes=DEFAULT_MAX_BYTES, backend=None, _files=None):
        from d2s_runtime.saved_model import Signature
        from d2s_runtime.serialize import META_FILE, read_model
        # _files: (program, arrays, meta, methods) already read as one save (the methods' own
        # files, of the same save, are in ``methods``)
        program, arrays, meta, methods = _files if _files is not None else read_model(path, max_bytes=max_bytes)
        self._method_files = methods
        self._max_bytes = max_bytes
        device = get_default_device() if device is None else "gpu" if device == "cuda" else device
        get_xp(device)  # a clear error when the device is unknown or unavailable
        self.backend = _check_backend(backend) or config.backend
        self.path, self.device, self.meta, self.program = path, device, meta, program
        self.signature = Signature(program, meta, os.path.join(path, META_FILE))
        missing = [n for n in program.params if n not in arrays]
        if missing:
            from d2s_runtime.serialize import FormatError
            raise FormatError(f"{path}: the saved model has no arrays for params {missing}")
        shared = {} if _shared is None else _shared
        names = meta.get("param_names", {}) if isinstance(meta.get("param_names"), dict) else {}
        self._params = []
        for var in program.params:
            key = names.get(var, f"{os.path.normpath(path)}:{var}")
            p = shared.get(key)
            if p is None or p.shape != arrays[var].shape:
                p = shared[key] = Parameter(_to_device(arrays[var], device))
            self._params.append((key, p))
        self._shared = shared
        self._methods = {}
        tree = self.signature.tree
        from d2s_runtime.saved_model import build_outputs
        self._entry = ConcreteProgram(program, {v: p for v, (_, p) in zip(program.params, self._params)},
                                      lambda values: build_outputs(tree, values), tree == {"leaf": 0},
                                      self._retrace, device, optimize=False, backend=self.backend)

    @property
    def input_names(self):
        return list(self.signature.input_names)

    @property
    def output_names(self):
        return list(self.signature.output_names)

    def parameters(self):
        return [p for _, p in self._params]

    def named_parameters(self):
        return list(self._params)

    def __call__(self, *args, **named):
        tensors = [a if isinstance(a, Tensor) else None for a in args]
        named_t = {k: v if isinstance(v, Tensor) else None for k, v in named.items()}
        arrays = [a.array if isinstance(a, Tensor) else a for a in args]
        named_a = {k: v.array if isinstance(v, Tensor) else v for k, v in named.items()}
        checked = [self._on_device(name, a) for name, a in
                   zip(self.signature.input_names, self.signature.bind(arrays, named_a))]
        # keep the caller's tensors (their requires_grad matters); wrap the rest
        by_pos = list(tensors) + [None] * (len(checked) - len(tensors))
        for k, v in named_t.items():
            by_pos[self.signature.input_names.index(k)] = v
        leaves = []
        for t, arr in zip(by_pos, checked):
            if t is None or t.array is not arr:
                requires = bool(t is not None and t.requires_grad)
                t2 = Tensor._make(arr)
                if requires:  # a cast input: differentiate through the original tensor's cast
                    t2 = cast(t, str(arr.dtype))
                t = t2
            leaves.append(t)
        try:
            return self._entry.run(leaves)
        except Exception as e:
            g = find_guard_error(e)
            if g is None:
                raise
            # a saved trace met an input that takes another path: the trace's own error
            raise guard_error_from(g) from None

    def _on_device(self, name, arr):
        """Input ``arr`` on this function's device: host data is copied there (as
        ``Executor.run`` does); an array of another device is refused, as torch refuses a CUDA
        tensor given to a CPU module (a silent round trip through the host would hide it)."""
        dev = device_of(arr)
        if dev == self.device:
            return arr
        if isinstance(arr, (np.ndarray, np.generic)):
            return get_xp(self.device).asarray(arr)
        raise RuntimeError(f"input {name!r} is on device {dev!r} but the model was loaded on {self.device!r}: "
                           f"load it with d2s.jit.load(path, device={dev!r}) or move the input with "
                           f".to({self.device!r})")

    def _retrace(self, builder, requires_grad=None):
        """Replay the saved program on new symbolic inputs of ``builder`` (for its backward)."""
        prog = self.program
        types = [prog.block.lookup(n).type for n in prog.inputs]
        sym = [builder.add_input(t.shape, t.dtype, None, bool(requires_grad and requires_grad[i]))
               for i, t in enumerate(types)]
        env = {**dict(zip(prog.inputs, sym)), **{v: p for v, (_, p) in zip(prog.params, self._params)},
               **{n: Tensor._make(a) for n, a in prog.constants.items()}}
        for op in prog.block.ops:
            env.update(zip(op.outputs, replay_op(op, [env[n] for n in op.inputs])))
        return sym, [env[n] for n in prog.outputs]

    def __getattr__(self, name):
        if name.startswith("_") or "signature" not in self.__dict__:
            raise AttributeError(name)
        m = self._methods.get(name)
        if m is None:
            from d2s_runtime.saved_model import method_dir
            method_dir(self.path, self.signature, name)  # (a clear error for a method not saved)
            files = self._method_files[name] + ({},)
            m = self._methods[name] = LoadedFunction(os.path.join(self.path, self.signature.methods[name]), self.device,
                                                     self._shared, self._max_bytes, self.backend, _files=files)
        return m

    def backend_report(self):
        """One line: which backend runs the loaded program (see ``StaticFunction.backend_report``)."""
        return self._entry.backend_report()

    def wait_native(self, timeout=None):
        """Wait for a pending native compile; whether the program runs natively now."""
        self._entry.executor  # prepared (and its compile started) on first use otherwise
        return self._entry.wait_native(timeout)

    def __repr__(self):
        return (f"<d2s.jit.LoadedFunction {self.meta.get('name', self.program.name)} from {self.path}: "
                f"inputs {self.signature.describe()}>")


def _to_device(arr, device):
    return arr if device == "cpu" else get_xp(device).asarray(arr)


def load(path, device=None, max_bytes=DEFAULT_MAX_BYTES, backend=None):
    """Load a directory written by :func:`save` as a :class:`LoadedFunction`.

    Loading never runs code from the files: the program is JSON, the arrays are read with
    ``allow_pickle=False`` after their headers are checked, and everything is validated first
    (a bad file raises ``d2s_runtime.FormatError`` saying which file and what is wrong).
    ``max_bytes`` caps the bytes of arrays the model may declare (default 4 GiB; ``None``:
    no cap), as in ``d2s_runtime.load``. ``device``: where parameters live and the program
    runs ('cpu', 'gpu', a registered device; default: ``d2s.get_default_device()``).
    ``backend``: ``'python'``, ``'native'`` or ``'auto'`` (``None``:
    ``d2s.jit.config.backend``), as in ``d2s.jit.to_static``.
    """
    return LoadedFunction(path, device, max_bytes=max_bytes, backend=backend)


__all__ = ["save", "load", "LoadedFunction", "Exported"]
