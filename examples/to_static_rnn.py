"""An eager RNN with data-dependent early stopping, converted with @to_static and trained.

    python examples/to_static_rnn.py [--steps N]

The model reads a sequence one step at a time and stops as soon as its hidden state settles
(the change between two steps falls below a tolerance), a decision that depends on the data,
so every batch may run a different number of steps. It then branches on a statistic of the
final state. Written as plain Python ``while`` / ``if`` on tensors, it runs eagerly as is;
``d2s.jit.to_static`` converts the same source into a program with a ``while`` and a ``cond``
op. Two copies from the same initial weights, one eager and one converted, are trained side
by side; the script checks that losses and weights stay equal, to the bit.
"""
import argparse

import numpy as np

import d2s
from d2s import nn, optim


class EarlyStopRNN(nn.Module):
    def __init__(self, n_in=3, hidden=16, n_out=2, tol=0.05):
        super().__init__()
        self.cell = nn.RNNCell(n_in, hidden)
        self.head = nn.Linear(hidden, n_out)
        self.tol = tol

    def forward(self, seq):
        """``seq``: (time, batch, features) -> logits (batch, n_out)."""
        h = self.cell(seq[0])
        t = 1
        delta = h.abs().mean() + 1.0
        while t < seq.shape[0] and delta > self.tol:  # data-dependent early stop
            h_new = self.cell(seq[t], h)
            delta = (h_new - h).abs().mean()
            h = h_new
            t = t + 1
        if h.mean() > 0:  # a branch on a statistic of the state
            h = h * 2.0
        return self.head(h)


def make_data(n_batches=4, time=12, batch=8, seed=0):
    rng = np.random.default_rng(seed)
    data = []
    for k in range(n_batches):
        # later batches fade out, so the state settles early and the loop stops early
        fade = np.exp(-np.arange(time) * (0.2 * k))[:, None, None]
        x = (rng.standard_normal((time, batch, 3)) * fade).astype(np.float32)
        y = (x[:3].sum(axis=(0, 2)) > 0).astype(np.int64)
        data.append((d2s.tensor(x), d2s.tensor(y)))
    return data


def main(steps=5, verbose=True):
    """Train eager and converted copies side by side; returns True when every check holds."""
    say = print if verbose else (lambda *a, **k: None)
    d2s.manual_seed(0)
    eager = EarlyStopRNN()
    static = EarlyStopRNN()
    static.load_state_dict(eager.state_dict())
    d2s.jit.to_static(static)
    loss_fn = nn.CrossEntropyLoss()
    opt_e = optim.Adam(eager.parameters(), lr=0.05)
    opt_s = optim.Adam(static.parameters(), lr=0.05)
    data = make_data()
    ok = True

    def check(name, cond, detail=""):
        nonlocal ok
        ok = ok and bool(cond)
        say(f"  [{'ok' if cond else 'FAIL'}] {name}{(': ' + detail) if detail else ''}")

    say("converted forward:")
    for line in static.forward.code.splitlines()[:12]:
        say("    " + line)
    prog = static.forward.get_program(*[data[0][0]])
    kinds = sorted({op.type for b in prog.blocks for op in b.ops if op.blocks})
    check("the while loop and the if became program ops", "while" in kinds and "cond" in kinds, str(kinds))

    def total_loss(model):
        with d2s.no_grad():
            return sum(loss_fn(model(x), y).item() for x, y in data) / len(data)

    first = total_loss(static)
    for step in range(steps):
        for x, y in data:
            losses = []
            for model, opt in ((eager, opt_e), (static, opt_s)):
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            if losses[0] != losses[1]:  # (the same sums in the same order: equal to the bit)
                check(f"step {step}: eager and converted losses are equal", False, f"{losses}")
        say(f"  step {step}: loss eager {losses[0]:.4f}  converted {losses[1]:.4f}")
    last = total_loss(static)
    check("training lowered the loss over the data", last < first, f"{first:.4f} -> {last:.4f}")
    diffs = [float(np.abs(pe.numpy() - ps.numpy()).max())
             for pe, ps in zip(eager.parameters(), static.parameters())]
    check("weights after training are equal", max(diffs) == 0.0, f"max diff {max(diffs):.1e}")
    outs = [(eager(x).numpy(), static(x).numpy()) for x, _ in data]
    check("outputs equal eager on every batch (each stops at its own step)",
          all(np.array_equal(a, b) for a, b in outs))
    # (one for the training calls and one for those under no_grad(): the grad mode is part of
    # a program's signature, as `x.requires_grad` and `d2s.is_grad_enabled()` differ in it)
    check("one program per grad mode serves every batch of this shape", len(static.forward.programs) == 2)
    say("all checks passed" if ok else "SOME CHECKS FAILED")
    return ok


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="train an early-stopping RNN eagerly and converted")
    ap.add_argument("--steps", type=int, default=5)
    raise SystemExit(0 if main(ap.parse_args().steps) else 1)
