"""d2s.amp against PyTorch: GradScaler's loss scaling (scale, unscale_, skipped steps on inf or
NaN gradients, backoff and growth of the scale, state_dict) over a short training run, with
torch's results stored in tests/torch_refs/test_amp.json (``python -m tests.test_amp`` writes
them) and compared live where torch imports; the disabled and GPU-less forms pass through;
autocast is accepted disabled and refused where it would change the CPU's precision."""
import json
import os
import warnings

import numpy as np
import pytest

import d2s

REF = os.path.join(os.path.dirname(__file__), "torch_refs", "test_amp.json")
X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
# the batches of the run: an inf and a NaN make the gradients non-finite on steps 2 and 5
BATCHES = [X, X * 2, np.full_like(X, np.inf), X - 1, X * 0.5, np.full_like(X, np.nan), X, X * 3]


def _run(lib, scaler_kwargs, unscale_first):
    """Train a linear layer with SGD through a GradScaler; returns per step the scale, whether
    the step ran, and the weights after it; and the final state_dict."""
    lib.manual_seed(0)
    w = lib.nn.Parameter(lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)))
    opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", **scaler_kwargs)
    out = []
    for xb in BATCHES:
        opt.zero_grad()
        loss = (lib.tensor(xb) @ w).square().sum()
        scaler.scale(loss).backward()
        if unscale_first:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_([w], 1.0)
        before = w.detach().numpy().copy()
        scaler.step(opt)
        scaler.update()
        after = w.detach().numpy()
        out.append({"scale": scaler.get_scale(), "stepped": bool(not np.array_equal(before, after)),
                    "w": after.tolist()})
    return {"steps": out, "state": scaler.state_dict()}


RUNS = {
    "defaults": ({}, False),
    "small_scale_fast_growth": ({"init_scale": 4.0, "growth_interval": 2, "growth_factor": 3.0,
                                 "backoff_factor": 0.25}, False),
    "unscale_then_clip": ({"init_scale": 1024.0, "growth_interval": 3}, True),
}


def _torch_results():
    import torch
    return {name: _run(torch, kw, first) for name, (kw, first) in RUNS.items()}


def _check(got, want):
    assert got["state"] == pytest.approx(want["state"])
    for g, w in zip(got["steps"], want["steps"]):
        assert g["scale"] == w["scale"] and g["stepped"] == w["stepped"]
        np.testing.assert_allclose(g["w"], w["w"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_grad_scaler_follows_pytorch(name):
    with open(REF) as f:
        stored = json.load(f)[name]
    got = _run(d2s, *RUNS[name])
    assert [s["stepped"] for s in got["steps"]].count(False) == 2  # the inf and the NaN step
    _check(got, stored)


def test_grad_scaler_against_live_torch():
    pytest.importorskip("torch")
    want = _torch_results()
    for name, (kw, first) in RUNS.items():
        _check(_run(d2s, kw, first), want[name])


def test_disabled_scaler_passes_through():
    w = d2s.nn.Parameter(d2s.ones(2))
    opt = d2s.optim.SGD([w], lr=0.5)
    scaler = d2s.amp.GradScaler(enabled=False)
    loss = (w * 3).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(w.detach().numpy(), [-0.5, -0.5])
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()


def test_a_cuda_scaler_without_a_gpu_disables_itself_with_pytorchs_warning():
    if d2s.cuda.is_available():
        pytest.skip("a GPU is present")
    from d2s.cuda.amp import GradScaler
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
        scaler = GradScaler(init_scale=8.0)
    assert not scaler.is_enabled()
    with pytest.warns(UserWarning, match="CUDA is not available"):
        assert not d2s.amp.GradScaler().is_enabled()


def test_scaler_misuse_raises_as_pytorch():
    w = d2s.nn.Parameter(d2s.ones(2))
    opt = d2s.optim.SGD([w], lr=0.5)
    scaler = d2s.amp.GradScaler("cpu")
    scaler.scale((w * 2).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(ValueError, match="growth factor"):
        d2s.amp.GradScaler("cpu", growth_factor=0.5)


def test_autocast_disabled_or_gpu_less_is_accepted_enabled_on_cpu_is_refused():
    with d2s.autocast("cpu", enabled=False):
        y = d2s.ones(2) * 2
    assert y.dtype == d2s.float32 and not d2s.is_autocast_enabled()

    @d2s.amp.autocast("cpu", enabled=False)
    def f(x):
        return x + 1
    np.testing.assert_array_equal(f(d2s.ones(2)).numpy(), [2.0, 2.0])
    if not d2s.cuda.is_available():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with d2s.cuda.amp.autocast():  # torch.cuda.amp.autocast on a machine without a GPU
                pass
    with pytest.raises(NotImplementedError, match="does not emulate PyTorch's autocast"):
        with d2s.autocast("cpu", dtype=d2s.bfloat16):
            pass


if __name__ == "__main__":  # regenerate the stored torch results
    with open(REF, "w") as f:
        json.dump(_torch_results(), f, indent=1)
    print("wrote", REF)


def test_autocast_queries_answer_as_pytorch_outside_a_region():
    # (PyTorch 2.13's answers, written down: torch.get_autocast_dtype('cpu') is bfloat16, ...)
    assert d2s.get_autocast_dtype("cpu") == d2s.bfloat16 and d2s.get_autocast_dtype("cuda") == d2s.float16
    assert d2s.get_autocast_cpu_dtype() == d2s.bfloat16 and d2s.get_autocast_gpu_dtype() == d2s.float16
    assert d2s.get_autocast_xla_dtype() == d2s.bfloat16
    assert not d2s.is_autocast_cpu_enabled() and not d2s.is_autocast_xla_enabled()
    assert d2s.is_autocast_cache_enabled() and d2s.clear_autocast_cache() is None
    assert d2s.autocast_increment_nesting() == 1 and d2s.autocast_decrement_nesting() == 0
    with pytest.raises(RuntimeError, match="unsupported device type"):
        d2s.get_autocast_dtype("tpu")
