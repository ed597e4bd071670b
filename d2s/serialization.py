"""``d2s.save`` and ``d2s.load``: state dicts and nested containers of tensors, in the safetensors
format, with no pickle and no code run on load.

A file is a safetensors file (the format models are shared in): an 8-byte little-endian
header length, a JSON header naming each tensor's dtype, shape and byte range, then the raw
little-endian bytes. d2s reads and writes the format itself (it is that small), so a
``model.safetensors`` written by PyTorch (``safetensors.torch.save_file``) loads with the same
names, shapes and dtypes, and a file d2s writes loads in PyTorch. What is not a tensor -- the
nesting of an optimizer's state (dicts with int keys, lists, tuples), numbers, strings, booleans,
``None``, and the order of keys -- goes into the header's ``__metadata__`` as JSON (key
``"d2s"``), tensors stored flat under their path (``state.0.exp_avg``; a ``state_dict``'s under
its own keys, so other tools read it as they read any checkpoint).

Loading treats the file as hostile: the header is size-capped and parsed with the saved-model
loader's rules (no duplicate keys, bounded nesting and integers, no control characters); every
tensor's dtype, shape and byte range is checked -- inside the data, not overlapping, its size
that of its shape -- and the whole against ``max_bytes`` before any tensor is read. A PyTorch
``.pt``/``.pth`` checkpoint (a pickle) is refused unread, with the way to convert it.
"""
import json
import math
import os
import tempfile

import numpy as np

from d2s_runtime.errors import FormatError
from d2s_runtime.untrusted import DEFAULT_MAX_BYTES, check_text, parse_json, safe_text

from .tensor import Tensor, tensor

MAX_HEADER_BYTES = 100 << 20  # as the safetensors library's own limit
_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "I64": "int64", "I32": "int32", "I16": "int16",
           "I8": "int8", "U8": "uint8", "BOOL": "bool"}
_CODES = {v: k for k, v in _DTYPES.items()}
_META_KEY = "d2s"
_FORMAT = "d2s-container"


class SaveError(TypeError):
    """An object ``d2s.save`` cannot store (it stores tensors, numbers, strings, booleans,
    ``None`` and dicts, lists and tuples of them)."""


# ------------------------------------------------------------------ saving
def save(obj, f):
    """Save ``obj`` -- a state dict, or any nesting of dicts (str or int keys), lists and tuples
    of tensors, numpy arrays, numbers, strings, booleans and ``None`` -- to the file ``f`` (a path)
    in the safetensors format. Written atomically: a reader never sees half a file.

    Args:
        obj: what to save (``model.state_dict()``, ``optimizer.state_dict()``, a dict of both).
        f: the file path (``.safetensors`` by convention).
    """
    tensors = {}
    structure = _encode(obj, "", tensors)  # (a state dict's tensors keep their keys as names)
    names = sorted(tensors)  # as the safetensors library orders them
    header, offset = {}, 0
    for n in names:
        a = tensors[n]
        header[n] = {"dtype": _CODES[a.dtype.name], "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    meta = {"format": "pt",  # PyTorch's loaders expect it
            _META_KEY: json.dumps({"format": _FORMAT, "version": 1, "tree": structure})}
    header = {"__metadata__": meta, **header}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # data starts 8-byte aligned, as the library writes it
    path = os.fspath(f)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(len(text).to_bytes(8, "little"))
            out.write(text)
            for n in names:
                out.write(np.ascontiguousarray(tensors[n]).astype(tensors[n].dtype.newbyteorder("<"), copy=False)
                          .tobytes())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            os.unlink(tmp)


def _is_array(v):
    return isinstance(v, (Tensor, np.ndarray))


def _array(v, where):
    a = v.detach().numpy() if isinstance(v, Tensor) else v
    a = np.asarray(a)
    if a.dtype.name not in _CODES:
        raise SaveError(f"d2s.save: {where or 'the object'} is a {a.dtype.name} array; the safetensors format "
                        f"holds {', '.join(sorted(_CODES))}")
    return a


def _encode(v, path, tensors):
    """The JSON structure of ``v``; its tensors go into ``tensors`` under their path."""
    if _is_array(v):
        name = path or "tensor"
        tensors[name] = _array(v, name)
        return {"t": name}
    if v is None or isinstance(v, (bool, str)):
        return {"v": v}
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return {"i": str(int(v))}  # as text: JSON readers cap integer digits
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return {"f": v if math.isfinite(v) else repr(v)}
    if isinstance(v, dict):
        items = []
        for k, x in v.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise SaveError(f"d2s.save: {path or 'the object'} has a key {k!r} of type {type(k).__name__}; keys "
                                "must be strings or ints")
            items.append([k if isinstance(k, str) else {"i": str(k)}, _encode(x, f"{path}.{k}" if path else str(k),
                                                                               tensors)])
        return {"dict": items}
    if isinstance(v, (list, tuple)):
        kind = "list" if isinstance(v, list) else "tuple"
        return {kind: [_encode(x, f"{path}.{i}" if path else str(i), tensors) for i, x in enumerate(v)]}
    raise SaveError(f"d2s.save: {path or 'the object'} is a {type(v).__name__}; d2s.save stores tensors, numbers, "
                    "strings, booleans, None and dicts, lists and tuples of them (never pickled objects)")


# ------------------------------------------------------------------ loading
def load(f, map_location=None, max_bytes=DEFAULT_MAX_BYTES, weights_only=True):
    """Load what :func:`save` wrote, or any safetensors file (one PyTorch wrote included).

    Args:
        f: the file path.
        map_location: where the tensors go: ``None``/``'cpu'``, ``'gpu'``/``'cuda'``, or a
            ``d2s.device``.
        max_bytes: the most bytes of tensor data the file may declare (default 4 GiB; ``None``:
            no cap); checked from the header before any tensor is read.
        weights_only: accepted for PyTorch's signature; d2s only ever loads data.

    Returns:
        The saved object: a dict of tensors for a state dict or a plain safetensors file, else
        the nesting that was saved.
    """
    path = os.fspath(f)
    device = _device(map_location)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(9)
        # a safetensors header is a JSON object: its "{" tells the file from a pickle or zip whose
        # first bytes a header length can equal (a length of 0x4080 bytes starts with 0x80)
        if head[8:9] != b"{" and (head[:2] == b"PK" or head[:1] == b"\x80"):
            raise FormatError(f"{path}: a pickle-based PyTorch checkpoint (torch.save); d2s never unpickles. Convert "
                              "it once where torch is installed: safetensors.torch.save_file(torch.load(path), "
                              "'model.safetensors'), then d2s.load('model.safetensors')")
        if len(head) < 8:
            raise FormatError(f"{path}: {size} bytes, too short for a safetensors file")
        n = int.from_bytes(head[:8], "little")
        fh.seek(8)
        if n > MAX_HEADER_BYTES or n > size - 8:
            raise FormatError(f"{path}: the header declares {n} bytes but the file holds {size - 8} after the length"
                              if n <= MAX_HEADER_BYTES else
                              f"{path}: a header of {n} bytes is over the {MAX_HEADER_BYTES} accepted")
        header = parse_json(fh.read(n), f"{path} (header)", max_bytes=MAX_HEADER_BYTES)
        entries, meta = _check_header(header, path, size - 8 - n, max_bytes)
        arrays = {}
        for name, (dtype, shape, begin, end) in entries.items():
            fh.seek(8 + n + begin)
            data = fh.read(end - begin)
            if len(data) != end - begin:
                raise FormatError(f"{path}: tensor {safe_text(name)} is truncated")
            arrays[name] = np.frombuffer(data, np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)
    tensors = {k: tensor(a, device=device) for k, a in arrays.items()}
    if _META_KEY not in meta:
        return tensors
    doc = parse_json(meta[_META_KEY].encode(), f"{path} (structure)", max_bytes=MAX_HEADER_BYTES)
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT or doc.get("version") != 1 or "tree" not in doc:
        raise FormatError(f"{path}: the d2s structure in the metadata is not one d2s.save wrote")
    used = set()
    out = _decode(doc["tree"], tensors, used, path, "")
    unused = sorted(set(tensors) - used)
    if unused:
        raise FormatError(f"{path}: tensors {[safe_text(u) for u in unused[:5]]} are not in the saved structure")
    return out


def _device(map_location):
    if map_location is None:
        return None
    name = str(getattr(map_location, "type", map_location))
    if name.startswith("cuda"):
        return "gpu"
    if isinstance(map_location, dict) or callable(map_location):
        raise TypeError("d2s.load: map_location must be None, a device name ('cpu', 'gpu', 'cuda') or a d2s.device")
    return name


def _check_header(header, path, data_bytes, max_bytes):
    if not isinstance(header, dict):
        raise FormatError(f"{path}: the header must be a JSON object")
    meta = header.get("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise FormatError(f"{path}: __metadata__ must map strings to strings")
    entries, spans = {}, []
    for name, e in header.items():
        if name == "__metadata__":
            continue
        where = f"{path}: tensor {safe_text(name)}"
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise FormatError(f"{where}: an entry must have exactly dtype, shape and data_offsets")
        code = e["dtype"]
        if code == "BF16":
            raise FormatError(f"{where} is bfloat16, which numpy cannot hold; convert it to float32 where it was "
                              "saved (tensor.float())")
        if code not in _DTYPES:
            raise FormatError(f"{where}: dtype {safe_text(code)} is not one of {', '.join(sorted(_DTYPES))}")
        shape, offsets = e["shape"], e["data_offsets"]
        if not isinstance(shape, list) or len(shape) > 32 or not all(type(d) is int and 0 <= d < 1 << 48
                                                                       for d in shape):
            raise FormatError(f"{where}: shape {safe_text(shape)} is not a list of at most 32 non-negative ints")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= data_bytes):
            raise FormatError(f"{where}: data_offsets {safe_text(offsets)} are not a range inside the "
                              f"{data_bytes} bytes of data")
        dtype = _DTYPES[code]
        need = np.dtype(dtype).itemsize
        for d in shape:
            need *= d
        if offsets[1] - offsets[0] != need:
            raise FormatError(f"{where}: {dtype}{shape} needs {need} bytes but its range holds "
                              f"{offsets[1] - offsets[0]}")
        entries[name] = (dtype, tuple(shape), offsets[0], offsets[1])
        spans.append((offsets[0], offsets[1], name))
    spans.sort()
    total = 0
    for (_, e0, n0), (b1, _, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise FormatError(f"{path}: tensors {safe_text(n0)} and {safe_text(n1)} overlap")
    total = sum(e - b for b, e, _ in spans)
    if max_bytes is not None and total > max_bytes:
        raise FormatError(f"{path}: the tensors declare {total} bytes, over max_bytes={max_bytes}; if the file is "
                          "trusted, load it with a larger max_bytes (or max_bytes=None)")
    return entries, meta


def _decode(node, tensors, used, path, where):
    if not isinstance(node, dict) or len(node) != 1:
        raise FormatError(f"{path}: malformed structure at {where or 'the top'}")
    (kind, v), = node.items()
    if kind == "t":
        if not isinstance(v, str) or v not in tensors:
            raise FormatError(f"{path}: the structure names a tensor {safe_text(v)} the file does not hold")
        used.add(v)
        return tensors[v]
    if kind == "v" and (v is None or isinstance(v, (bool, str))):
        return v
    if kind == "i" and isinstance(v, str) and len(v) <= 40 and v.lstrip("-").isdigit():
        return int(v)
    if kind == "f" and (isinstance(v, (int, float)) and not isinstance(v, bool) or v in ("nan", "inf", "-inf")):
        return float(v)
    if kind in ("list", "tuple") and isinstance(v, list):
        items = [_decode(x, tensors, used, path, f"{where}[{i}]") for i, x in enumerate(v)]
        return items if kind == "list" else tuple(items)
    if kind == "dict" and isinstance(v, list):
        out = {}
        for pair in v:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise FormatError(f"{path}: malformed dict entry at {where or 'the top'}")
            k = pair[0]
            if isinstance(k, dict):
                k = _decode(k, tensors, used, path, where)
                if type(k) is not int:
                    raise FormatError(f"{path}: a dict key at {where or 'the top'} is neither a string nor an int")
            elif isinstance(k, str):
                check_text(k, path, (where,))
            else:
                raise FormatError(f"{path}: a dict key at {where or 'the top'} is neither a string nor an int")
            if k in out:
                raise FormatError(f"{path}: duplicate key {safe_text(k)} at {where or 'the top'}")
            out[k] = _decode(pair[1], tensors, used, path, f"{where}.{k}")
        return out
    raise FormatError(f"{path}: malformed structure at {where or 'the top'} ({safe_text(kind)})")


__all__ = ["save", "load", "SaveError"]
