"""Batch inference of a saved d2s model on Dask.

    python examples/batch_inference_dask.py [--rows N] [--chunk N] [--scheduler processes|threads|ADDRESS]

A model saved with ``d2s.jit.save`` is a directory that ``d2s_runtime.load`` runs with numpy
alone, as a plain callable on numpy batches; so any engine that maps a function over chunks of
an array can serve it. Here a Dask array of inputs is split into row chunks and
``map_blocks`` runs the saved model on each chunk: on local worker processes by default, or
on a Dask cluster when ``--scheduler`` is a scheduler address (every worker must see the model
directory, e.g. on a shared file system, and have ``d2s_runtime`` installed). Each worker
process loads the model once and reuses it for every chunk it is given. The model must treat
rows independently (no batch statistics such as a batch mean in a branch predicate), or the
chunked result would differ from one call on the whole batch.
"""
import argparse
import functools
import os
import tempfile

import numpy as np


def save_model(path):
    """Convert and save a small classifier (rows independent of each other, so any split of a
    batch into chunks gives the same rows as one call)."""
    import d2s
    import d2s.nn.functional as F
    from d2s import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.out = nn.Linear(16, 32), nn.Linear(32, 3)

        def forward(self, x):
            h = F.relu(self.fc(x))
            h = d2s.where(h > 4.0, h * 0.5, h)  # per row, never a batch statistic
            return F.softmax(self.out(h), axis=-1)

    d2s.manual_seed(0)
    model = d2s.jit.to_static(Net())
    d2s.jit.save(model, path, input_spec=[d2s.jit.InputSpec([None, 16], name="x")])
    return path


@functools.lru_cache(maxsize=None)
def _runner(path):
    import d2s_runtime
    return d2s_runtime.load(path)


def predict_chunk(block, path):
    """Run the saved model at ``path`` on one chunk of rows (loaded once per process)."""
    return _runner(path)(np.ascontiguousarray(block))


def predict(path, x, chunk=1024, scheduler="processes"):
    """The model's outputs for every row of ``x`` (numpy), computed chunk by chunk on Dask."""
    import dask.array as da
    darr = da.from_array(x, chunks=(chunk, x.shape[1]))
    n_out = _runner(path)(x[:1]).shape[1]
    out = darr.map_blocks(predict_chunk, path=path, dtype=np.float32, chunks=(darr.chunks[0], (n_out,)))
    if scheduler in ("processes", "threads", "sync"):
        return out.compute(scheduler=scheduler)
    from dask.distributed import Client  # a cluster's scheduler address
    with Client(scheduler):
        return out.compute()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--chunk", type=int, default=2500)
    ap.add_argument("--scheduler", default="processes", help="processes, threads, sync or a scheduler address")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = save_model(os.path.join(tmp, "model"))
        x = np.random.default_rng(0).standard_normal((a.rows, 16)).astype(np.float32)
        got = predict(path, x, a.chunk, a.scheduler)
        want = _runner(path)(x)
        print(f"{a.rows} rows in {-(-a.rows // a.chunk)} chunks on Dask ({a.scheduler}): "
              f"outputs {got.shape}, equal to one in-process call: {np.allclose(got, want, rtol=1e-6, atol=1e-7)}")


if __name__ == "__main__":
    main()
