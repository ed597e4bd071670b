"""Reading the files of a saved model as untrusted input (numpy only, never pickle).

A saved model may come from anyone, so everything here is checked before it costs memory or
touches the file system outside the model's directory:

* paths: every file or directory named by the model (or by its meta) must stay inside the
  model directory after symlinks are resolved, and a file must be a regular file (not a
  directory, FIFO or device);
* JSON: files are size-capped, duplicate keys are refused (no silent last-key-wins),
  integers have at most 20 digits, nesting is bounded, and no string holds a control
  character, a bidi override or a lone surrogate (so no error message can carry terminal
  escapes);
* ``.npz`` arrays: each member's ``.npy`` header is read first (never a pickle), its shape and
  dtype are checked against the program and its size against the byte budget, and only then
  is its data read.

Every failure raises ``FormatError`` naming the file and the field.
"""
import json
import math
import os
import re
import stat
import struct
import zipfile
import zlib

import numpy as np

from .errors import FormatError

# A budget for the arrays one load may read or declare: big enough for real models, small
# enough that a hostile file cannot make a server allocate without bound. ``None``: no cap.
DEFAULT_MAX_BYTES = 4 << 30
# program.json / meta.json hold structure and small literals only (big arrays go to .npz)
MAX_JSON_BYTES = 64 << 20
MAX_JSON_DEPTH = 128
MAX_INT_DIGITS = 20
MAX_HEADER_BYTES = 10000
# C0 controls except tab and newline, DEL, C1 controls, bidi overrides and isolates
_BAD_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_text(s, limit=80):
    """``s`` for an error message: escapes shown escaped (``ascii``), long text cut."""
    text = ascii(s)
    return text if len(text) <= limit else text[:limit] + "...'"


# ------------------------------------------------------------------ paths
def inside(root, path, where, what="file"):
    """``path`` (a file or directory named by the model) after checking it stays in ``root``
    once symlinks are resolved; FormatError naming ``where`` otherwise."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise FormatError(f"{where}: the {what} resolves to {safe_text(real)}, outside the model directory "
                            f"{safe_text(real_root)} (a symlink or '..' leaving the model is refused)")
    return path


def regular_file(root, path, where=None):
    """Whether ``path`` exists; FormatError (naming ``where``, default ``path``) if it does but
    is not a regular file inside ``root``."""
    where = where or path
    if not os.path.lexists(path):
        return False
    inside(root, path, where)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise FormatError(f"{where}: is {kind}; a saved model holds a regular file here")
    return True


# ------------------------------------------------------------------ JSON
def _pairs(where):
    def hook(pairs):
        out = {}
        for k, v in pairs:
            if k in out:
                raise FormatError(f"{where}: duplicate key {safe_text(k)} in one JSON object (a file with "
                                    "two values for one field is ambiguous)")
            out[k] = v
        return out
    return hook


class _LongInt:
    """Stands for an integer literal too long to accept; the tree walk reports its field."""

    __slots__ = ("digits",)

    def __init__(self, digits):
        self.digits = digits


def _parse_int(text):
    digits = len(text.lstrip("-"))
    # never converted: int() of thousands of digits is slow, and no dim or attr needs them
    return _LongInt(digits) if digits > MAX_INT_DIGITS else int(text)


def _json_constant(name):
    # NaN / Infinity appear in attrs (e.g. clip bounds); nothing else is accepted
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


def read_json(path, max_bytes=MAX_JSON_BYTES, where=None):
    """The JSON document in ``path``, checked as described in the module docstring (errors
    name ``where``, default ``path``)."""
    where = where or path
    size = os.stat(path).st_size
    if size > max_bytes:
        raise FormatError(f"{where}: {size} bytes is more than the {max_bytes} accepted for this file")
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    return parse_json(data, where)


def parse_json(data, where, max_bytes=MAX_JSON_BYTES):
    """The JSON document in ``data`` (bytes), checked as :func:`read_json` checks a file (a save
    runs its text through this before writing it)."""
    if len(data) > max_bytes:
        raise FormatError(f"{where}: {len(data)} bytes is more than the {max_bytes} accepted for this file")
    try:
        text = data.decode("utf-8")
        doc = json.loads(text, object_pairs_hook=_pairs(where), parse_int=_parse_int,
                         parse_constant=_json_constant)
    except RecursionError:
        raise FormatError(f"{where}: JSON nested too deep (at most {MAX_JSON_DEPTH} levels)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FormatError(f"{where}: not valid JSON (truncated or corrupt?): {e}") from None
    except ValueError as e:  # numbers the parser refuses
        raise FormatError(f"{where}: not valid JSON: {e}") from None
    check_json_tree(doc, where)
    return doc


def check_json_tree(doc, where):
    """FormatError unless ``doc`` nests at most MAX_JSON_DEPTH levels and all its strings
    (keys too) are clean text; iterative, so a deep document cannot exhaust the stack."""
    stack = [(doc, (), 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise FormatError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels at "
                                f"{field_name(path[:8])}...")
        if isinstance(value, str):
            check_text(value, where, path)
        elif isinstance(value, _LongInt):
            raise FormatError(f"{where}: field {field_name(path)} holds an integer of {value.digits} digits "
                                f"(at most {MAX_INT_DIGITS} are accepted)")
        elif isinstance(value, dict):
            for k, v in value.items():
                check_text(k, where, path + (k,))
                stack.append((v, path + (k,), depth + 1))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                stack.append((v, path + (i,), depth + 1))


def field_name(path):
    """``("program", "block", "ops", 3, "type")`` -> ``program.block.ops[3].type``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (("." if out else "") + (p if _plain_key(p) else safe_text(p)))
    return out or "the top level"


def _plain_key(k):
    return k.isidentifier() and k.isascii()


def check_text(s, where, path):
    """FormatError unless ``s`` is clean text: valid UTF-8 (no lone surrogates) without control
    characters (tab and newline allowed) or bidi overrides."""
    bad = _BAD_CHARS.search(s)
    if bad is None:
        try:
            s.encode("utf-8")
            return
        except UnicodeEncodeError:
            what = "a lone surrogate (not valid Unicode text)"
    else:
        what = f"the control character {ascii(bad.group())}"
    raise FormatError(f"{where}: field {field_name(path)} holds {what}: {safe_text(s)}")


# ------------------------------------------------------------------ sizes
def nbytes(shape, dtype):
    """Bytes of an array of ``shape`` (known dims) and dtype name ``dtype``, as a Python int."""
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= d
    return n


class Budget:
    """The bytes one load may still read (``max_bytes=None``: unlimited)."""

    def __init__(self, max_bytes):
        if max_bytes is not None and (type(max_bytes) is not int or max_bytes < 0):
            raise ValueError(f"max_bytes must be a non-negative int or None, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, n, where, what):
        self.used += n
        if self.max_bytes is not None and self.used > self.max_bytes:
            raise FormatError(f"{where}: {what} needs {n} bytes, which brings the arrays of this model to "
                                f"{self.used} bytes, over max_bytes={self.max_bytes}; if the file is trusted, "
                                "load it with a larger max_bytes (or max_bytes=None)")


# ------------------------------------------------------------------ .npz
def read_npz(path, where, names, type_of, budget):
    """Arrays ``names`` of the ``.npz`` file ``path``: each member's header is checked against
    ``type_of(name)`` (a TensorType) and ``budget`` before its data is read."""
    try:
        with zipfile.ZipFile(path) as zf:
            members = {}
            for info in zf.infolist():
                if info.filename in members:
                    raise FormatError(f"{where}: the archive holds member {safe_text(info.filename)} twice")
                members[info.filename] = info
            wanted = {n + ".npy" for n in names}
            extra = sorted(m for m in members if m not in wanted)
            if extra:
                raise FormatError(f"{where}: holds array(s) the program does not declare: "
                                    f"{', '.join(safe_text(m) for m in extra[:5])}")
            headers = {}
            for n in names:
                info = members.get(n + ".npy")
                if info is None:
                    raise FormatError(f"{where}: has no array {n!r}")
                headers[n] = _check_header(zf, info, where, n, type_of(n), budget)
            out = {}
            for n in names:
                with zf.open(members[n + ".npy"]) as f:
                    out[n] = np.lib.format.read_array(f, allow_pickle=False, max_header_size=MAX_HEADER_BYTES)
                if out[n].shape != headers[n]:
                    raise FormatError(f"{where}: array {n!r} is truncated or corrupt")
            return out
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, struct.error, ValueError, OSError, EOFError,
            KeyError, NotImplementedError, RuntimeError, OverflowError) as e:
        if type(e).__name__ == "FormatError":
            raise
        raise FormatError(f"{where}: cannot read arrays (truncated or corrupt file?): {type(e).__name__}: "
                            f"{safe_text(str(e), 200)}") from None


def read_npy(path, max_bytes, where=None):
    """The array in the ``.npy`` file ``path`` (an input given on the command line): its header
    is read first and its size checked against ``max_bytes`` (None: no cap) and against the
    bytes the file holds before any data is read; never a pickle. FormatError otherwise."""
    where = where or path
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            read = {(1, 0): np.lib.format.read_array_header_1_0,
                    (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read is None:
                raise FormatError(f"{where}: .npy format version {version} is not supported")
            shape, _, dtype = read(f, max_header_size=MAX_HEADER_BYTES)
        except ValueError as e:
            raise FormatError(f"{where}: not a .npy array: {e}") from None
        if dtype.hasobject:
            raise FormatError(f"{where}: holds Python objects (a pickle); refused unread")
        n = nbytes(shape, dtype.str)
        size = os.fstat(f.fileno()).st_size - f.tell()
        if size < n:
            raise FormatError(f"{where}: its header declares {dtype.name}{list(shape)} ({n} bytes) but the file holds "
                              f"{size} bytes of data (truncated, or a forged header)")
        if max_bytes is not None and n > max_bytes:
            raise FormatError(f"{where}: the array {dtype.name}{list(shape)} is {n} bytes, over max_bytes={max_bytes}")
        f.seek(0)
        return np.lib.format.read_array(f, allow_pickle=False, max_header_size=MAX_HEADER_BYTES)


def _check_header(zf, info, where, name, t, budget):
    """The shape in member ``info``'s .npy header, checked; no array data is read."""
    field = f"array {name!r}"
    with zf.open(info) as f:
        try:
            version = np.lib.format.read_magic(f)
        except ValueError:
            raise FormatError(f"{where}: {field} is not a .npy array (a pickle or other data?); refused "
                                "unread") from None
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read is None:
            raise FormatError(f"{where}: {field} has .npy format version {version}, which is not supported")
        shape, _, dtype = read(f, max_header_size=MAX_HEADER_BYTES)
        header_len = f.tell()
    if dtype.hasobject:
        raise FormatError(f"{where}: {field} holds Python objects (a pickle); refused unread")
    if dtype.name != t.dtype or len(shape) != len(t.shape) or any(
            d is not None and d != s for d, s in zip(t.shape, shape)):
        raise FormatError(f"{where}: {field} is {dtype.name}{list(shape)} but the program types it {t}")
    n = nbytes(shape, dtype.name)
    budget.take(n, where, field)
    if info.file_size < header_len + n:
        raise FormatError(f"{where}: {field} declares {n} bytes of data but its member holds "
                            f"{info.file_size - header_len} (truncated file?)")
    return tuple(shape)
