"""Whole-model training steps, d2s side by side with PyTorch on the same weights and data.

    python benchmarks/bench_models.py [--threads N] [--repeat R] [--only NAMES]

Workloads (each defined once for either library, so both run the same architecture):

* ``resnet18``: a torchvision-style ResNet-18 (BasicBlocks 64-128-256-512, BatchNorm, max and
  adaptive average pooling), batch 8, 64x64 inputs, 10 classes: one SGD (momentum 0.9)
  training step, forward + cross-entropy + backward + update.

Columns: ``d2s eager``, ``d2s to_static`` (the converted model, Python backend: a program
holding convolutions does not lower to the native backend) and ``torch`` (eager, CPU). Both
libraries start from the same weights (PyTorch's initialization copied into d2s), and the losses
of the first steps are compared so that no column measures a different computation.

Every framework is limited to ``--threads`` threads (BLAS/OpenMP variables set before numpy is
imported, ``torch.set_num_threads``). Each timing is the median of ``--repeat`` steps after two
warm-up steps, the columns interleaved step by step so that machine noise hits them alike. The
load average is printed at the start and the end: on a shared machine it says how much to trust
the ratios. No timing is asserted anywhere.

Other engineers add the GPT, LSTM and MobileNet workloads of issue 26 here (one ``WORKLOADS``
entry each).
"""
import argparse
import os
import sys


def _threads_arg(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return 2


THREADS = _threads_arg(sys.argv)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = str(THREADS)

import time  # noqa: E402

import numpy as np  # noqa: E402


# ------------------------------------------------------------------ models, written once for torch or d2s
def resnet18(lib, num_classes=10):
    """torchvision's ResNet-18 layout with ``lib``'s layers (``lib`` is ``torch`` or ``d2s``)."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                               if stride != 1 or cin != cout else None)

        def forward(self, x):
            out = lib.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return lib.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            blocks, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*blocks)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(lib.relu(self.bn1(self.conv1(x))))
            x = self.avgpool(self.layers(x))
            return self.fc(lib.flatten(x, 1))

    return ResNet()


def _resnet18_data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 3, 64, 64)).astype("float32"), rng.integers(0, 10, 8)


WORKLOADS = {"resnet18": (resnet18, _resnet18_data, "ResNet-18, batch 8, 64x64, SGD step")}


# ------------------------------------------------------------------ steps
def _step(lib, model, forward, x, y):
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        loss = lib.nn.functional.cross_entropy(forward(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return float(loss.item())
    return step


def make_steps(name):
    """{column: step function} for workload ``name``, every column from the same weights."""
    import d2s
    make, data, _ = WORKLOADS[name]
    xa, ya = data()
    steps = {}
    state = None
    try:
        import torch
        torch.set_num_threads(THREADS)
        torch.manual_seed(0)
        tm = make(torch)
        state = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
        steps["torch"] = _step(torch, tm, tm, torch.tensor(xa), torch.tensor(ya))
    except ImportError:
        print("torch is not installed: its column is skipped")
    for column, convert in (("d2s eager", False), ("d2s to_static", True)):
        dm = make(d2s)
        if state is not None:
            dm.load_state_dict(state)
        forward = d2s.jit.to_static(dm) if convert else dm
        steps[column] = _step(d2s, dm, forward, d2s.tensor(xa), d2s.tensor(ya))
    return steps


def run(name, repeat):
    steps = make_steps(name)
    first = {k: [f(), f()] for k, f in steps.items()}  # warm-up (the conversion happens here)
    ref = first.get("torch", first["d2s eager"])
    for k, losses in first.items():
        if not np.allclose(losses, ref, rtol=1e-3, atol=1e-4):
            print(f"  warning: {k}'s first losses {losses} differ from {ref}")
    times = {k: [] for k in steps}
    for _ in range(repeat):
        for k, f in steps.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    base = med.get("torch")
    print(f"{name}: {WORKLOADS[name][2]} (median of {repeat} steps, {THREADS} thread(s))")
    for k, v in med.items():
        ratio = f"  {v / base:.2f}x torch" if base and k != "torch" else ""
        print(f"  {k:<15} {v:9.1f} ms{ratio}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workload names")
    args = p.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    for name in args.only.split(","):
        run(name.strip(), args.repeat)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
