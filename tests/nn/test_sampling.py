"""F.grid_sample and F.affine_grid (d2s/nn/_f_sampling.py) against PyTorch: every mode
(bilinear, nearest with ties, bicubic; trilinear and nearest on volumes), padding mode (zeros,
border, reflection) and align_corners, grids reaching outside the image, float32 and float64,
gradients of image, grid and theta, a spatial transformer (affine_grid then grid_sample):
values, dtypes, float64 gradients, then converted, dynamic, saved and ONNX
(tests/torch_parity.py); the errors."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
import torch_parity
from torch_parity import Case

R = np.random.default_rng(61)
IMG = R.standard_normal((2, 3, 5, 6))
GRID = R.uniform(-1.3, 1.3, (2, 4, 7, 2))  # (some points outside the image)
VOL = R.standard_normal((2, 2, 4, 5, 3))
VGRID = R.uniform(-1.2, 1.2, (2, 3, 2, 4, 3))
THETA = np.array([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]], [[1.2, 0.4, 0.0], [-0.1, 0.8, 0.3]]])
# points on pixel centres and half-way between them (nearest's ties go to the even index, as
# PyTorch's); align_corners=True puts -1 and 1 on the corner pixels' centres
TIES = np.array([[[[-1.0, -1.0], [-0.75, -0.5], [-0.25, 0.0], [0.25, 0.5], [0.75, 1.0], [1.0, -0.25]]]])
SHAPES = "the image's channel and spatial sizes are read when the program is built"
DYNAMIC_GRID = "the grid's sizes may be dynamic but the image's may not (a reshape to its pixel count)"


def _sample(mode, padding):
    return lambda t, x, g: tuple(t.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=a)
                                 for a in (False, True))


def _spatial_transformer(t, x, theta):
    grid = t.nn.functional.affine_grid(theta, [2, 3, 4, 5], align_corners=False)
    return t.nn.functional.grid_sample(x, grid, align_corners=False)


TORCH_CASES = [
    Case(f"grid_sample_{mode}_{padding}", _sample(mode, padding), IMG, GRID, rtol=1e-9, atol=1e-12,
         grad=[0] if mode == "nearest" else True, dynamic=DYNAMIC_GRID)
    for mode in ("bilinear", "nearest", "bicubic") for padding in ("zeros", "border", "reflection")
] + [
    Case(f"grid_sample_volume_{mode}_{padding}", lambda t, x, g, mode=mode, padding=padding:
         (t.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=True),
          t.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=False)),
         VOL, VGRID, rtol=1e-9, atol=1e-12, grad=[0] if mode == "nearest" else True, dynamic=DYNAMIC_GRID)
    for mode in ("bilinear", "nearest") for padding in ("zeros", "border", "reflection")
] + [
    Case("grid_sample_ties", lambda t, x, g: (t.nn.functional.grid_sample(x, g, mode="nearest", align_corners=True),
                                              t.nn.functional.grid_sample(x, g, mode="nearest", align_corners=False),
                                              t.nn.functional.grid_sample(x, g, align_corners=True)),
         IMG[:1, :, :5, :5], TIES, grad=[0], dynamic=DYNAMIC_GRID),
    Case("grid_sample_float32_default", lambda t, x, g: (t.nn.functional.grid_sample(x, g),
                                                         t.nn.functional.grid_sample(x, g, "bicubic", "border")),
         IMG.astype(np.float32), GRID.astype(np.float32), rtol=1e-5, atol=5e-6, dynamic=DYNAMIC_GRID),
    Case("affine_grid", lambda t, th, th3: (t.nn.functional.affine_grid(th, [2, 3, 4, 5], align_corners=False),
                                            t.nn.functional.affine_grid(th, (2, 1, 1, 3), align_corners=True),
                                            t.nn.functional.affine_grid(th3, [2, 1, 2, 3, 4], align_corners=False),
                                            t.nn.functional.affine_grid(th3, [2, 1, 3, 1, 2], align_corners=True)),
         THETA, R.standard_normal((2, 3, 4)), rtol=1e-12, atol=1e-12, dynamic=SHAPES),
    Case("spatial_transformer", _spatial_transformer, IMG, THETA, rtol=1e-9, atol=1e-12, dynamic=SHAPES),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_a_dynamic_batch_and_grid_convert():
    @d2s.jit.to_static(input_spec=[d2s.jit.InputSpec([None, 3, 5, 6], "float64"),
                                   d2s.jit.InputSpec([None, None, None, 2], "float64")])
    def f(x, g):
        return F.grid_sample(x, g, align_corners=False)

    for n, h, w in ((2, 4, 7), (1, 3, 2)):
        x, g = IMG[:n], GRID[:n, :h, :w]
        np.testing.assert_allclose(f(d2s.tensor(x), d2s.tensor(g)).numpy(),
                                   F.grid_sample(d2s.tensor(x), d2s.tensor(g), align_corners=False).numpy(),
                                   rtol=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: F.grid_sample(d2s.zeros(1, 1, 3, 3), d2s.zeros(1, 2, 2, 2), mode="area"), "mode must be one of"),
    (lambda: F.grid_sample(d2s.zeros(1, 1, 3, 3), d2s.zeros(1, 2, 2, 2), padding_mode="wrap"), "padding_mode"),
    (lambda: F.grid_sample(d2s.zeros(1, 1, 3, 3), d2s.zeros(1, 2, 2, 3)), "grid"),
    (lambda: F.grid_sample(d2s.zeros(1, 1, 3, 3, 3), d2s.zeros(1, 2, 2, 2, 3), mode="bicubic"), "4-d input"),
    (lambda: F.grid_sample(d2s.zeros(1, 1, 3, 3), d2s.zeros(1, 2, 2, 2, dtype=d2s.float64)), "dtype"),
    (lambda: F.affine_grid(d2s.zeros(1, 2, 3), [1, 1, 2, 2, 2]), r"theta must be floats of shape \(N, 3, 4\)"),
    (lambda: F.affine_grid(d2s.zeros(1, 2, 3), [1, 1, 2]), "size must be"),
])
def test_errors_say_what_is_wrong(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
