"""Load beside a timed process, for the benchmarks' ``--contended`` mode.

``Contention(kind)`` starts, as a context manager, what shares the machine with the timed
process and stops it on exit (also on an exception or Ctrl-C):

* ``"busy"``: one process spinning in a pure Python loop (it holds one core whenever the
  scheduler lets it: the "one busy process beside it" of issue 26);
* ``"busy2"``: two such processes;
* ``"loader"``: one process iterating forever over a ``d2s.data.DataLoader`` with 2 worker
  processes, whose dataset does numpy work per item (the workers are always busy producing
  batches, which the parent receives and drops: a training job's input pipeline at full tilt).

The processes run at the timed process's priority, with no CPU affinity of their own.
"""
import os
import signal
import subprocess
import sys
import time

KINDS = ("busy", "busy2", "loader")

_BUSY = "while True:\n    pass\n"

_LOADER = r"""
import sys
sys.path[:0] = {paths!r}
import numpy as np
import d2s


class Augmented(d2s.data.Dataset):
    # each item: a 3x64x64 image, flipped, normalized and jittered (about a millisecond of numpy)
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.standard_normal((3, 64, 64)).astype("float32")
        for _ in range(8):
            img = (img[:, :, ::-1] - img.mean((1, 2), keepdims=True)) / (img.std((1, 2), keepdims=True) + 1e-5)
        return img, i % 10


if __name__ == "__main__":
    try:
        for _ in d2s.data.DataLoader(Augmented(), batch_size=32, num_workers=2):
            pass
    except KeyboardInterrupt:  # how the benchmark stops it (the loader then stops its workers)
        pass
"""


class Contention:
    """Start ``kind``'s processes on enter (after ``warm`` seconds, so that they run at full
    speed when timing starts), stop them on exit."""

    def __init__(self, kind, warm=1.0):
        if kind not in KINDS:
            raise ValueError(f"--contended: expected one of {', '.join(KINDS)}, got {kind!r}")
        self.kind, self.warm, self.procs = kind, warm, []

    def describe(self):
        return {"busy": "one busy process (a spinning Python loop) beside the timed one",
                "busy2": "two busy processes (spinning Python loops) beside the timed one",
                "loader": "a d2s DataLoader with 2 worker processes producing batches without pause beside the "
                          "timed one"}[self.kind]

    def __enter__(self):
        if self.kind.startswith("busy"):
            for _ in range(2 if self.kind == "busy2" else 1):
                self.procs.append(subprocess.Popen([sys.executable, "-c", _BUSY]))
        else:
            paths = [p for p in sys.path if p]
            here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            paths = [here, os.path.join(here, "runtime")] + paths
            # start_new_session: Ctrl-C in the terminal reaches the benchmark, which stops the loader
            # (and the loader its workers) in __exit__, not the loader first
            self.procs.append(subprocess.Popen([sys.executable, "-c", _LOADER.format(paths=paths)],
                                               start_new_session=True))
        time.sleep(self.warm)
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError(f"--contended {self.kind}: the load process exited with {p.returncode}")
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                # the loader shuts its workers down on KeyboardInterrupt (they also exit once their
                # parent is gone); a busy loop just ends
                p.send_signal(signal.SIGINT if self.kind == "loader" else signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()
        return False
