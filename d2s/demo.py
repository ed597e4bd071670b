"""``d2s demo``: the tour of the whole system on built-in synthetic data, each step checked.

1. an eager model whose forward has data-dependent control flow (an ``if`` on an input
   statistic and a ``while`` that rescales until small enough), checked against the same
   forward written in numpy on inputs taking each branch,
2. its converted code and its program text (the ``if`` a ``cond`` op, the ``while`` a
   ``while`` op), with outputs equal to eager,
3. trace vs source conversion on inputs taking both branches: a trace without guards is
   silently wrong on the other branch, a guarded trace raises there, to_static is right,
4. a short training run of the converted model (progress bar), with gradients equal to eager,
5. save, then run through the runtime alone in a fresh interpreter where d2s cannot be
   imported, and through ``d2s.jit.load``,
6. ONNX export (``If``/``Loop`` kept) and inference with onnxruntime, if installed.

Every check compares against an independent reference and is reported ``[ok]`` or ``[FAIL]``;
the exit status is 0 only if all pass.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from d2s_runtime.ops import OPS
from d2s_runtime.ops.control_flow import BranchLayout, WhileLayout

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
        self.passed = self.failed = 0
        self.t0 = time.perf_counter()

    def step(self, title):
        print(f"\n== {title} " + "=" * max(0, 66 - len(title)))

    def check(self, what, passed, detail=""):
        passed = bool(passed)
        self.ok &= passed
        self.passed += passed
        self.failed += not passed
        print(f"  [{'ok' if passed else 'FAIL'}] {what}" + (f"  ({detail})" if detail else ""))


def _progress(iterable, total, desc):
    try:
        from tqdm import tqdm
        return tqdm(iterable, total=total, desc=desc, ncols=72, leave=True)
    except ImportError:
        return _TextBar(iterable, total, desc)


class _TextBar:
    """A progress bar without tqdm: redrawn in place on a terminal, a line per quarter otherwise."""

    def __init__(self, iterable, total, desc):
        self.it, self.total, self.desc = iterable, total, desc
        self.postfix = ""
        self.tty = sys.stdout.isatty()

    def __iter__(self):
        for i, v in enumerate(self.it, 1):
            yield v
            done = int(30 * i / self.total)
            line = f"  {self.desc} [{'#' * done}{'.' * (30 - done)}] {i}/{self.total} {self.postfix}"
            if self.tty:
                print("\r" + line, end="", flush=True)
            elif i == self.total or i % max(1, self.total // 4) == 0:
                print(line, flush=True)
        if self.tty:
            print()

    def set_postfix_str(self, s):
        self.postfix = s


_RUNTIME_ONLY = r"""
import sys, json
class _Block:
    # d2s and gast cannot be imported here: only numpy and d2s_runtime run the model
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('d2s', 'gast'):
            raise ImportError('blocked for the demo: ' + name)
sys.meta_path.insert(0, _Block())
import numpy as np, d2s_runtime
model = d2s_runtime.load(sys.argv[1])
inputs = np.load(sys.argv[2])
np.savez(sys.argv[3], **{k: model(x=inputs[k]) for k in inputs.files})
print(json.dumps({'d2s_loaded': any(m.split('.')[0] in ('d2s', 'gast') for m in sys.modules)}))
"""


def _numpy_forward(model, x):
    """GatedNet's forward written again in plain numpy: the reference for step 1."""
    p = {k: v.numpy() for k, v in model.state_dict().items()}
    h = np.maximum(x @ p["fc1.weight"].T + p["fc1.bias"], 0)
    if h.mean() > 0.4:
        h = np.tanh(h @ p["gate.weight"].T + p["gate.bias"]) + h
    scale = np.float32(1.0)
    while np.abs(h * scale).max() > 4.0:
        scale = scale * np.float32(0.5)
    return (h * scale) @ p["fc2.weight"].T + p["fc2.bias"]


def _branch(model, x):
    """Whether ``x`` takes the ``if`` branch of GatedNet.forward (computed eagerly)."""
    with d2s.no_grad():
        return bool((F.relu(model.fc1(d2s.tensor(x))).mean() > 0.4).item())


def _grad(p):
    """A parameter's gradient, flattened; zeros where it got none (a branch not taken)."""
    return np.zeros(p.shape, np.float32).ravel() if p.grad is None else p.grad.numpy().ravel()


def _close(a, b):
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-5)


def main(quick=False):
    rep = _Report()
    d2s.manual_seed(0)
    x_np, y_np = _data()
    x, y = d2s.tensor(x_np), d2s.tensor(y_np)
    # two probes taking the two branches of the `if` (and different numbers of loop trips)
    probes = {"small inputs": x_np[:5] * 0.1, "large inputs": x_np[5:10] * 3.0}

    rep.step("1. eager model with data-dependent control flow")
    model = GatedNet()
    for name, p in probes.items():
        out = model(d2s.tensor(p)).numpy()
        print(f"  {name:<13} batch {p.shape[0]:>2}: takes the if branch: {str(_branch(model, p)):<5} -> logits "
              f"{out.shape}")
        rep.check(f"eager output on {name} equals the same forward written in numpy",
                  _close(out, _numpy_forward(model, p)))
    rep.check("the two probes take different branches",
              _branch(model, probes["small inputs"]) != _branch(model, probes["large inputs"]))

    rep.step("2. source conversion: converted code and program")
    eager_model = GatedNet()
    eager_model.load_state_dict(model.state_dict())
    static_model = d2s.jit.to_static(model)
    print("  converted forward (first lines):")
    for line in static_model.forward.code.splitlines()[:14]:
        print("    " + line)
    program = static_model.forward.get_program(d2s.jit.InputSpec([None, 8]))
    structured = [op for op in program.global_block().ops if op.blocks]
    kinds = sorted({op.type for op in structured})
    print(f"  program: {len(program.global_block().ops)} ops in the global block, control flow ops: {kinds}")
    for line in str(program).splitlines()[:8]:
        print("    " + line)
    layouts = {type(OPS[op.type].layout) for op in structured}
    rep.check("the if became a cond op and the while a while op", layouts == {BranchLayout, WhileLayout})
    rep.check("static output equals eager on the training batch",
              _close(static_model(x).numpy(), eager_model(x).numpy()))

    rep.step("3. trace vs source conversion on inputs taking both branches")
    probe_lo, probe_hi = (d2s.tensor(p) for p in probes.values())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = d2s.jit.trace(eager_model, (probe_lo,))
    print(f"  trace recorded one path and warned {len(caught)} time(s):")
    for w in caught[:3]:
        print("    " + str(w.message).splitlines()[0][:110])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        blind = d2s.jit.trace(eager_model, (probe_lo,), guards=False)
    rows = []
    for name, inp in (("small inputs", probe_lo), ("large inputs", probe_hi)):
        ref = eager_model(inp).numpy()
        try:
            trace_res = "match" if _close(traced(inp).numpy(), ref) else "WRONG"
        except d2s.jit.TraceGuardError:
            trace_res = "guard caught it"
        blind_res = "match" if _close(blind(inp).numpy(), ref) else "WRONG"
        st = "match" if _close(static_model(inp).numpy(), ref) else "WRONG"
        rows.append((name, blind_res, trace_res, st))
    print(f"  {'input':<14} {'trace, no guards':<18} {'trace':<18} {'to_static':<10}")
    for r in rows:
        print(f"  {r[0]:<14} {r[1]:<18} {r[2]:<18} {r[3]:<10}")
    rep.check("to_static matches eager on both paths", all(r[3] == "match" for r in rows))
    rep.check("a trace without guards is silently wrong on the other path", rows[1][1] == "WRONG")
    rep.check("the guarded trace is right on its path and raises on the other",
              rows[0][2] == "match" and rows[1][2] == "guard caught it")

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
    for xb in (x_np, probes["small inputs"]):  # both branches
        for p in list(eager_model.parameters()) + params:
            p.grad = None
        loss_fn(eager_model(d2s.tensor(xb)), y[:len(xb)]).backward()
        loss_fn(static_model(d2s.tensor(xb)), y[:len(xb)]).backward()
        ge = np.concatenate([_grad(p) for p in eager_model.parameters()])
        gs = np.concatenate([_grad(p) for p in static_model.parameters()])
        rep.check(f"static gradients equal eager gradients, batch {len(xb)}",
                  np.allclose(ge, gs, rtol=1e-4, atol=1e-6), f"max diff {np.abs(ge - gs).max():.1e}")

    rep.step("5. save, then run with the runtime alone")
    static_model.eval()
    spec = [d2s.jit.InputSpec([None, 8], name="x")]
    checks = {name: p for name, p in probes.items()}
    checks["batch of 17"] = x_np[:17]
    checks["training batch"] = x_np
    expected = {k: static_model(d2s.tensor(v)).numpy() for k, v in checks.items()}
    with tempfile.TemporaryDirectory(prefix="d2s_demo_") as tmp:
        path = os.path.join(tmp, "gated")
        d2s.jit.save(static_model, path, input_spec=spec)
        print(f"  saved to {path}: {sorted(os.listdir(path))}")
        np.savez(os.path.join(tmp, "inputs.npz"), **checks)
        proc = subprocess.run([sys.executable, "-c", _RUNTIME_ONLY, path, os.path.join(tmp, "inputs.npz"),
                               os.path.join(tmp, "outputs.npz")], capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr[-2000:])
        ok = proc.returncode == 0 and not json.loads(proc.stdout.strip().splitlines()[-1])["d2s_loaded"]
        if ok:
            with np.load(os.path.join(tmp, "outputs.npz")) as got:
                ok = all(_close(got[k], expected[k]) for k in checks)
        rep.check("a fresh interpreter without d2s runs it, same outputs on both branches and 3 batch sizes", ok)
        loaded = d2s.jit.load(path)
        outs = {k: loaded(d2s.tensor(v)) for k, v in checks.items()}
        rep.check("d2s.jit.load gives d2s Tensors with the same outputs",
                  all(isinstance(o, d2s.Tensor) and _close(o.numpy(), expected[k]) for k, o in outs.items()))

        rep.step("6. ONNX")
        try:
            import onnx
            import onnxruntime as ort
        except ImportError:
            print("  onnx/onnxruntime not installed: pip install 'd2s[onnx]' to run this step")
        else:
            onnx_path = os.path.join(tmp, "gated.onnx")
            d2s.onnx.export(static_model, onnx_path, spec)
            kinds = sorted({n.op_type for n in onnx.load(onnx_path).graph.node if n.op_type in ("If", "Loop")})
            print(f"  exported {os.path.getsize(onnx_path)} bytes; control flow nodes: {kinds}")
            rep.check("the ONNX graph keeps the control flow as If and Loop", kinds == ["If", "Loop"])
            sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
            rep.check("onnxruntime equals d2s on both branches (rtol 1e-5)",
                      all(_close(sess.run(None, {"x": v})[0], expected[k]) for k, v in checks.items()))

    dt = time.perf_counter() - rep.t0
    print(f"\nd2s demo {'passed' if rep.ok else 'FAILED'}: {rep.passed} checks passed, {rep.failed} failed, "
          f"in {dt:.1f} s")
    return 0 if rep.ok else 1


if __name__ == "__main__":
    sys.exit(main())
