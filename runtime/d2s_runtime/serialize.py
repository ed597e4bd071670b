"""Saving and loading programs: versioned JSON for the program, ``.npz`` for arrays.

A saved model is a directory::

    program.json     {"format": "d2s-program", "version": 1, "program": {...}}
    params.npz       one array per program param, keyed by param var name (optional)
    constants.npz    one array per program constant, keyed by var name (optional)
    meta.json        optional free-form JSON written by the saver: input/output specs,
                     output structure, producer version... (``load_program`` returns it)

``program`` in program.json is::

    {"name": str, "inputs": [name], "params": [name], "constants": [name], "outputs": [name],
     "block": block}
    block = {"inputs": [name], "outputs": [name],
             "vars": {name: {"shape": [int | null], "dtype": str}},
             "ops": [{"type": str, "inputs": [name], "outputs": [name], "attrs": {...},
                      "blocks": {key: block}}]}

Loading treats the files as untrusted and never runs code (see ``untrusted.py``): JSON is
parsed strictly (no duplicate keys, bounded depth and integers, clean strings), paths stay in
the directory, and each ``.npy`` header is checked against the program and a byte budget
(``max_bytes``) before its data is read, never as a pickle. The loader checks the format name
and version, the schema, that every op type is known, every shape and dtype is valid, every
array matches its var's type, and finally runs :func:`~d2s_runtime.verify.verify`; anything
else raises :class:`FormatError` saying which file and what is wrong.
"""
import json
import os

import numpy as np

from .device import to_host
from .dtypes import DTYPES
from .errors import ExecutionError, FormatError
from .tiers import TieredRunner
from .ir import Block, Op, Program
from .ops.guard import GuardError
from .ops import OPS, TensorType
from .ops.registry import block_keys
from .replace_dir import read_whole
from .saved_model import META_FILE, Signature, method_dir, method_paths
from .untrusted import DEFAULT_MAX_BYTES, Budget, inside, nbytes, parse_json, read_json, read_npz, regular_file, safe_text
from .verify import VerifyError, verify
from .version import __version__

FORMAT = "d2s-program"
VERSION = 1
PROGRAM_FILE = "program.json"
PARAMS_FILE = "params.npz"
CONSTANTS_FILE = "constants.npz"
MAX_NDIM = 32
MAX_DIM = 1 << 48  # numpy needs element counts that fit an int64; no real dim comes near


# ---------------------------------------------------------------- saving
def _block_to_json(block):
    return {
        "inputs": list(block.inputs),
        "outputs": list(block.outputs),
        "vars": {n: {"shape": list(v.type.shape), "dtype": v.type.dtype} for n, v in block.vars.items()},
        "ops": [{"type": op.type, "inputs": list(op.inputs), "outputs": list(op.outputs),
                 "attrs": _plain(op.attrs, op), "blocks": {k: _block_to_json(b) for k, b in op.blocks.items()}}
                for op in block.ops],
    }


def _plain(value, op):
    """Attrs as JSON data; anything else is a bug in whoever built the op, so say which op."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v, op) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, op) for k, v in value.items()}
    raise TypeError(f"save_program: op {op.type!r} (outputs {op.outputs}) has an attr value {value!r} of type "
                    f"{type(value).__name__}, which is not plain JSON data")


def program_to_json(program):
    """The JSON-able dict saved in program.json."""
    return {"format": FORMAT, "version": VERSION, "program": {
        "name": program.name, "inputs": list(program.inputs), "params": list(program.params),
        "constants": list(program.constants), "outputs": list(program.outputs),
        "block": _block_to_json(program.block)}}


def _host(a):
    return to_host(a)


def save_program(program, dirpath, params=None, meta=None):
    """Write ``program`` (and its param arrays and ``meta``) to directory ``dirpath``.

    Args:
        program: the Program to save (verified first).
        dirpath: the directory; created if missing, files in it overwritten.
        params: arrays for the program's params, by param var name (all or none of them).
        meta: JSON-able dict saved as meta.json (input/output specs and anything else).
    """
    program.verify()
    params = dict(params or {})
    unknown = [k for k in params if k not in program.params]
    if unknown:
        raise KeyError(f"save_program: {unknown} are not params of the program (its params: {program.params})")
    program_text, meta_text = _checked_texts(program, meta)
    os.makedirs(dirpath, exist_ok=True)
    arrays = {k: _host(v) for k, v in params.items()}
    for k, a in arrays.items():
        t = program.block.lookup(k).type
        if not _fits(a, t):
            raise ValueError(f"save_program: param {k!r} is {a.dtype.name}{list(a.shape)} but the program types it {t}")
    _write_npz(os.path.join(dirpath, PARAMS_FILE), arrays)
    _write_npz(os.path.join(dirpath, CONSTANTS_FILE), {k: _host(v) for k, v in program.constants.items()})
    if meta is not None:
        with open(os.path.join(dirpath, META_FILE), "wb") as f:
            f.write(meta_text)
    elif os.path.exists(os.path.join(dirpath, META_FILE)):
        os.remove(os.path.join(dirpath, META_FILE))
    # program.json last: a directory with a program.json is complete
    with open(os.path.join(dirpath, PROGRAM_FILE), "wb") as f:
        f.write(program_text)
    return dirpath


def _checked_texts(program, meta):
    """The JSON texts of program.json and meta.json, after the loader's own checks of them (so
    nothing is written that :func:`load_program` would refuse: control characters in names,
    integers over 20 digits, nesting deeper than 128, a malformed meta). ValueError otherwise."""
    try:
        program_text = json.dumps(program_to_json(program)).encode("utf-8")
        program_from_json(parse_json(program_text, PROGRAM_FILE))
        meta_text = None
        if meta is not None:
            meta_text = json.dumps(meta, indent=1).encode("utf-8")
            Signature(program, parse_json(meta_text, META_FILE), META_FILE)
    except FormatError as e:
        raise ValueError(f"cannot save: the loader would refuse the saved model ({e}); nothing was written") from None
    except RecursionError:
        raise ValueError("cannot save: its structure is nested too deep for JSON; nothing was written") from None
    return program_text, meta_text


def _write_npz(path, arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)


# ---------------------------------------------------------------- loading
def _fail(where, msg):
    raise FormatError(f"{where}: {msg}")


def _expect(cond, where, msg):
    if not cond:
        _fail(where, msg)


def _names(value, where, what):
    _expect(isinstance(value, list) and all(isinstance(n, str) and n for n in value), where,
            f"{what} must be a list of var names (strings)")
    return list(value)


def _type_from_json(v, where):
    _expect(isinstance(v, dict) and set(v) >= {"shape", "dtype"}, where, "a var needs 'shape' and 'dtype'")
    shape, dtype = v["shape"], v["dtype"]
    _expect(isinstance(shape, list) and len(shape) <= MAX_NDIM and
            all(d is None or (type(d) is int and 0 <= d <= MAX_DIM) for d in shape), where,
            f"bad shape {safe_text(shape, 120)}: a list of at most {MAX_NDIM} ints in [0, {MAX_DIM}] or null (unknown)")
    _expect(isinstance(dtype, str) and dtype in DTYPES, where,
            f"bad dtype {safe_text(dtype)}: one of {', '.join(DTYPES)}")
    return TensorType(shape, dtype)


def _block_from_json(data, parent, where):
    _expect(isinstance(data, dict), where, "a block must be an object")
    missing = {"inputs", "outputs", "vars", "ops"} - set(data)
    _expect(not missing, where, f"a block is missing {sorted(missing)}")
    b = Block(parent=parent)
    b.inputs = _names(data["inputs"], where, "block inputs")
    b.outputs = _names(data["outputs"], where, "block outputs")
    _expect(isinstance(data["vars"], dict), where, "block vars must be an object")
    for name, v in data["vars"].items():
        b.add_var(name, _type_from_json(v, f"{where}, var {name!r}"))
    _expect(isinstance(data["ops"], list), where, "block ops must be a list")
    for i, o in enumerate(data["ops"]):
        w = f"{where}, op #{i}"
        _expect(isinstance(o, dict) and isinstance(o.get("type"), str), w, "an op needs a string 'type'")
        t = o["type"]
        _expect(t in OPS, w, f"unknown op type {t!r}: this d2s_runtime ({_version()}) does not "
                             "have it; upgrade d2s_runtime or re-export the model")
        attrs = o.get("attrs", {})
        blocks = o.get("blocks", {})
        _expect(isinstance(attrs, dict), w, "attrs must be an object")
        _expect(isinstance(blocks, dict), w, "blocks must be an object")
        _check_json_data(attrs, w)
        op = Op(t, _names(o.get("inputs"), w, "op inputs"), _names(o.get("outputs"), w, "op outputs"), attrs,
                dict.fromkeys(blocks))
        # only structured ops hold sub-blocks, and exactly those of their layout: a dummy entry
        # on a primitive would otherwise skip its type check
        want = block_keys(op)
        _expect(set(blocks) == want, w, f"op {t!r} has blocks {sorted(blocks)}, it must have {sorted(want)}")
        op.blocks = {k: _block_from_json(sb, b, f"{w} block {k!r}") for k, sb in blocks.items()}
        b.ops.append(op)
    return b


def _check_json_data(value, where):
    """Attr values must be plain JSON data; NaN/inf floats are allowed (clip bounds)."""
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        return
    if isinstance(value, list):
        for v in value:
            _check_json_data(v, where)
        return
    if isinstance(value, dict):
        for v in value.values():
            _check_json_data(v, where)
        return
    _fail(where, f"attr value {value!r} is not JSON data")


def _version():
    return f"version {__version__}"


def program_from_json(doc, where=PROGRAM_FILE):
    """Build and verify a Program from the dict saved in program.json."""
    _expect(isinstance(doc, dict), where, "the top level must be a JSON object")
    _expect(doc.get("format") == FORMAT, where, f"not a d2s program (format {doc.get('format')!r}, "
                                                f"expected {FORMAT!r})")
    version = doc.get("version")
    _expect(type(version) is int, where, f"bad version {version!r}")
    _expect(1 <= version <= VERSION, where, f"format version {version} is not supported by this d2s_runtime "
                                            f"(it reads versions 1..{VERSION}); upgrade d2s_runtime")
    data = doc.get("program")
    _expect(isinstance(data, dict), where, "missing 'program' object")
    missing = {"inputs", "params", "constants", "outputs", "block"} - set(data)
    _expect(not missing, where, f"the program is missing {sorted(missing)}")
    p = Program()
    p.name = data.get("name", "program") if isinstance(data.get("name", ""), str) else "program"
    p.inputs = _names(data["inputs"], where, "program inputs")
    p.params = _names(data["params"], where, "program params")
    const_names = _names(data["constants"], where, "program constants")
    p.outputs = _names(data["outputs"], where, "program outputs")
    p.block = _block_from_json(data["block"], None, f"{where}, global block")
    p.constants = {n: None for n in const_names}
    return p


def _fits(a, t):
    return (a.dtype.name == t.dtype and a.ndim == len(t.shape)
            and all(d is None or d == s for d, s in zip(t.shape, a.shape)))


def _check_declared_sizes(program, where, max_bytes):
    """Refuse, before any array is read, a var whose declared size alone exceeds ``max_bytes``
    and params/constants whose declared sizes together do."""
    total = 0
    feeds = set(program.params) | set(program.constants)
    for block in [program.block, *program.block.sub_blocks()]:
        for name, var in block.vars.items():
            shape = var.type.shape
            if any(d is None for d in shape):
                continue
            n = nbytes(shape, var.type.dtype)
            if n >= 1 << 62:
                _fail(where, f"var {name!r} declares {var.type}: more elements than any array can hold")
            if max_bytes is not None and n > max_bytes:
                _fail(where, f"var {name!r} declares {var.type}, {n} bytes, over max_bytes={max_bytes}; if the "
                             "file is trusted, load it with a larger max_bytes (or max_bytes=None)")
            if block is program.block and name in feeds:
                total += n
    if max_bytes is not None and total > max_bytes:
        _fail(where, f"the params and constants declare {total} bytes, over max_bytes={max_bytes}; if the file "
                     "is trusted, load it with a larger max_bytes (or max_bytes=None)")


def load_program(dirpath, max_bytes=DEFAULT_MAX_BYTES):
    """Load a directory written by :func:`save_program`, treating its files as untrusted.

    Args:
        dirpath: the model directory.
        max_bytes: the most bytes of arrays the model may declare and load (default 4 GiB);
            every shape is checked against it before any array data is read. ``None``: no cap.

    Returns:
        ``(program, params, meta)``: the verified Program, a dict of param arrays (empty if
        none were saved) and the meta dict (``{}`` without meta.json). All from one save: a
        save replacing the directory meanwhile is never mixed in (see ``replace_dir``).
    """
    return read_whole(dirpath, lambda root: _read_program(root, dirpath, Budget(max_bytes), max_bytes))


def read_model(dirpath, max_bytes=DEFAULT_MAX_BYTES):
    """The whole save at ``dirpath``: ``(program, params, meta, methods)``, where ``methods``
    maps each saved method's name (meta ``methods``) to its own ``(program, params, meta)``,
    every file read from the same directory (one save, never two mixed) and counted against
    one ``max_bytes``."""
    def read(root):
        budget = Budget(max_bytes)
        program, params, meta = _read_program(root, dirpath, budget, max_bytes)
        methods = {}
        for name, rel in method_paths(meta, os.path.join(dirpath, META_FILE)).items():
            sub = inside(root, os.path.join(root, rel), os.path.join(dirpath, META_FILE), f"directory of method {name!r}")
            methods[name] = _read_program(sub, os.path.join(dirpath, rel), budget, max_bytes)
        return program, params, meta, methods
    return read_whole(dirpath, read)


def _read_program(root, shown, budget, max_bytes):
    """``(program, params, meta)`` from directory ``root`` (errors name ``shown``, the path the
    caller gave, not the descriptor path ``root`` may be)."""
    if not os.path.isdir(root):
        raise FormatError(f"{shown}: not a directory holding a saved d2s program")
    ppath, pshown = os.path.join(root, PROGRAM_FILE), os.path.join(shown, PROGRAM_FILE)
    if not regular_file(root, ppath, pshown):
        raise FormatError(f"{pshown}: missing; {shown} holds no saved d2s program")
    program = program_from_json(read_json(ppath, where=pshown), pshown)
    gb = program.block
    for n in list(program.params) + list(program.constants) + list(program.inputs):
        _expect(n in gb.vars, pshown, f"program input/param/constant {n!r} has no var in the global block")
    _check_declared_sizes(program, pshown, max_bytes)
    cpath, cshown = os.path.join(root, CONSTANTS_FILE), os.path.join(shown, CONSTANTS_FILE)
    const_names = list(program.constants)
    par_path, par_shown = os.path.join(root, PARAMS_FILE), os.path.join(shown, PARAMS_FILE)
    # every header (shape, dtype, size) is checked before any array data is read
    program.constants = {}
    if const_names:
        if not regular_file(root, cpath, cshown):
            _fail(cshown, f"missing file (the program needs arrays {const_names[:5]}"
                          f"{'...' if len(const_names) > 5 else ''})")
        program.constants = read_npz(cpath, cshown, const_names, lambda n: gb.vars[n].type, budget)
    params = {}
    if program.params and regular_file(root, par_path, par_shown):
        params = read_npz(par_path, par_shown, list(program.params), lambda n: gb.vars[n].type, budget)
    meta = {}
    mpath, mshown = os.path.join(root, META_FILE), os.path.join(shown, META_FILE)
    if regular_file(root, mpath, mshown):
        meta = read_json(mpath, where=mshown)
        _expect(isinstance(meta, dict), mshown, "meta must be a JSON object")
    try:
        verify(program)
    except VerifyError as e:
        raise FormatError(f"{pshown}: the program is malformed: {e}") from None
    return program, params, meta


# ---------------------------------------------------------------- the deployed model
class Model:
    """A loaded program, callable on arrays: ``model(*arrays)``.

    Attributes:
        program: the Program; params: its param arrays; meta: the saved meta dict;
        runner: its :class:`~d2s_runtime.tiers.TieredRunner` (the tier ladder calls climb);
        executor: the prepared :class:`~d2s_runtime.executor.Executor` it runs.
    """

    def __init__(self, program, params, meta, device="cpu", parallel=False, path=None, max_bytes=DEFAULT_MAX_BYTES,
                 max_loop_iterations=None, backend="python", methods=None):
        missing = [n for n in program.params if n not in params]
        if missing:
            raise FormatError(f"the saved model has no arrays for params {missing}; save it with params=")
        self.program, self.params, self.meta = program, params, meta
        self.path, self.device, self._methods = path, device, {}
        self._method_files = methods  # {name: (program, params, meta)} read with this model (one save)
        self._load_options = {"max_bytes": max_bytes, "max_loop_iterations": max_loop_iterations, "backend": backend}
        # input names/specs and output structure from meta (checked here, before any call)
        self.signature = Signature(program, meta, os.path.join(path or ".", META_FILE))
        self.runner = TieredRunner(program, device, backend, parallel=parallel, params=params,
                                   max_loop_iterations=max_loop_iterations)
        self.executor = self.runner.executor

    @property
    def backend(self):
        """The backend running the model now (``'python'`` or ``'native'``)."""
        return self.runner.backend

    def backend_report(self):
        """One line: which backend runs the model, and why not the native one where it was
        asked for (see :meth:`TieredRunner.backend_report`)."""
        return self.runner.backend_report()

    def wait_native(self, timeout=None):
        """Wait for a pending native compile (see :meth:`TieredRunner.wait_native`)."""
        return self.runner.wait_native(timeout)

    def run(self, *arrays):
        """The outputs as a list."""
        return self.executor.run(*arrays)

    def __call__(self, *arrays, **named):
        """Run on input arrays given by position or by name; shapes and dtypes are checked
        first. Returns the outputs nested as the saved function returned them (one array, or a
        tuple of them, for a program saved without d2s.jit.save's meta)."""
        try:
            out = self.executor.run(*self.signature.bind(arrays, named))
        except ExecutionError as e:
            if isinstance(e.__cause__, GuardError):  # a saved trace's guard: say so, unwrapped
                raise e.__cause__ from None
            raise
        return self.signature.outputs(out)

    def __getattr__(self, name):
        """Another saved method of the model (``model.encode(x)``), loaded on first use."""
        if name.startswith("_") or "signature" not in self.__dict__:
            raise AttributeError(name)
        m = self._methods.get(name)
        if m is None:
            if self._method_files is None:  # a Model built from a program by hand: read the method now
                m = load(method_dir(self.path, self.signature, name), device=self.device, **self._load_options)
            else:
                method_dir(self.path, self.signature, name)  # (a clear error for a method not saved)
                program, params, meta = self._method_files[name]
                opts = {k: v for k, v in self._load_options.items() if k != "max_bytes"}
                m = Model(program, params, meta, device=self.device, path=os.path.join(self.path, self.signature.methods[name]),
                          **opts)
            self._methods[name] = m
        return m

    def __repr__(self):
        return f"<d2s_runtime.Model {self.program!r}>"


def load(path, device="cpu", parallel=False, max_bytes=DEFAULT_MAX_BYTES, max_loop_iterations=None,
         backend="python"):
    """Load a saved model directory and return a callable :class:`Model`.

    The files are untrusted input: nothing in them runs as code, nothing outside ``path`` is
    read, and every shape and dtype is checked before any array data is read.

    Args:
        path: the directory (written by ``d2s.jit.save`` or :func:`save_program`).
        device: ``'cpu'`` (numpy) or ``'gpu'`` (cupy).
        parallel: run independent ops concurrently (see :class:`~d2s_runtime.Executor`).
        max_bytes: the most bytes of arrays the model may declare and load (default 4 GiB);
            a model over it is refused with a FormatError before its arrays are read.
            ``None``: no cap (for trusted files).
        max_loop_iterations: if set, a ``while`` loop of the program that runs more iterations
            than this raises :class:`~d2s_runtime.LoopLimitError` naming the op (a server's
            bound on a program that would never end); ``None``: no bound.
        backend: ``'python'``, ``'native'`` or ``'auto'`` (see :class:`~d2s_runtime.Executor`;
            a model whose compiled form is in the native disk cache runs natively at once).
    """
    program, params, meta, methods = read_model(path, max_bytes=max_bytes)
    return Model(program, params, meta, device=device, parallel=parallel, path=path, max_bytes=max_bytes,
                 max_loop_iterations=max_loop_iterations, backend=backend, methods=methods)
