"""Draw the pictures of the documentation (run from the repository root; commit what it writes).

    python docs/images/make_images.py            # the SVGs (needs Graphviz's `dot`) and the losses
    python docs/images/make_images.py --plot     # the loss curve PNG (needs matplotlib only)

* ``tour_graph.svg``: the program of the README tour's model, drawn by ``d2s graph --svg``;
* ``trace_program.svg`` and ``to_static_program.svg``: ``normalize`` of "trace or convert?"
  as the trace records it (one path, with its guards) and as ``to_static`` converts it (a
  ``cond`` op holding both branches);
* ``loss_curve.json`` / ``loss_curve.png``: the losses of ``examples/to_static_rnn.py``'s model
  trained eagerly and converted, side by side (``--plot`` draws the JSON, so matplotlib need not
  be installed beside d2s).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def tour_model_source():
    """The tour's imports and its ``Gated`` class, read from the README (so the picture is of
    the model the README shows), plus ``model = Gated()`` for ``d2s graph FILE::model``."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    tour = re.search(r"## A tour\n\n```python\n(.*?)```", readme, re.S).group(1)
    cls = re.search(r"^class Gated.*?(?=^\S)", tour, re.S | re.M).group(0)
    return "import d2s\nfrom d2s import nn\nimport d2s.nn.functional as F\n\n\n" + cls + "\n\nmodel = Gated()\n"


def svg(dot_source, path):
    subprocess.run(["dot", "-Tsvg", "-o", path], input=dot_source.encode(), check=True)
    print("wrote", os.path.relpath(path, ROOT))


def draw_graphs():
    from d2s.cli import main as d2s_main
    import d2s
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "tour.py")
        open(src, "w").write(tour_model_source())
        assert d2s_main(["graph", f"{src}::model", "--spec", "float32[?,8]", "--svg",
                         os.path.join(HERE, "tour_graph.svg")]) == 0

    def normalize(x):
        n = d2s.sqrt((x * x).sum())
        if n > 2:
            x = x / n
        return x

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TracerWarning is the point of the picture, not of this script
        traced = d2s.jit.trace(normalize, d2s.tensor([3.0, 4.0]))
    svg(traced.program.to_dot(), os.path.join(HERE, "trace_program.svg"))
    svg(d2s.jit.to_static(normalize).get_program(d2s.jit.InputSpec([2])).to_dot(),
        os.path.join(HERE, "to_static_program.svg"))


def record_losses(steps=12):
    import d2s
    from d2s import nn, optim
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from to_static_rnn import EarlyStopRNN, make_data
    d2s.manual_seed(0)
    eager, static = EarlyStopRNN(), EarlyStopRNN()
    static.load_state_dict(eager.state_dict())
    d2s.jit.to_static(static)
    loss_fn = nn.CrossEntropyLoss()
    opts = [optim.Adam(m.parameters(), lr=0.05) for m in (eager, static)]
    data = make_data()
    losses = {"eager": [], "to_static": []}
    for _ in range(steps):
        for x, y in data:
            for (name, model), opt in zip((("eager", eager), ("to_static", static)), opts):
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                losses[name].append(loss.item())
    with open(os.path.join(HERE, "loss_curve.json"), "w") as f:
        json.dump(losses, f)
    print("wrote docs/images/loss_curve.json")


def plot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    losses = json.load(open(os.path.join(HERE, "loss_curve.json")))
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=110)
    ax.plot(losses["eager"], lw=3, alpha=0.45, label="eager")
    ax.plot(losses["to_static"], lw=1.2, ls="--", color="black", label="to_static (converted)")
    ax.set_xlabel("optimizer step (Adam, one batch each)")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title("examples/to_static_rnn.py: the same training, eager and converted")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "loss_curve.png"))
    print("wrote docs/images/loss_curve.png")


if __name__ == "__main__":
    if "--plot" in sys.argv:
        plot()
    else:
        draw_graphs()
        record_losses()
