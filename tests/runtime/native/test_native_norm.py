"""Native lowerings of ``normalize`` and ``normalize_grad`` (runtime/d2s_runtime/native/norm.py)
against the Python backend: LayerNorm (trailing axes) and BatchNorm (every axis but the
channels, the statistics returned and differentiated) with their gradients, on two batch sizes
of one dynamic-batch program; a layout the lowering does not take is left to the Python backend
with a reason."""
import numpy as np
import pytest

pytest.importorskip("numba")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.dispatch import apply  # noqa: E402
from d2s.static import InputSpec, build_program, gradients  # noqa: E402
from d2s_runtime import native  # noqa: E402

from .helpers import check, compile_native  # noqa: E402

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("native_norm_cache")


def _norms(x, w, b):
    # the two layouts: statistics over the last axis (LayerNorm; GroupNorm and InstanceNorm are
    # the same loop nest) and over every axis but the channels (BatchNorm, statistics returned)
    ln = F.layer_norm(x, (5,), w, b)
    bn, mean, var = apply("normalize", x, axes=[0, 2], eps=1e-3)
    # the statistics feed the loss too: normalize_grad's mean and variance gradients run
    return (ln * ln).sum() + (bn * bn * bn).sum() + (bn * ln).sum() + (mean * mean).sum() + (var * 0.3).sum()


def test_normalizations_and_their_gradients_match_the_python_backend(cache):
    prog = gradients(build_program(_norms, InputSpec([None, 4, 5]), InputSpec([5]), InputSpec([5]))).verify()
    ops = [op.type for op in prog.block.ops]
    assert ops.count("normalize") == 2 and ops.count("normalize_grad") == 2
    fn = compile_native(prog, cache)
    cases = [tuple(RNG.standard_normal(s).astype("float32") * 3 + 1 for s in ((n, 4, 5), (5,), (5,)))
             + (np.float32(1.0),) for n in (2, 7)]
    check(prog, fn, cases, rtol=2e-5, atol=2e-5)


def test_a_layout_it_does_not_take_stays_with_python():
    # axes (0, 2) of a 4-d tensor: neither they nor the dims kept (1, 3) are one range
    prog = build_program(lambda x: apply("normalize", x, axes=[0, 2])[0], InputSpec([2, 3, 4, 5])).verify()
    with pytest.raises(native.NativeUnsupported, match="contiguous range"):
        native.lower_program(prog)
