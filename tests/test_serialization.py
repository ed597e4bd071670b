"""``d2s.save`` / ``d2s.load`` (d2s/serialization.py): a model's and an optimizer's state round-trip,
nested containers come back as they went in, a safetensors file written by PyTorch loads with its
names, shapes and dtypes (stored here as ``torch_refs/serialization.safetensors``, written by
``python tests/test_serialization.py`` where torch is installed, and live when torch imports), a
file d2s writes loads in PyTorch, and 20 hostile files are refused before any data is read, with no
code run."""
import json
import math
import os
import pickle
import struct

import numpy as np
import pytest

import d2s
from d2s import nn, optim
from d2s_runtime.errors import FormatError

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_FILE = os.path.join(HERE, "torch_refs", "serialization.safetensors")


def _model():
    d2s.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def test_a_model_state_round_trips(tmp_path):
    model = _model()
    d2s.save(model.state_dict(), tmp_path / "m.safetensors")
    loaded = d2s.load(tmp_path / "m.safetensors")
    assert list(loaded) == list(model.state_dict())  # names, in order
    other = _model()
    for p in other.parameters():
        p.data = p.data * 0.0 if hasattr(p, "data") else p
    other.load_state_dict(loaded)
    x = d2s.randn(3, 4)
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())


def test_an_optimizer_state_round_trips(tmp_path):
    model = _model()
    opt = optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        model(d2s.randn(5, 4)).pow(2).sum().backward()
        opt.step()
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 2}
    d2s.save(state, tmp_path / "ckpt.safetensors")
    back = d2s.load(tmp_path / "ckpt.safetensors")
    assert back["epoch"] == 2 and _same(back["optimizer"], opt.state_dict())
    model2 = _model()
    model2.load_state_dict(back["model"])
    opt2 = optim.Adam(model2.parameters(), lr=0.01)
    opt2.load_state_dict(back["optimizer"])
    x = d2s.randn(5, 4)
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
    for p, q in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def _same(a, b):
    if isinstance(a, d2s.Tensor):
        return isinstance(b, d2s.Tensor) and a.dtype == b.dtype and np.array_equal(a.numpy(), b.numpy())
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


def test_nested_containers_come_back_as_they_went_in(tmp_path):
    obj = {"ints": {0: d2s.tensor([1, 2]), -3: [1, 2.5, True, None, "text é"]},
           "tuple": (d2s.zeros(2, 2), (d2s.tensor(True),)), "numbers": [float("nan"), float("inf"), -0.0, 10 ** 30],
           "empty": {}, "arr": np.arange(3, dtype="int32"), "f64": d2s.tensor(np.float64(1.5))}
    d2s.save(obj, tmp_path / "o.safetensors")
    back = d2s.load(tmp_path / "o.safetensors")
    want = dict(obj, arr=d2s.tensor(np.arange(3, dtype="int32")))
    assert _same(back, want)
    assert math.copysign(1.0, back["numbers"][2]) == -1.0


def test_what_cannot_be_stored_is_refused_naming_it(tmp_path):
    with pytest.raises(d2s.serialization.SaveError, match=r"opt\.fn is a builtin_function_or_method"):
        d2s.save({"opt": {"fn": len}}, tmp_path / "x.safetensors")
    with pytest.raises(d2s.serialization.SaveError, match="key 1.5"):
        d2s.save({1.5: d2s.ones(1)}, tmp_path / "x.safetensors")
    assert not os.path.exists(tmp_path / "x.safetensors")


def test_map_location(tmp_path):
    d2s.save({"w": d2s.ones(2)}, tmp_path / "w.safetensors")
    assert d2s.load(tmp_path / "w.safetensors", map_location="cpu")["w"].device == "cpu"
    assert d2s.load(tmp_path / "w.safetensors", map_location=d2s.device("cpu") if hasattr(d2s, "device") and
                    callable(d2s.device) else "cpu")["w"].device == "cpu"


# ------------------------------------------------------------------ PyTorch's files
def _torch_state(torch):
    g = torch.Generator().manual_seed(0)
    return {"encoder.weight": torch.randn(3, 4, generator=g), "encoder.bias": torch.randn(3, generator=g).double(),
            "steps": torch.arange(5), "mask": torch.tensor([True, False, True]), "half": torch.ones(2).half(),
            "ids": torch.tensor([7, -1], dtype=torch.int32), "bytes": torch.tensor([0, 255], dtype=torch.uint8)}


def _write_reference():
    import torch
    from safetensors.torch import save_file
    save_file(_torch_state(torch), TORCH_FILE, metadata={"format": "pt"})


WANT_DTYPES = {"encoder.weight": "float32", "encoder.bias": "float64", "steps": "int64", "mask": "bool",
               "half": "float16", "ids": "int32", "bytes": "uint8"}


def _check_torch_file(path, torch_values=None):
    loaded = d2s.load(path)
    assert sorted(loaded) == sorted(WANT_DTYPES)
    for name, t in loaded.items():
        assert str(t.numpy().dtype) == WANT_DTYPES[name], name
        if torch_values is not None:
            np.testing.assert_array_equal(t.numpy(), torch_values[name].numpy())


def test_a_safetensors_file_written_by_pytorch_loads():
    _check_torch_file(TORCH_FILE)
    np.testing.assert_array_equal(d2s.load(TORCH_FILE)["ids"].numpy(), [7, -1])


def test_against_live_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    state = _torch_state(torch)
    st.save_file(state, str(tmp_path / "t.safetensors"))
    _check_torch_file(tmp_path / "t.safetensors", state)
    # and the other way: what d2s writes, PyTorch reads
    model = _model()
    d2s.save(model.state_dict(), tmp_path / "d.safetensors")
    back = st.load_file(str(tmp_path / "d.safetensors"))
    assert sorted(back) == sorted(model.state_dict())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(back[k].numpy(), v.numpy())


def test_files_are_interchangeable_with_the_safetensors_library(tmp_path):
    """The reference implementation (its numpy API: no torch needed) reads what d2s writes and
    writes what d2s reads."""
    sn = pytest.importorskip("safetensors.numpy")  # (installed by the test extra)
    state = {"w": np.arange(6, dtype="float32").reshape(2, 3), "n": np.array([1, -2], "int64"),
             "m": np.array([True, False]), "h": np.ones(3, "float16")}
    sn.save_file(state, str(tmp_path / "lib.safetensors"))
    back = d2s.load(tmp_path / "lib.safetensors")
    assert {k: (v.numpy().dtype, v.numpy().tolist()) for k, v in back.items()} == \
        {k: (v.dtype, v.tolist()) for k, v in state.items()}
    d2s.save({k: d2s.tensor(v) for k, v in state.items()}, tmp_path / "d2s.safetensors")
    lib = sn.load_file(str(tmp_path / "d2s.safetensors"))
    assert {k: (v.dtype, v.tolist()) for k, v in lib.items()} == {k: (v.dtype, v.tolist()) for k, v in state.items()}


def test_a_pickle_checkpoint_is_refused_with_the_way_to_convert_it(tmp_path):
    (tmp_path / "model.pt").write_bytes(pickle.dumps({"w": [1.0]}))
    (tmp_path / "zipped.pt").write_bytes(b"PK\x03\x04" + b"\0" * 40)
    for name in ("model.pt", "zipped.pt"):
        with pytest.raises(FormatError, match="d2s never unpickles.*safetensors.torch.save_file"):
            d2s.load(tmp_path / name)


def test_a_header_length_starting_like_a_pickle_or_zip_loads(tmp_path):
    # the header's length is the file's first 8 bytes: 0x4080 starts with the pickle opcode 0x80,
    # 0x4B50 with "PK"; the file is still a safetensors file (found by tests/test_model_zoo.py:
    # a MobileNetV2's state dict)
    for pad in range(600):
        obj = {"w" + "x" * pad: d2s.ones(2)}
        d2s.save(obj, tmp_path / "m.safetensors")
        if (tmp_path / "m.safetensors").read_bytes()[0] == 0x80:
            break
    else:
        raise AssertionError("no padding gives a header length whose first byte is 0x80")
    back = d2s.load(tmp_path / "m.safetensors")
    assert list(back) == list(obj) and back[list(obj)[0]].tolist() == [1.0, 1.0]
    # as another writer pads its header with spaces (the format allows it)
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    for n in (0x4B50, 0x180):
        path = tmp_path / f"h{n}.safetensors"
        path.write_bytes(n.to_bytes(8, "little") + header.ljust(n) + struct.pack("<2f", 1.0, 2.0))
        assert d2s.load(path)["w"].tolist() == [1.0, 2.0]


# ------------------------------------------------------------------ hostile files
class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _file(header, data=b"", length=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _good(tmp_path):
    d2s.save({"a": {0: d2s.ones(2)}, "b": d2s.zeros(3)}, tmp_path / "good.safetensors")
    raw = (tmp_path / "good.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _with_tree(header, tree):
    meta = dict(header["__metadata__"])
    meta["d2s"] = json.dumps({"format": "d2s-container", "version": 1, "tree": tree})
    return dict(header, __metadata__=meta)


HOSTILE = [
    ("empty", lambda h, d, m: b"", "too short"),
    ("header-longer-than-file", lambda h, d, m: _file(h, d, length=10 ** 6), "header declares 1000000 bytes"),
    ("header-over-cap", lambda h, d, m: _file(h, d, length=1 << 40), "over the"),
    ("not-json", lambda h, d, m: _file(b"{not json", d), "not valid JSON"),
    ("not-an-object", lambda h, d, m: _file([1, 2], d), "must be a JSON object"),
    ("duplicate-key", lambda h, d, m: _file(b'{"x":1,"x":2}', d), "duplicate key"),
    ("control-characters", lambda h, d, m: _file(dict(h, **{"evil\x1b[2J": h["b"]}), d), "control character"),
    ("deep-nesting", lambda h, d, m: _file(b"[" * 200 + b"]" * 200, d), "nested"),
    ("unknown-dtype", lambda h, d, m: _file(dict(h, b=dict(h["b"], dtype="O")), d), "dtype 'O'"),
    ("bfloat16", lambda h, d, m: _file(dict(h, b=dict(h["b"], dtype="BF16")), d), "bfloat16"),
    ("negative-dim", lambda h, d, m: _file(dict(h, b=dict(h["b"], shape=[-3])), d), "non-negative ints"),
    ("huge-shape", lambda h, d, m: _file(dict(h, b=dict(h["b"], shape=[1 << 20, 1 << 20])), d), "needs"),
    ("offsets-outside", lambda h, d, m: _file(dict(h, b=dict(h["b"], data_offsets=[0, 10 ** 9])), d), "not a range"),
    ("offsets-reversed", lambda h, d, m: _file(dict(h, b=dict(h["b"], data_offsets=[12, 0])), d), "not a range"),
    ("overlap", lambda h, d, m: _file(dict(h, b=dict(h["b"], data_offsets=[0, 12]), **{"a.0": dict(h["a.0"], data_offsets=[4, 12])}),
                                      d), "overlap"),
    ("extra-field", lambda h, d, m: _file(dict(h, b=dict(h["b"], code="import os")), d), "exactly dtype"),
    ("metadata-not-strings", lambda h, d, m: _file(dict(h, __metadata__={"d2s": {"tree": 1}}), d), "strings to strings"),
    ("tree-names-a-missing-tensor", lambda h, d, m: _file(_with_tree(h, {"t": "nope"}), d), "does not hold"),
    ("tree-leaves-a-tensor-unused", lambda h, d, m: _file(_with_tree(h, {"dict": [["b", {"t": "b"}]]}), d),
     "not in the saved structure"),
    ("pickle-payload", lambda h, d, m: pickle.dumps(_Payload(m)), "never unpickles"),
    ("over-max-bytes", None, "over max_bytes=8"),
]


@pytest.mark.parametrize("name, make, message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_file_is_refused_without_running_code(tmp_path, name, make, message):
    header, data = _good(tmp_path)
    marker = str(tmp_path / "payload-ran")
    path = tmp_path / f"{name}.safetensors"
    if make is None:
        path.write_bytes((tmp_path / "good.safetensors").read_bytes())
        with pytest.raises(FormatError, match=message):
            d2s.load(path, max_bytes=8)
    else:
        path.write_bytes(make(header, data, marker))
        with pytest.raises(FormatError, match=message):
            d2s.load(path)
    assert not os.path.exists(marker)


def test_twenty_hostile_variants():
    assert len(HOSTILE) >= 20


if __name__ == "__main__":
    _write_reference()
    print("wrote", TORCH_FILE)
