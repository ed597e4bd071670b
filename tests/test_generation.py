"""Generation as one program (issue 29), on the example's character GPT
(``examples/char_gpt_model.py``): a plain Python ``generate`` (a ``for`` over
``range(max_new_tokens)`` around the model, top-k sampling, an end-of-text stop) converts into one
program whose size does not grow with ``max_new_tokens`` and gives eager's tokens for the same
seed, with and without a static key/value cache; a greedy decoder stopping on a tensor condition
and a beam search with early break give eager's tokens in the program, under ``d2s_runtime``
(numpy only, and ``d2s run``) and in onnxruntime."""
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.jit import InputSpec

from generate_helpers import assert_same, count_ops, top_ops

ROOT = Path(__file__).resolve().parent.parent
MODEL_FILE = ROOT / "examples" / "char_gpt_model.py"


def _load_model_file():
    spec = importlib.util.spec_from_file_location("char_gpt_model", MODEL_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cg = _load_model_file()
CFG = cg.GPTConfig(vocab_size=24, block_size=300, n_layer=2, n_head=2, n_embd=16)
PROMPTS = [np.random.default_rng(s).integers(0, 24, shape) for s, shape in ((0, (2, 5)), (1, (1, 3)), (2, (3, 7)))]


@pytest.fixture(scope="module")
def model():
    d2s.manual_seed(0)
    return cg.GPT(CFG).eval()


@pytest.fixture(scope="module")
def cyclic():
    """A model trained a little on the token sequence 0, 1, ..., 23, 0, 1, ...: greedy decoding
    counts up, so every token ends every row early, each row at its own step."""
    d2s.manual_seed(0)
    m = cg.GPT(CFG)
    opt = m.configure_optimizers(0.0, 3e-2, (0.9, 0.99))
    rng = np.random.default_rng(0)
    for _ in range(40):
        x = (rng.integers(0, CFG.vocab_size, (8, 1)) + np.arange(17)) % CFG.vocab_size
        _, loss = m(d2s.tensor(x[:, :-1]), d2s.tensor(x[:, 1:]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return m.eval()


def _seeded(fn, *args, seed=11, **kwargs):
    d2s.manual_seed(seed)
    return fn(*args, **kwargs)


def _n_ops(prog):
    return sum(len(b.ops) for b in prog.blocks)


def _stopping_eos(model, idx, n):
    """A token that greedy decoding of every row emits within ``n - 2`` steps, at different steps
    (so rows end one after the other, then all of them before ``n``)."""
    out = model.generate(d2s.tensor(idx), n, temperature=0.0).numpy()[:, idx.shape[1]:]
    for eos in range(CFG.vocab_size):
        if all(eos in row[:n - 2] for row in out) and len({list(row).index(eos) for row in out}) > 1:
            return eos
    raise AssertionError(f"no token ends every row early: {out}")


# ------------------------------------------------------------------ one program, eager's tokens
@pytest.mark.parametrize("use_cache", [False, True])
def test_generate_is_one_program_whatever_max_new_tokens(model, use_cache):
    sg = d2s.jit.to_static(model.generate)
    idx = d2s.tensor(PROMPTS[0])
    kw = dict(temperature=0.8, top_k=5, eos=3, use_cache=use_cache)
    small, big = sg.get_program(idx, 16, **kw), sg.get_program(idx, 256, **kw)
    assert top_ops(small, "while") == 1 and top_ops(big, "while") == 1
    assert _n_ops(small) == _n_ops(big)
    for n in (16, 40):
        assert_same(_seeded(sg, idx, n, **kw), _seeded(model.generate, idx, n, **kw))


@pytest.mark.parametrize("use_cache", [False, True])
@pytest.mark.parametrize("temperature,top_k", [(1.0, None), (0.7, 4), (1.3, 1)])
def test_sampling_gives_eager_tokens_for_the_same_seed(model, use_cache, temperature, top_k):
    sg = d2s.jit.to_static(model.generate)
    for p in PROMPTS:
        idx = d2s.tensor(p)
        for seed in (1, 2):
            want = _seeded(model.generate, idx, 20, temperature, top_k, use_cache=use_cache, seed=seed)
            got = _seeded(sg, idx, 20, temperature, top_k, use_cache=use_cache, seed=seed)
            assert_same(got, want)


@pytest.mark.parametrize("use_cache", [False, True])
def test_greedy_decoding_stops_when_every_sequence_has_ended(cyclic, use_cache):
    model = cyclic
    sg = d2s.jit.to_static(model.generate)
    idx = d2s.tensor(PROMPTS[0])
    eos = _stopping_eos(model, PROMPTS[0], 30)
    want = model.generate(idx, 30, temperature=0.0, eos=eos, use_cache=use_cache)
    assert want.shape[1] < idx.shape[1] + 30  # stopped early
    assert_same(sg(idx, 30, temperature=0.0, eos=eos, use_cache=use_cache), want)
    prog = sg.get_program(idx, 30, temperature=0.0, eos=eos, use_cache=use_cache)
    loop = next(op for op in prog.global_block().ops if op.type == "while")
    assert loop.blocks["cond"].ops  # the loop's condition is computed (the length limit and the stop flag)


# ------------------------------------------------------------------ the static cache
def test_a_decode_step_is_a_fixed_shape_program(model):
    def step(token, pos, *kv):
        cache = [(kv[i], kv[i + 1]) for i in range(0, len(kv), 2)]
        logits, _ = model(token, cache=cache, pos=pos)
        return logits[:, -1, :]

    sf = d2s.jit.to_static(step)
    prompt = d2s.tensor(PROMPTS[0])
    caches = [model.new_cache(2, 12) for _ in range(2)]
    flat = [[t for kv in c for t in kv] for c in caches]
    token, pos = d2s.tensor([[3], [4]]), d2s.tensor(5)
    with d2s.no_grad():  # (the cache is written in place: no autograd history)
        for c in caches:
            model(prompt, cache=c)
        want, got = step(token, pos, *flat[0]), sf(token, pos, *flat[1])
    assert_same(got, want)
    assert_same(flat[1], flat[0])  # the caller's cache written in place, as eagerly
    prog = sf.get_program(token, pos, *flat[1])
    assert all(None not in tuple(v.type.shape) for b in prog.blocks for v in b.vars.values())


class StepAttention(nn.Module):
    """One head of attention over a cache written with ``k_cache[:, :, pos] = k``."""

    def __init__(self):
        super().__init__()
        d2s.manual_seed(4)
        self.qkv = nn.Linear(8, 24)

    def forward(self, x, steps):
        B = x.size(0)
        k_cache, v_cache = d2s.zeros(B, 1, steps, 8), d2s.zeros(B, 1, steps, 8)
        outs = d2s.zeros(B, steps, 8)
        for pos in range(steps):
            q, k, v = self.qkv(x).split(8, dim=-1)
            k_cache[:, :, pos] = k[:, None, :]
            v_cache[:, :, pos] = v[:, None, :]
            visible = d2s.arange(steps) <= pos
            y = d2s.nn.functional.scaled_dot_product_attention(q[:, None, None, :], k_cache, v_cache,
                                                               attn_mask=visible)
            x = d2s.tanh(y[:, 0, 0, :] + x)
            outs[:, pos] = x
        return outs, k_cache


def test_a_cache_written_at_a_position_tensor_in_a_loop_op():
    m = StepAttention().eval()
    sm = d2s.jit.to_static(StepAttention().eval())
    x = d2s.tensor(np.random.default_rng(5).standard_normal((2, 8)), dtype="float32")
    assert_same(sm(x, 20), m(x, 20))
    assert top_ops(sm.forward.get_program(x, 20), "while") == 1


# ------------------------------------------------------------------ beam search
def test_beam_search_with_early_break_gives_eager_tokens(cyclic):
    model = cyclic
    sb = d2s.jit.to_static(cg.beam_search)
    idx = d2s.tensor(PROMPTS[0])
    for eos in (2, 9):
        want = cg.beam_search(model, idx, 30, 3, eos)
        assert want[0].shape[1] < idx.shape[1] + 30  # every beam counts up to eos within 24 steps
        assert_same(sb(model, idx, 30, 3, eos), want)
        short = cg.beam_search(model, idx, 6, 3, eos)  # (some beams still going at the end)
        assert_same(sb(model, idx, 6, 3, eos), short)
    assert top_ops(sb.get_program(model, idx, 30, 3, eos), "while") == 2  # the search and the backtracking


# ------------------------------------------------------------------ deployment
class Generator(nn.Module):
    """What gets saved: the model's ``generate`` with fixed settings, a function of the prompt."""

    def __init__(self, model, n, **settings):
        super().__init__()
        self.model, self.n, self.settings = model, n, settings

    def forward(self, idx):
        return self.model.generate(idx, self.n, **self.settings)


class BeamSearch(nn.Module):
    def __init__(self, model, n, beam, eos):
        super().__init__()
        self.model, self.n, self.beam, self.eos = model, n, beam, eos

    def forward(self, idx):
        return cg.beam_search(self.model, idx, self.n, self.beam, self.eos)


SPEC = [InputSpec([None, None], "int64", name="idx")]

CHILD = textwrap.dedent("""
    import sys

    class Block:  # d2s and gast must not be imported by the runtime
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("d2s", "gast"):
                raise ImportError(f"{name} must not be imported by d2s_runtime")
            return None

    sys.meta_path.insert(0, Block())
    import numpy as np
    import d2s_runtime
    model = d2s_runtime.load(sys.argv[1])
    for k, path in enumerate(sys.argv[2:]):
        d2s_runtime.manual_seed(11)
        out = model(np.load(path))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for j, o in enumerate(outs):
            np.save(f"{path}.out{j}.npy", o)
""")


def _numpy_only_run(tmp_path, model_dir, prompts):
    paths = []
    for k, p in enumerate(prompts):
        paths.append(str(tmp_path / f"prompt{k}.npy"))
        np.save(paths[-1], p)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runtime"), os.path.dirname(os.path.dirname(np.__file__))])
    r = subprocess.run([sys.executable, "-S", str(script), model_dir, *paths], env=env, capture_output=True,
                       text=True, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    return [[np.load(f"{p}.out{j}.npy") for j in range(2) if os.path.exists(f"{p}.out{j}.npy")] for p in paths]


def _eager(module, p):
    out = _seeded(module, d2s.tensor(p))
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def test_saved_generate_runs_with_numpy_only_and_from_the_command_line(model, cyclic, tmp_path):
    eos = _stopping_eos(cyclic, PROMPTS[0], 30)
    for name, m, settings in (("greedy", cyclic, dict(temperature=0.0, eos=eos, use_cache=True)),
                              ("sampled", model, dict(temperature=0.8, top_k=5, eos=3, use_cache=True))):
        gen = Generator(m, 30, **settings).eval()
        path = str(tmp_path / name)
        d2s.jit.save(d2s.jit.to_static(Generator(m, 30, **settings).eval()), path, input_spec=SPEC)
        got = _numpy_only_run(tmp_path, path, PROMPTS)
        for p, g in zip(PROMPTS, got):
            assert_same(g, _eager(gen, p))
    # d2s run serves the saved program: the same seed, the same samples
    np.save(tmp_path / "idx.npy", PROMPTS[2])
    r = subprocess.run([sys.executable, "-m", "d2s", "run", path, "--input", f"idx={tmp_path / 'idx.npy'}",
                        "--seed", "11", "--out", str(tmp_path / "served")], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "runtime")])})
    assert r.returncode == 0, r.stderr
    served = [np.load(tmp_path / "served" / f) for f in sorted(os.listdir(tmp_path / "served"))]
    assert_same(served, _eager(gen, PROMPTS[2]))


def test_saved_beam_search_runs_with_numpy_only(cyclic, tmp_path):
    beam = BeamSearch(cyclic, 30, 3, 2).eval()
    path = str(tmp_path / "beam")
    d2s.jit.save(d2s.jit.to_static(BeamSearch(cyclic, 30, 3, 2).eval()), path, input_spec=SPEC)
    for p, g in zip(PROMPTS, _numpy_only_run(tmp_path, path, PROMPTS)):
        assert_same(g, _eager(beam, p))


def _assert_onnx_matches(got, want):
    """onnxruntime's outputs against eager's: tokens exactly, scores up to float rounding
    (onnxruntime's kernels sum in their own order)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        else:
            assert np.array_equal(g, w), (g, w)


def _onnx_session(module, path, random_ops=False):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    d2s.onnx.export(d2s.jit.to_static(module), path, SPEC, random_ops=random_ops)
    graph = onnx.load(path).graph
    return ort.InferenceSession(path), [n.op_type for n in graph.node if n.op_type in ("Loop", "If")]


def test_onnx_greedy_generate_is_one_loop_with_eager_tokens(cyclic, tmp_path):
    model = cyclic
    eos = _stopping_eos(model, PROMPTS[0], 30)
    for use_cache in (False, True):
        gen = Generator(model, 30, temperature=0.0, eos=eos, use_cache=use_cache).eval()
        session, flow = _onnx_session(Generator(model, 30, temperature=0.0, eos=eos, use_cache=use_cache).eval(),
                                      str(tmp_path / f"g{use_cache}.onnx"))
        assert flow.count("Loop") == 1
        for p in PROMPTS:
            _assert_onnx_matches(session.run(None, {"idx": p}), _eager(gen, p))


def test_onnx_beam_search_gives_eager_tokens(cyclic, tmp_path):
    beam = BeamSearch(cyclic, 30, 3, 2).eval()
    session, flow = _onnx_session(BeamSearch(cyclic, 30, 3, 2).eval(), str(tmp_path / "beam.onnx"))
    assert flow.count("Loop") == 2
    for p in PROMPTS:
        _assert_onnx_matches(session.run(None, {"idx": p}), _eager(beam, p))


def test_onnx_sampling_only_when_asked(model, tmp_path):
    sampled = dict(temperature=0.8, top_k=4, eos=3, use_cache=True)
    with pytest.raises(d2s.onnx.ExportError, match="random_ops=True"):
        _onnx_session(Generator(model, 20, **sampled).eval(), str(tmp_path / "s.onnx"))
    session, flow = _onnx_session(Generator(model, 20, **sampled).eval(), str(tmp_path / "s.onnx"), random_ops=True)
    assert flow.count("Loop") == 1
    out, = session.run(None, {"idx": PROMPTS[0]})  # onnxruntime's own draws: the prompt, then tokens
    assert out.dtype == np.int64 and np.array_equal(out[:, :5], PROMPTS[0]) and out.shape[1] <= 25
    assert ((0 <= out) & (out < CFG.vocab_size)).all()
    # top_k=1 leaves one token to draw: onnxruntime's tokens are eager's
    one = dict(temperature=0.8, top_k=1, use_cache=True)
    session, _ = _onnx_session(Generator(model, 20, **one).eval(), str(tmp_path / "one.onnx"), random_ops=True)
    _assert_onnx_matches(session.run(None, {"idx": PROMPTS[1]}), _eager(Generator(model, 20, **one).eval(), PROMPTS[1]))


# ------------------------------------------------------------------ the same file under PyTorch
def test_the_model_file_runs_under_pytorch_with_the_same_tokens(model):
    torch = pytest.importorskip("torch")
    src = MODEL_FILE.read_text()
    for ours, theirs in (("import d2s as torch", "import torch"), ("import d2s.nn as nn", "import torch.nn as nn"),
                         ("import d2s.nn.functional as F", "import torch.nn.functional as F")):
        assert ours in src
        src = src.replace(ours, theirs)
    ns = {"__name__": "char_gpt_model_torch"}
    exec(compile(src, str(MODEL_FILE), "exec"), ns)
    tm = ns["GPT"](ns["GPTConfig"](**vars(CFG))).eval()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    for p in PROMPTS:
        logits, _ = model(d2s.tensor(p))
        t_logits, _ = tm(torch.tensor(p))
        np.testing.assert_allclose(logits.numpy(), t_logits.detach().numpy(), rtol=1e-4, atol=1e-5)
        for use_cache in (False, True):
            ours = model.generate(d2s.tensor(p), 12, temperature=0.0, use_cache=use_cache).numpy()
            theirs = tm.generate(torch.tensor(p), 12, temperature=0.0, use_cache=use_cache).numpy()
            assert np.array_equal(ours, theirs)
        ours = cg.beam_search(model, d2s.tensor(p), 8, 3, 2)
        theirs = ns["beam_search"](tm, torch.tensor(p), 8, 3, 2)
        assert np.array_equal(ours[0].numpy(), theirs[0].numpy())
        np.testing.assert_allclose(ours[1].numpy(), theirs[1].numpy(), rtol=1e-4)
