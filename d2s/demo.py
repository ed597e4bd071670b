"""``d2s demo``: the tour of the whole system on built-in synthetic data, each step checked.

1. an eager model whose forward has data-dependent control flow (an ``if`` on an input
   statistic and a ``while`` that rescales until small enough),
2. its converted code and its program text,
3. trace vs source conversion on inputs taking both branches,
4. a short training run of the converted model (progress bar), matching eager gradients,
5. save, then load and run through the runtime alone (a fresh interpreter without d2s),
6. ONNX inference with onnxruntime, if installed.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

import d2s
import d2s.nn.functional as F
from d2s import nn, optim


class GatedNet(nn.Module):
    """A small classifier whose path depends on the data it sees."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.gate = nn.Linear(32, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        if h.mean() > 0.4:                # branch on a statistic of the batch
            h = F.tanh(self.gate(h)) + h
        scale = d2s.ones([])
        while (h * scale).abs().max() > 4.0:  # rescale until small: a data-dependent trip count
            scale = scale * 0.5
        return self.fc2(h * scale)


def _data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    w = rng.normal(size=(8, 3)).astype(np.float32)
    y = np.argmax(x @ w, axis=1).astype(np.int64)
    return x, y


class _Report:
    def __init__(self):
        self.ok = True
        self.t0 = time.perf_counter()

    def step(self, title):
        print(f"\n== {title} " + "=" * max(0, 66 - len(title)))

    def check(self, what, passed, detail=""):
        self.ok &= bool(passed)
        print(f"  [{'ok' if passed else 'FAIL'}] {what}" + (f"  ({detail})" if detail else ""))


def _progress(iterable, total, desc):
    try:
        from tqdm import tqdm
        return tqdm(iterable, total=total, desc=desc, ncols=72, leave=True)
    except ImportError:
        return _TextBar(iterable, total, desc)


class _TextBar:
    def __init__(self, iterable, total, desc):
        self.it, self.total, self.desc = iterable, total, desc
        self.postfix = ""

    def __iter__(self):
        for i, v in enumerate(self.it, 1):
            yield v
            done = int(30 * i / self.total)
            print(f"\r  {self.desc} [{'#' * done}{'.' * (30 - done)}] {i}/{self.total} {self.postfix}",
                  end="", flush=True)
        print()

    def set_postfix_str(self, s):
        self.postfix = s


_RUNTIME_ONLY = r"""
import sys, json
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('d2s', 'gast'):
            raise ImportError('blocked for the demo: ' + name)
sys.meta_path.insert(0, _Block())
import numpy as np, d2s_runtime
model = d2s_runtime.load(sys.argv[1])
x = np.load(sys.argv[2])
out = model(x)
out = out[0] if isinstance(out, (list, tuple)) else out
np.save(sys.argv[3], out)
print(json.dumps({'d2s_loaded': 'd2s' in sys.modules}))
"""


def main(quick=False):
    rep = _Report()
    d2s.manual_seed(0)
    x_np, y_np = _data()
    x, y = d2s.tensor(x_np), d2s.tensor(y_np)

    rep.step("1. eager model with data-dependent control flow")
    model = GatedNet()
    eager_out = model(x)
    print(f"  GatedNet on a batch {tuple(x.shape)} -> logits {tuple(eager_out.shape)}")
    rep.check("eager forward runs", eager_out.shape == (256, 3))

    rep.step("2. source conversion: converted code and program")
    eager_model = GatedNet()
    eager_model.load_state_dict(model.state_dict())
    static_model = d2s.jit.to_static(model)
    print("  converted forward (first lines):")
    for line in static_model.forward.code.splitlines()[:14]:
        print("    " + line)
    program = static_model.forward.get_program(d2s.jit.InputSpec([None, 8]))
    text = str(program)
    kinds = sorted({op.type for op in program.global_block().ops if op.type in ("cond", "while")})
    print(f"  program: {len(program.global_block().ops)} ops in the global block, control flow ops: {kinds}")
    for line in text.splitlines()[:8]:
        print("    " + line)
    rep.check("the if became a cond op and the while a while op", kinds == ["cond", "while"])
    s_out = static_model(x)
    e_out = eager_model(x)
    rep.check("static output equals eager", np.allclose(s_out.numpy(), e_out.numpy(), atol=1e-5))

    rep.step("3. trace vs source conversion on inputs taking both branches")
    probe_lo, probe_hi = d2s.tensor(x_np * 0.1), d2s.tensor(x_np * 3.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = d2s.jit.trace(eager_model, (probe_lo,))
    print(f"  trace recorded one path and warned {len(caught)} time(s), e.g.:")
    if caught:
        print("    " + str(caught[0].message).splitlines()[0][:100])
    rows = []
    for name, inp in (("small inputs", probe_lo), ("large inputs", probe_hi)):
        ref = eager_model(inp).numpy()
        try:
            tr = traced(inp)
            trace_res = "match" if np.allclose(tr.numpy(), ref, atol=1e-5) else "WRONG"
        except d2s.jit.TraceGuardError:
            trace_res = "guard caught it"
        st = "match" if np.allclose(static_model(inp).numpy(), ref, atol=1e-5) else "WRONG"
        rows.append((name, trace_res, st))
    print(f"  {'input':<14} {'trace':<18} {'to_static':<10}")
    for r in rows:
        print(f"  {r[0]:<14} {r[1]:<18} {r[2]:<10}")
    rep.check("to_static matches eager on both paths", all(r[2] == "match" for r in rows))
    rep.check("trace is right on its own path and never silently wrong",
              rows[0][1] == "match" and rows[1][1] != "WRONG")

    rep.step("4. training the converted model")
    params = list(static_model.parameters())
    opt = optim.Adam(params, lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    steps = 30 if quick else 80
    first = last = None
    bar = _progress(range(steps), steps, "train")
    for _ in bar:
        opt.zero_grad()
        loss = loss_fn(static_model(x), y)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
        if hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(f"loss {last:.3f}")
    acc = float((static_model(x).numpy().argmax(1) == y_np).mean())
    print(f"  loss {first:.3f} -> {last:.3f}, train accuracy {acc:.2f}")
    rep.check("loss fell", last < first * 0.7, f"{first:.3f} -> {last:.3f}")
    eager_model.load_state_dict(static_model.state_dict())
    for p in eager_model.parameters():
        p.grad = None
    loss_e = loss_fn(eager_model(x), y)
    loss_e.backward()
    opt.zero_grad()
    loss_s = loss_fn(static_model(x), y)
    loss_s.backward()
    ge = np.concatenate([p.grad.numpy().ravel() for p in eager_model.parameters()])
    gs = np.concatenate([p.grad.numpy().ravel() for p in static_model.parameters()])
    rep.check("static gradients equal eager gradients", np.allclose(ge, gs, atol=1e-5),
              f"max diff {np.abs(ge - gs).max():.1e}")

    rep.step("5. save, then run with the runtime alone")
    tmp = tempfile.mkdtemp(prefix="d2s_demo_")
    path = os.path.join(tmp, "gated")
    static_model.eval()
    d2s.jit.save(static_model, path, input_spec=[d2s.jit.InputSpec([None, 8], name="x")])
    print(f"  saved to {path}: {sorted(os.listdir(path))}")
    expected = static_model(d2s.tensor(x_np[:17])).numpy()
    np.save(os.path.join(tmp, "x.npy"), x_np[:17])
    proc = subprocess.run([sys.executable, "-c", _RUNTIME_ONLY, path, os.path.join(tmp, "x.npy"),
                           os.path.join(tmp, "out.npy")], capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr[-2000:])
    ok = proc.returncode == 0 and not json.loads(proc.stdout.strip().splitlines()[-1])["d2s_loaded"]
    got = np.load(os.path.join(tmp, "out.npy")) if ok else None
    rep.check("runtime-only interpreter (d2s not importable) gives the same outputs, batch 17",
              ok and np.allclose(got, expected, atol=1e-5))
    loaded = d2s.jit.load(path)
    rep.check("d2s.jit.load gives the same outputs", np.allclose(
        np.asarray(_first(loaded(d2s.tensor(x_np[:17])))), expected, atol=1e-5))

    rep.step("6. ONNX")
    try:
        import onnxruntime as ort
    except ImportError:
        print("  onnxruntime not installed: pip install 'd2s[onnx]' to run this step")
    else:
        onnx_path = os.path.join(tmp, "gated.onnx")
        d2s.onnx.export(static_model, onnx_path, [d2s.jit.InputSpec([None, 8], name="x")])
        sess = ort.InferenceSession(onnx_path)
        out = sess.run(None, {sess.get_inputs()[0].name: x_np[:17]})[0]
        rep.check("onnxruntime output equals d2s (If/Loop kept)", np.allclose(out, expected, rtol=1e-5, atol=1e-5))

    dt = time.perf_counter() - rep.t0
    print(f"\nd2s demo {'passed' if rep.ok else 'FAILED'} in {dt:.1f} s")
    return 0 if rep.ok else 1


def _first(out):
    out = out[0] if isinstance(out, (list, tuple)) else out
    return out.numpy() if hasattr(out, "numpy") else out


if __name__ == "__main__":
    sys.exit(main())
