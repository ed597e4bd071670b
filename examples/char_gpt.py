"""Train a small character-level GPT on the Python standard library's own source code, then
generate text with it: eagerly, through the converted program, and from the saved program
served by `d2s run`.

    python examples/char_gpt.py [--steps N] [--out DIR] [--quick]

Nothing is downloaded: the text is the source of a few modules that ship with Python. The model
is `char_gpt_model.py` beside this file (a nanoGPT-style PyTorch model file whose imports name
d2s). Training shows its loss falling (a progress bar, with tqdm if installed; `loss.png` in
`--out` where matplotlib is installed); its forward is converted by `d2s.jit.to_static` and
trained through (`loss.backward()` runs the program's backward). Then:

1. `model.generate(...)` samples text eagerly, a Python `for` loop around the model;
2. `d2s.jit.to_static(model.generate)` converts that loop into ONE program holding one `while`
   op (whatever the number of tokens), which gives the same text for the same seed;
3. the converted generator is saved with `d2s.jit.save` (any batch, any prompt length) and
   served by `d2s run DIR --input idx=prompt.npy --seed N`, which runs it with numpy alone:
   the same text again.

`--quick` trains a tiny model for a few steps (the test runs it).
"""
import argparse
import inspect
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import d2s  # noqa: E402
from d2s import nn  # noqa: E402
from d2s.jit import InputSpec  # noqa: E402

import char_gpt_model as cg  # noqa: E402

# pure-Python standard library modules: their source is the corpus
SOURCES = ("textwrap", "string", "fractions", "calendar", "heapq", "bisect", "shlex", "difflib", "statistics",
           "argparse", "dataclasses", "functools", "pprint", "configparser", "csv", "glob", "fnmatch", "colorsys")


# ------------------------------------------------------------------ data
def load_text(max_chars=None):
    """The source of ``SOURCES``, printable ASCII only (tabs as spaces, other characters dropped)."""
    import importlib
    parts = []
    for name in SOURCES:
        try:
            parts.append(inspect.getsource(importlib.import_module(name)))
        except (OSError, TypeError, ImportError):  # (a build without sources)
            continue
    text = "\n".join(parts).replace("\t", "    ")
    text = "".join(c for c in text if c == "\n" or 32 <= ord(c) < 127)
    return text[:max_chars] if max_chars else text


class CharTokenizer:
    """Characters <-> ids, over the characters of a text."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.ids = {c: i for i, c in enumerate(self.chars)}

    def encode(self, text):
        return np.array([self.ids[c] for c in text if c in self.ids], dtype=np.int64)

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)


def get_batch(data, block, batch, rng):
    """``batch`` random windows of ``block`` characters and the characters that follow each."""
    ix = rng.integers(0, len(data) - block - 1, size=batch)
    x = np.stack([data[i:i + block] for i in ix])
    y = np.stack([data[i + 1:i + 1 + block] for i in ix])
    return d2s.tensor(x), d2s.tensor(y)


# ------------------------------------------------------------------ training
def progress(iterable, total, desc):
    """tqdm where it is installed, else a plain text bar."""
    try:
        from tqdm import tqdm
        return tqdm(iterable, total=total, desc=desc, ncols=80)
    except ImportError:
        return _TextBar(iterable, total, desc)


class _TextBar:
    def __init__(self, iterable, total, desc):
        self.it, self.total, self.desc, self.postfix = iterable, total, desc, ""
        self.tty = sys.stdout.isatty()

    def __iter__(self):
        for i, v in enumerate(self.it, 1):
            yield v
            done = int(30 * i / self.total)
            line = f"{self.desc} [{'#' * done}{'.' * (30 - done)}] {i}/{self.total} {self.postfix}"
            if self.tty:
                print("\r" + line, end="", flush=True)
            elif i == self.total or i % max(1, self.total // 5) == 0:
                print(line, flush=True)
        if self.tty:
            print()

    def set_postfix_str(self, s):
        self.postfix = s


def train(model, data, steps, block, batch, lr, seed=0):
    """AdamW on random windows of ``data``, through a converted forward (one program, its
    backward a program too); returns the loss of every step."""
    rng = np.random.default_rng(seed)
    opt = model.configure_optimizers(weight_decay=0.1, learning_rate=lr, betas=(0.9, 0.99))
    model.train()

    @d2s.jit.to_static
    def loss_of(x, y):
        return model(x, y)[1]

    losses = []
    bar = progress(range(steps), steps, "training")
    for step in bar:
        for group in opt.param_groups:  # a short warm-up, then a cosine decay to a tenth
            warm = min(1.0, (step + 1) / max(1, steps // 10))
            group["lr"] = lr * warm * (0.55 + 0.45 * np.cos(np.pi * step / steps))
        x, y = get_batch(data, block, batch, rng)
        loss = loss_of(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == steps - 1:
            bar.set_postfix_str(f"loss {np.mean(losses[-10:]):.3f}")
    model.eval()
    return losses


def plot_losses(losses, path):
    """The loss curve as a PNG where matplotlib is installed; returns the path or None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=0.6, alpha=0.5, label="step")
    k = max(1, len(losses) // 25)
    smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
    ax.plot(np.arange(len(smooth)) + k - 1, smooth, lw=1.5, label=f"mean of {k}")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ generation and serving
class Sampler(nn.Module):
    """What is saved: ``model.generate`` with fixed settings, a function of the prompt ids."""

    def __init__(self, model, max_new_tokens, temperature, top_k):
        super().__init__()
        self.model, self.n, self.temperature, self.top_k = model, max_new_tokens, temperature, top_k

    def forward(self, idx):
        return self.model.generate(idx, self.n, self.temperature, self.top_k, use_cache=True)


def _child_env():
    """The environment of a child process that imports this d2s (and its runtime)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(d2s.__file__)))
    path = [here, os.path.join(here, "runtime"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def serve(model_dir, prompt_ids, seed, out_dir):
    """``d2s run`` on the saved program: the generated ids (one row per prompt)."""
    prompt_path = os.path.join(out_dir, "prompt.npy")
    np.save(prompt_path, prompt_ids)
    served = os.path.join(out_dir, "served")
    cmd = [sys.executable, "-m", "d2s", "run", model_dir, "--input", f"idx={prompt_path}", "--seed", str(seed),
           "--out", served]
    r = subprocess.run(cmd, capture_output=True, text=True, env=_child_env(), timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"d2s run failed:\n{r.stderr}")
    (name,) = os.listdir(served)
    return np.load(os.path.join(served, name))


def main(argv=None):
    """Train, generate three ways, check they agree; returns what it measured (a dict)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=500, help="training steps (default 500)")
    p.add_argument("--out", default="char_gpt_out", help="where the loss curve and the saved program go")
    p.add_argument("--tokens", type=int, default=200, help="characters to generate (default 200)")
    p.add_argument("--seed", type=int, default=1, help="the seed of the sampling (default 1)")
    p.add_argument("--quick", action="store_true", help="a tiny model and a few steps (seconds)")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.quick:
        text = load_text(40_000)
        steps, block, batch, lr = min(args.steps, 30), 32, 8, 3e-3
        shape = dict(n_layer=1, n_head=2, n_embd=32)
        n_new = min(args.tokens, 24)
    else:
        text = load_text()
        steps, block, batch, lr = args.steps, 128, 12, 3e-3
        shape = dict(n_layer=3, n_head=4, n_embd=96)
        n_new = args.tokens
    tok = CharTokenizer(text)
    data = tok.encode(text)
    split = int(0.95 * len(data))
    print(f"corpus: {len(text):,} characters of Python's standard library ({len(SOURCES)} modules), "
          f"vocabulary {len(tok.chars)}")
    config = cg.GPTConfig(vocab_size=len(tok.chars), block_size=256, dropout=0.0, **shape)
    d2s.manual_seed(0)
    model = cg.GPT(config)
    print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters "
          f"({config.n_layer} layers, {config.n_head} heads, {config.n_embd} wide)")

    t0 = time.perf_counter()
    losses = train(model, data[:split], steps, block, batch, lr)
    print(f"trained {steps} steps in {time.perf_counter() - t0:.1f} s: loss {np.mean(losses[:5]):.3f} -> "
          f"{np.mean(losses[-10:]):.3f}")
    with d2s.no_grad():
        x, y = get_batch(data[split:], block, 16, np.random.default_rng(1))
        held_out = model(x, y)[1].item()
    print(f"held-out loss {held_out:.3f}")
    png = plot_losses(losses, os.path.join(args.out, "loss.png"))
    if png:
        print(f"loss curve: {png}")

    prompt = "def "
    idx = d2s.tensor(tok.encode(prompt)[None, :])
    temperature, top_k = 0.8, 10

    d2s.manual_seed(args.seed)
    t0 = time.perf_counter()
    eager = model.generate(idx, n_new, temperature, top_k, use_cache=True)
    t_eager = time.perf_counter() - t0

    generate = d2s.jit.to_static(model.generate)
    d2s.manual_seed(args.seed)
    t0 = time.perf_counter()
    converted = generate(idx, n_new, temperature, top_k, use_cache=True)  # converts, builds, runs
    t_first = time.perf_counter() - t0
    for _ in range(2):  # (the second call optimizes the program and generates its code; then it is timed)
        d2s.manual_seed(args.seed)
        t0 = time.perf_counter()
        converted = generate(idx, n_new, temperature, top_k, use_cache=True)
        t_converted = time.perf_counter() - t0
    program = generate.get_program(idx, n_new, temperature, top_k, use_cache=True)
    loops = sum(op.type == "while" for op in program.global_block().ops)
    same = np.array_equal(eager.numpy(), converted.numpy())
    text_out = tok.decode(eager.numpy()[0])
    print(f"\n--- eager ({n_new / t_eager:.0f} characters/s) ---\n{text_out}")
    print(f"--- converted: one program, {loops} while op ({n_new / t_converted:.0f} characters/s; its first call, "
          f"which converts and builds it, {t_first:.2f} s): {'the same text' if same else 'DIFFERENT TEXT'} ---")

    model_dir = os.path.join(args.out, "char_gpt_sampler")
    sampler = d2s.jit.to_static(Sampler(model, n_new, temperature, top_k).eval())
    d2s.jit.save(sampler, model_dir, input_spec=[InputSpec([None, None], "int64", name="idx")])
    with open(os.path.join(args.out, "vocab.json"), "w") as f:
        json.dump(tok.chars, f)
    served = serve(model_dir, idx.numpy(), args.seed, args.out)
    served_same = np.array_equal(served, eager.numpy())
    print(f"--- served by `d2s run {model_dir} --input idx=... --seed {args.seed}` (numpy only): "
          f"{'the same text' if served_same else 'DIFFERENT TEXT'} ---\n{tok.decode(served[0])}")
    if not (same and served_same):
        raise SystemExit("the converted or served text differs from eager's")
    return {"losses": losses, "held_out": held_out, "text": text_out, "same": same, "served_same": served_same,
            "loops": loops, "png": png}


if __name__ == "__main__":
    main()
