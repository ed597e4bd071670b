"""Hostile saved models: a table of crafted variants of one real model, each refused with a
FormatError naming the file and the field, or loaded and bit-exact; bounded memory; no file
written or read outside the model directory; no code from the files ever runs.

``main(base, workdir)`` runs the whole table on its own (numpy + d2s_runtime only): the test
``test_whole_table_peak_memory`` runs it in a fresh interpreter and reads its peak RSS.
"""
import json
import os
import shutil
import subprocess
import sys
import warnings
import zipfile

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
X = np.linspace(-1.0, 1.0, 12, dtype="float32").reshape(4, 3)
TABLE = np.arange(24, dtype="float32").reshape(4, 6) / 10.0  # > 16 elements: lives in constants.npz
PEAK_RSS_LIMIT_MB = 300


# ------------------------------------------------------------------ the base model
def _base_fn(x):
    import d2s
    h = _LIN(x)
    if h.sum() > 0:
        h = h * 2.0
    i = d2s.zeros([])
    while i < 3:
        i = i + 1.0
        h = h + d2s.tensor(TABLE)[0]
    return h, {"i": i}


_LIN = None


def save_base(path):
    """Save the model every variant starts from (params, constants, cond, while, meta)."""
    import d2s
    global _LIN
    d2s.manual_seed(0)
    _LIN = d2s.nn.Linear(3, 6)
    fn = d2s.jit.to_static(_base_fn)
    d2s.jit.save(fn, path, input_spec=[d2s.jit.InputSpec([None, 3], name="x")])
    return path


# ------------------------------------------------------------------ editing helpers
def _read(d, name):
    with open(os.path.join(d, name), "rb") as f:
        return json.loads(f.read())


def _write(d, name, doc):
    with open(os.path.join(d, name), "w") as f:
        json.dump(doc, f)


def _edit(name, fn):
    def mutate(d):
        doc = _read(d, name)
        fn(doc)
        _write(d, name, doc)
    return mutate


def _prog(fn):
    return _edit("program.json", lambda doc: fn(doc["program"]))


def _meta(fn):
    return _edit("meta.json", fn)


def _raw(name, fn):
    """Edit the raw text of a file (for what ``json.dump`` cannot write)."""
    def mutate(d):
        p = os.path.join(d, name)
        with open(p, "rb") as f:
            data = f.read()
        with open(p, "wb") as f:
            f.write(fn(data))
    return mutate


def _ops(p, kind):
    return [op for op in p["block"]["ops"] if op["type"] == kind]


def _param(p, k=0):
    return p["params"][k]


def _param_shape(d):
    p = _read(d, "program.json")["program"]
    return p["block"]["vars"][_param(p)]["shape"]


def _set_var(name_of, **fields):
    def fn(p):
        p["block"]["vars"][name_of(p)].update(fields)
    return _prog(fn)


def _npy_bytes(arr=None, header=None, version=(1, 0), data=b""):
    """A .npy member: ``arr`` written by numpy, or a hand-made ``header`` dict and ``data``."""
    import io
    buf = io.BytesIO()
    if arr is not None:
        np.lib.format.write_array(buf, arr, version=version)
        return buf.getvalue()
    text = repr(header).encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text = text + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes(version) + len(text).to_bytes(2, "little") + text + data


def _npz(name, members_fn):
    """Rewrite ``name`` with members ``members_fn(d, original arrays) -> [(member, bytes)]``."""
    def mutate(d):
        p = os.path.join(d, name)
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        members = members_fn(d, arrays)
        os.remove(p)
        with zipfile.ZipFile(p, "w") as zf, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a duplicate member is what some variants want
            for m, data in members:
                zf.writestr(m, data)
    return mutate


def _zip_bomb(n_floats):
    """params.npz whose one member really holds ``n_floats`` zeros, deflated to a few hundred
    KB: reading it before checking its header would cost ``4 * n_floats`` bytes."""
    def mutate(d):
        p = os.path.join(d, "params.npz")
        with np.load(p, allow_pickle=False) as z:
            names = list(z.files)
        header = _npy_bytes(header={"descr": "<f4", "fortran_order": False, "shape": (n_floats,)})
        chunk = bytes(1 << 22)
        with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for k, name in enumerate(names):
                with zf.open(name + ".npy", "w", force_zip64=True) as f:
                    f.write(header)
                    left = 4 * n_floats if k == 0 else 0
                    while left > 0:
                        f.write(chunk[:min(left, len(chunk))])
                        left -= len(chunk)
    return mutate


def _npz_compressed(d):
    p = os.path.join(d, "params.npz")
    with np.load(p, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez_compressed(p, **arrays)


def _same_members(transform):
    return lambda d, arrays: [(k + ".npy", transform(k, a)) for k, a in arrays.items()]


def _deep(n, leaf=0):
    v = leaf
    for _ in range(n):
        v = [v]
    return v


def _symlink(name, target_fn):
    def mutate(d):
        p = os.path.join(d, name)
        target = target_fn(d)
        if os.path.exists(p):
            os.remove(p)
        os.symlink(target, p)
    return mutate


def _outside_copy(name):
    """A copy of the model's own ``name`` placed outside the model dir (a valid file)."""
    def target(d):
        dst = d + ".outside-" + name
        shutil.copyfile(os.path.join(d, name), dst)
        return dst
    return target


def _evil_pickle(d):
    # a classic pickle that would create a file when unpickled
    marker = os.path.join(d, "PWNED")
    return b"cos\nsystem\n(S'touch " + marker.encode() + b"'\ntR."


def _replace_first_op(kind, fn):
    def edit(p):
        fn(_ops(p, kind)[0])
    return _prog(edit)


def _mkfifo(d):
    p = os.path.join(d, "program.json")
    os.remove(p)
    os.mkfifo(p)


def _make_dir(name):
    def mutate(d):
        p = os.path.join(d, name)
        os.remove(p)
        os.mkdir(p)
    return mutate


def _undefined_output(p):
    p["block"]["vars"]["never_defined"] = {"shape": [], "dtype": "float32"}
    p["outputs"][1] = "never_defined"
    p["block"]["outputs"][1] = "never_defined"


def _dummy_block():
    return {"inputs": [], "outputs": [], "vars": {}, "ops": []}


def _constant_bomb(with_blocks):
    def fn(op):
        op["attrs"]["dtype"] = "S1000000000"
        if with_blocks:
            op["blocks"] = {"dummy": _dummy_block()}
    return fn


def _sparse_file(name, size):
    def mutate(d):
        with open(os.path.join(d, name), "r+b") as f:
            f.truncate(size)
    return mutate


def _two(*mutations):
    def mutate(d):
        for m in mutations:
            m(d)
    return mutate


def _bidi(s):
    return s + "\u202e"


# ------------------------------------------------------------------ the table
# (id, mutation, expected): expected is "ok" (loads and computes bit-exactly what the base
# model computes) or (file name, regex the FormatError message must match); optional load
# kwargs and an optional method name to call after loading.
VARIANTS = [
    # --- strings
    ("var-name-escape", _prog(lambda p: p["block"]["vars"].update({"\x1b[31mred": {"shape": [], "dtype": "float32"}})),
     ("program.json", r"control character '\\x1b'")),
    ("var-name-surrogate", _raw("program.json", lambda t: t.replace(b'"vars": {', b'"vars": {"\\ud800": {"shape": [], "dtype": "float32"}, ', 1)),
     ("program.json", "lone surrogate")),
    ("op-type-escape", _replace_first_op("add", lambda op: op.update(type="add\x1b]0;owned\x07")),
     ("program.json", r"program\.block\.ops\[\d+\]\.type holds the control character")),
    ("meta-input-name-escape", _meta(lambda m: m["inputs"][0].update(name="x\x1b[2J")), ("meta.json", r"inputs\[0\]\.name")),
    ("meta-name-bidi", _meta(lambda m: m.update(name=_bidi("f"))), ("meta.json", r"field name holds the control character")),
    ("meta-output-surrogate", _raw("meta.json", lambda t: t.replace(b'"output_0"', b'"\\udc80"', 1)),
     ("meta.json", r"outputs\[0\]\.name holds a lone surrogate")),
    ("attr-string-nul", _replace_first_op("add", lambda op: op["attrs"].update(note="a\x00b")),
     ("program.json", r"attrs\.note")),
    ("program-name-cr", _prog(lambda p: p.update(name="f\rEVIL")), ("program.json", r"program\.name")),
    ("dict-key-control", _meta(lambda m: m.update({"k\x07": 1})), ("meta.json", r"control character '\\x07'")),
    ("invalid-utf8", _raw("program.json", lambda t: t.replace(b'"name": "', b'"name": "\xff\xfe', 1)),
     ("program.json", "not valid JSON")),
    ("utf8-bom", _raw("meta.json", lambda t: b"\xef\xbb\xbf" + t), ("meta.json", "not valid JSON")),
    ("output-name-dotdot", _meta(lambda m: m["outputs"][0].update(name="../../x")), "ok"),
    ("output-name-absolute", _meta(lambda m: m["outputs"][0].update(name="/etc/passwd")), "ok"),
    ("output-name-unicode", _meta(lambda m: m["outputs"][0].update(name="résultat_中")), "ok"),
    ("meta-names-duplicate", _meta(lambda m: m["inputs"][0].update(name="x") or m["outputs"][0].update(name="x")), "ok"),
    # --- shapes
    ("dim-10e30", _raw("program.json", lambda t: t.replace(b'"shape": [null, 3]', b'"shape": [null, 1000000000000000000000000000000]', 1)),
     ("program.json", r"integer of 31 digits")),
    ("int-5000-digits", _raw("program.json", lambda t: t.replace(b'"version": 1', b'"version": 1' + b"0" * 5000, 1)),
     ("program.json", r"field version holds an integer of 5001 digits")),
    ("dim-float", _set_var(_param, shape=[6, 3.0]), ("program.json", "bad shape")),
    ("dim-negative", _set_var(_param, shape=[-6, 3]), ("program.json", "bad shape")),
    ("dim-2-pow-50", _set_var(_param, shape=[2 ** 50, 3]), ("program.json", "bad shape")),
    ("dim-bool", _set_var(_param, shape=[True, 3]), ("program.json", "bad shape")),
    ("ndim-40", _set_var(_param, shape=[1] * 40), ("program.json", "bad shape")),
    ("shape-dict", _set_var(_param, shape={"a": 1}), ("program.json", "bad shape")),
    ("shape-missing", _prog(lambda p: p["block"]["vars"][_param(p)].pop("shape")), ("program.json", "needs 'shape'")),
    ("param-shape-swapped", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(a.T.copy()))),
     ("params.npz", "but the program types it")),
    ("npy-header-600M-floats", _npz("params.npz", _same_members(
        lambda k, a: _npy_bytes(header={"descr": "<f4", "fortran_order": False, "shape": (600_000_000,)}))),
     ("params.npz", r"float32\[600000000\] but the program types it")),
    ("zip-bomb-400MB", _zip_bomb(100_000_000), ("params.npz", r"float32\[100000000\] but the program types it")),
    ("declared-600M-floats-under-cap", _two(_set_var(_param, shape=[600_000_000]), _npz("params.npz", _same_members(
        lambda k, a: _npy_bytes(header={"descr": "<f4", "fortran_order": False, "shape": (600_000_000,)})))),
     ("program.json", r"over max_bytes=67108864"), {"max_bytes": 64 << 20}),
    ("declared-over-default-cap", _set_var(_param, shape=[100_000, 100_000]), ("program.json", r"over max_bytes=4294967296")),
    ("declared-10e15-elements", _set_var(_param, shape=[100_000, 100_000, 100_000]), ("program.json", "over max_bytes")),
    ("npy-declares-more-than-member", _npz("params.npz", lambda d, arrays: [
        (k + ".npy", _npy_bytes(a)[:-8]) for k, a in arrays.items()]), ("params.npz", "declares .* bytes of data")),
    ("params-over-small-cap", None, ("program.json", "over max_bytes=16"), {"max_bytes": 16}),
    ("no-cap", None, "ok", {"max_bytes": None}),
    # --- dtypes
    ("var-dtype-S1e9", _set_var(_param, dtype="S1000000000"), ("program.json", "bad dtype")),
    ("var-dtype-object", _set_var(_param, dtype="object"), ("program.json", "bad dtype")),
    ("var-dtype-list", _set_var(_param, dtype=["float32"]), ("program.json", "bad dtype")),
    ("constant-S1e9-dummy-blocks", _replace_first_op("constant", _constant_bomb(True)), ("program.json", r"blocks \['dummy'\]")),
    ("constant-S1e9", _replace_first_op("constant", _constant_bomb(False)), ("program.json", "S1000000000")),
    ("constant-shape-1e9", _replace_first_op("constant", lambda op: op["attrs"].update(shape=[10 ** 9])),
     ("program.json", "1000000000")),
    ("npy-float64-for-float32", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(a.astype("float64")))),
     ("params.npz", "float64")),
    ("npy-object-pickle", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(
        header={"descr": "|O", "fortran_order": False, "shape": a.shape}, data=b"\x80\x04N."))), ("params.npz", "pickle")),
    ("npz-member-raw-pickle", lambda d: _npz("params.npz", lambda _, arrays: [(k + ".npy", _evil_pickle(d)) for k in arrays])(d),
     ("params.npz", r"not a \.npy array")),
    ("npy-structured-dtype", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(
        header={"descr": [("a", "<f4")], "fortran_order": False, "shape": a.shape}, data=a.tobytes()))),
     ("params.npz", "but the program types it")),
    ("npy-huge-header", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(
        header={"descr": "<f4", "fortran_order": False, "shape": a.shape, "pad": "x" * 20000}, version=(2, 0),
        data=a.tobytes()))), ("params.npz", "cannot read arrays")),
    ("npy-bad-header", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(a)[:10] + b"{__import__('os')}\n")),
     ("params.npz", "cannot read arrays")),
    ("npy-big-endian", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(a.astype(">f4")))), "ok"),
    ("npy-fortran-order", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(np.asfortranarray(a)))), "ok"),
    ("npy-version-2", _npz("params.npz", _same_members(lambda k, a: _npy_bytes(a, version=(2, 0)))), "ok"),
    # --- structure
    ("json-nested-300", _replace_first_op("add", lambda op: op["attrs"].update(deep=_deep(300))),
     ("program.json", "nested deeper than 128")),
    ("json-nested-100000", _raw("program.json", lambda t: t.replace(b'"format"', b'"x": ' + b"[" * 100000 + b"]" * 100000 + b', "format"', 1)),
     ("program.json", "nested too deep")),
    ("output-tree-nested-300", _meta(lambda m: m.update(output_tree=_deep(300, {"leaf": 0}))), ("meta.json", "nested deeper")),
    ("program-json-directory", _make_dir("program.json"), ("program.json", "is a directory")),
    ("params-npz-directory", _make_dir("params.npz"), ("params.npz", "is a directory")),
    ("program-json-missing", lambda d: os.remove(os.path.join(d, "program.json")), ("program.json", "missing")),
    ("program-json-fifo", _mkfifo, ("program.json", "not a regular file")),
    ("duplicate-key-program", _raw("program.json", lambda t: t.replace(b'"outputs"', b'"outputs": [], "outputs"', 1)),
     ("program.json", "duplicate key 'outputs'")),
    ("duplicate-key-meta", _raw("meta.json", lambda t: t.replace(b'"name"', b'"name": "a", "name"', 1)),
     ("meta.json", "duplicate key 'name'")),
    ("duplicate-zip-member", _npz("params.npz", lambda d, arrays: [(k + ".npy", _npy_bytes(a)) for k, a in arrays.items()]
                                  + [(next(iter(arrays)) + ".npy", _npy_bytes(np.zeros_like(next(iter(arrays.values())))))]),
     ("params.npz", "twice")),
    ("undefined-output", _prog(_undefined_output), ("program.json", "'never_defined' that is never defined")),
    ("output-without-var", _prog(lambda p: p["outputs"].__setitem__(0, "nowhere")), ("program.json", "'nowhere'")),
    ("primitive-with-blocks", _replace_first_op("add", lambda op: op.update(blocks={"x": _dummy_block()})),
     ("program.json", r"op 'add' has blocks \['x'\]")),
    ("while-without-body", _replace_first_op("while", lambda op: op["blocks"].pop("body")), ("program.json", "blocks")),
    ("cond-extra-block", _replace_first_op("cond", lambda op: op["blocks"].update(extra=_dummy_block())),
     ("program.json", r"'cond' has blocks")),
    ("top-level-list", _raw("program.json", lambda t: b"[" + t + b"]"), ("program.json", "top level must be a JSON object")),
    ("meta-not-object", _raw("meta.json", lambda t: b"[1, 2]"), ("meta.json", "meta must be a JSON object")),
    ("params-not-zip", _raw("params.npz", lambda t: b"not a zip file at all"), ("params.npz", "truncated or corrupt")),
    ("params-truncated", _raw("params.npz", lambda t: t[: len(t) // 2]), ("params.npz", "truncated or corrupt")),
    ("params-deflate-corrupt", _two(_npz_compressed, _raw("params.npz", lambda t: t[:60] + bytes(b ^ 0x5A for b in t[60:90]) + t[90:])),
     ("params.npz", "truncated or corrupt")),
    ("params-extra-member", _npz("params.npz", lambda d, arrays: [(k + ".npy", _npy_bytes(a)) for k, a in arrays.items()]
                                 + [("extra.npy", _npy_bytes(np.zeros(3, "float32")))]), ("params.npz", "does not declare")),
    ("params-missing-member", _npz("params.npz", lambda d, arrays: [(k + ".npy", _npy_bytes(a)) for k, a in list(arrays.items())[1:]]),
     ("params.npz", "has no array")),
    ("unknown-top-level-key", _edit("program.json", lambda doc: doc.update(comment="ignored")), "ok"),
    ("extra-file-in-dir", lambda d: open(os.path.join(d, "README.txt"), "w").close(), "ok"),
    ("program-json-65MB-sparse", _sparse_file("program.json", 65 << 20), ("program.json", "more than the 67108864 accepted")),
    ("nan-in-json-var", _raw("program.json", lambda t: t.replace(b'"shape": [null, 3]', b'"shape": [NaN, 3]', 1)),
     ("program.json", "bad shape")),
    # --- paths
    ("params-symlink-outside", _symlink("params.npz", _outside_copy("params.npz")), ("params.npz", "outside the model directory")),
    ("program-symlink-dev-zero", _symlink("program.json", lambda d: "/dev/zero"), ("program.json", "outside the model directory")),
    ("meta-symlink-outside", _symlink("meta.json", _outside_copy("meta.json")), ("meta.json", "outside the model directory")),
    ("params-symlink-inside", _two(lambda d: shutil.copyfile(os.path.join(d, "params.npz"), os.path.join(d, "p2.npz")),
                                   _symlink("params.npz", lambda d: "p2.npz")), "ok"),
    ("methods-dotdot", _meta(lambda m: m.update(methods={"evil": "../../etc"})), ("meta.json", "relative directories")),
    ("methods-absolute", _meta(lambda m: m.update(methods={"evil": "/etc"})), ("meta.json", "relative directories")),
    ("methods-nul", _meta(lambda m: m.update(methods={"evil": "a\x00b"})), ("meta.json", "control character")),
    ("methods-symlink-outside", _two(_meta(lambda m: m.update(methods={"evil": "methods/evil"})),
                                     lambda d: os.makedirs(os.path.join(d, "methods")),
                                     lambda d: os.symlink(os.path.dirname(d), os.path.join(d, "methods", "evil"))),
     ("meta.json", "directory of method 'evil' resolves to .* outside the model directory"), {}, "evil"),
]


def _unpack(row):
    vid, mutate, expected, *rest = row
    kwargs = rest[0] if rest else {}
    method = rest[1] if len(rest) > 1 else None
    return vid, mutate, expected, kwargs, method


def make_variant(base, workdir, row):
    vid, mutate, _, _, _ = _unpack(row)
    d = os.path.join(workdir, vid)
    shutil.copytree(base, d, symlinks=True)
    if mutate is not None:
        mutate(d)
    return d


def _bits(value):
    if isinstance(value, dict):
        return {k: _bits(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_bits(v) for v in value]
    a = np.asarray(value)
    return (a.dtype.newbyteorder("=").name, a.shape, np.ascontiguousarray(a).astype(a.dtype.newbyteorder("="))
            .tobytes())


def check_variant(base_out, d, row):
    """Load variant dir ``d``; returns 'ok' or 'refused', raising AssertionError otherwise."""
    import d2s_runtime
    from d2s_runtime.serialize import FormatError
    vid, _, expected, kwargs, method = _unpack(row)
    try:
        model = d2s_runtime.load(d, **kwargs)
        if method:
            getattr(model, method)
        got = model(X)
    except FormatError as e:
        msg = str(e)
        assert expected != "ok", f"{vid}: refused but should load: {msg}"
        fname, pattern = expected
        assert fname in msg, f"{vid}: the message does not name {fname}: {msg}"
        import re
        assert re.search(pattern, msg), f"{vid}: the message does not match {pattern!r}: {msg}"
        assert msg.isprintable(), f"{vid}: the message holds unprintable characters: {msg!r}"
        return "refused"
    assert expected == "ok", f"{vid}: loaded but should be refused with {expected}"
    assert _bits(got) == _bits(base_out), f"{vid}: loaded but computes something else"
    return "ok"


def base_outputs(base):
    import d2s_runtime
    return d2s_runtime.load(base)(X)


def _peak_rss_mb(resource):
    """This process's peak resident memory. /proc's VmHWM belongs to this program alone;
    ru_maxrss may also count the memory of the parent this process was forked from before exec."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(base, workdir):
    """Run the whole table; prints the counts and the peak RSS (for the subprocess test)."""
    import resource
    out = base_outputs(base)
    counts = {"ok": 0, "refused": 0}
    for row in VARIANTS:
        counts[check_variant(out, make_variant(base, workdir, row), row)] += 1
    peak_mb = _peak_rss_mb(resource)
    print(json.dumps({"variants": len(VARIANTS), **counts, "peak_rss_mb": round(peak_mb, 1)}))


# ------------------------------------------------------------------ tests
@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return save_base(str(tmp_path_factory.mktemp("hostile_base") / "base"))


def test_the_table_is_big_and_its_ids_distinct():
    ids = [row[0] for row in VARIANTS]
    assert len(ids) >= 60 and len(set(ids)) == len(ids)
    assert sum(1 for row in VARIANTS if row[2] == "ok") >= 8


@pytest.mark.parametrize("row", VARIANTS, ids=[row[0] for row in VARIANTS])
def test_variant(base, tmp_path, row):
    before = set(os.listdir(tmp_path.parent)), set(os.listdir(os.getcwd()))
    d = make_variant(base, str(tmp_path), row)
    check_variant(base_outputs(base), d, row)
    assert not os.path.exists(os.path.join(d, "PWNED"))
    after = set(os.listdir(tmp_path.parent)), set(os.listdir(os.getcwd()))
    assert after == before, "a file was created outside the test's directory"


def test_base_model_matches_eager(base):
    import d2s
    h, rest = base_outputs(base)
    want_h, want_rest = _base_fn(d2s.tensor(X))
    np.testing.assert_array_equal(h, want_h.numpy())
    np.testing.assert_array_equal(rest["i"], want_rest["i"].numpy())


def test_whole_table_peak_memory(base, tmp_path):
    """The whole table in a fresh interpreter: every variant as expected, peak RSS bounded,
    and nothing created outside the work directory."""
    work = tmp_path / "work"
    work.mkdir()
    outside_before = set(os.listdir(tmp_path.parent))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime"), HERE]))
    code = "import sys, test_hostile_models as t; t.main(sys.argv[1], sys.argv[2])"
    r = subprocess.run([sys.executable, "-c", code, base, str(work)], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    print("hostile table:", report)
    assert report["ok"] + report["refused"] == report["variants"] >= 60
    assert report["peak_rss_mb"] < PEAK_RSS_LIMIT_MB
    assert set(os.listdir(tmp_path.parent)) == outside_before
    assert sorted(os.listdir(tmp_path)) == ["work"]


def test_d2s_jit_load_refuses_and_accepts_the_same_variants(base, tmp_path):
    """``d2s.jit.load`` reads through the same checks: every variant gets the same verdict."""
    import d2s
    from d2s_runtime.serialize import FormatError
    want = base_outputs(base)
    verdicts = {"ok": 0, "refused": 0}
    for row in VARIANTS:
        vid, _, expected, kwargs, method = _unpack(row)
        d = make_variant(base, str(tmp_path), row)
        try:
            loaded = d2s.jit.load(d, **kwargs)
            if method:
                getattr(loaded, method)
            h, rest = loaded(X)
        except FormatError as e:
            assert expected != "ok", f"{vid}: refused by d2s.jit.load: {e}"
            assert expected[0] in str(e), f"{vid}: {e}"
            verdicts["refused"] += 1
            continue
        assert expected == "ok", f"{vid}: d2s.jit.load accepted it"
        assert _bits([h.numpy(), {"i": rest["i"].numpy()}]) == _bits(list(want))
        verdicts["ok"] += 1
    assert verdicts["ok"] >= 8 and verdicts["refused"] >= 60


@pytest.mark.parametrize("name", ["params.npz", "program.json", "meta.json"])
def test_random_byte_damage_is_a_format_error_or_harmless(base, tmp_path, name):
    """Seeded random byte flips and truncations of one file: never anything but a FormatError
    (a flip inside a number or name may still load: then it must run)."""
    import random

    import d2s_runtime
    from d2s_runtime.serialize import FormatError
    rng = random.Random(name)
    with open(os.path.join(base, name), "rb") as f:
        original = f.read()
    for k in range(60):
        d = os.path.join(str(tmp_path), f"v{k}")
        shutil.copytree(base, d)
        if name == "params.npz" and k % 2:
            _npz_compressed(d)
            with open(os.path.join(d, name), "rb") as f:
                data = bytearray(f.read())
        else:
            data = bytearray(original)
        for _ in range(rng.choice([1, 2, 4, 8])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if k % 5 == 0:
            data = data[:rng.randrange(len(data))]
        with open(os.path.join(d, name), "wb") as f:
            f.write(bytes(data))
        try:
            d2s_runtime.load(d)(X)
        except FormatError:
            pass
        except Exception as e:  # an InputError/ExecutionError is fine only from a changed program
            assert name == "program.json" and type(e).__name__ in ("InputError", "ExecutionError",
                                                                    "ProgramAssertionError"), f"#{k}: {e!r}"
        shutil.rmtree(d)
