"""softmax, log_softmax and logsumexp over an empty axis give PyTorch's answer (an empty softmax,
a logsumexp of -inf) in eager code, on the Python backend and on the native backend alike (the
native backend followed PyTorch while the others raised)."""
import tempfile

import numpy as np
import pytest

import d2s
from d2s.static import InputSpec, build_program
from d2s_runtime import Executor


def _f(x):
    return d2s.softmax(x, 1), d2s.log_softmax(x, 1), d2s.logsumexp(x, 1), d2s.logsumexp(x, 0), d2s.logsumexp(x)


# PyTorch 2.13: torch.softmax(torch.empty(2, 0), 1) is empty; torch.logsumexp over an empty dim is -inf
WANT = {(2, 0): [np.empty((2, 0)), np.empty((2, 0)), np.full(2, -np.inf), np.empty(0), -np.inf],
        (0, 3): [np.empty((0, 3)), np.empty((0, 3)), np.empty(0), np.full(3, -np.inf), -np.inf]}


def _check(outs, shape):
    for got, want in zip(outs, WANT[shape]):
        got = np.asarray(got)
        assert got.dtype == np.float32 and got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", list(WANT))
def test_an_empty_axis_gives_pytorchs_answer_on_every_backend(shape):
    x = np.empty(shape, "float32")
    _check([t.numpy() for t in _f(d2s.tensor(x))], shape)
    prog = build_program(_f, InputSpec([None, None]))
    _check(Executor(prog).run(x), shape)
    pytest.importorskip("numba")
    from d2s_runtime import native
    _check(native.compile_lowered(native.lower_program(prog), cache_dir=tempfile.mkdtemp())(x), shape)


def test_against_live_torch():
    torch = pytest.importorskip("torch")
    for shape in WANT:
        x = torch.empty(shape)
        want = [torch.softmax(x, 1), torch.log_softmax(x, 1), torch.logsumexp(x, 1), torch.logsumexp(x, 0),
                torch.logsumexp(x, (0, 1))]
        for w, mine in zip(want, WANT[shape]):
            assert tuple(w.shape) == np.shape(mine)
            np.testing.assert_array_equal(w.numpy(), mine)
