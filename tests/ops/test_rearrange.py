"""tensor_split, hsplit, vsplit and dsplit (d2s/ops/rearrange.py) against PyTorch: sections that
divide the size and ones that do not, more sections than elements, index lists (unsorted,
negative, past the end), index tensors, every dim; values, dtypes, float64 gradients, then
converted, with dynamic dims, saved and exported to ONNX (tests/torch_parity.py)."""
import numpy as np
import pytest

import d2s
import torch_parity
from torch_parity import Case

R = np.random.default_rng(11)
X = R.standard_normal((7, 4))
SECTIONS = "split into sections: the dim's size is needed when the program is built"

TORCH_CASES = [
    Case("tensor_split_sections", lambda t, x: (t.tensor_split(x, 3), x.tensor_split(2, dim=1), t.tensor_split(x, 7),
                                                t.tensor_split(x, 9), t.tensor_split(x, 1, -1),
                                                t.tensor_split(x, sections=2, dim=1), t.vsplit(x, sections=7)), X,
         dynamic=SECTIONS),
    Case("tensor_split_indices", lambda t, x: (t.tensor_split(x, [2, 5]), x.tensor_split((1, 3), dim=1),
                                               t.tensor_split(x, [5, 2]), t.tensor_split(x, [-2, 10]),
                                               t.tensor_split(x, []), t.tensor_split(x, indices=[1, 4]),
                                               t.hsplit(x, indices=[1])), X),
    Case("tensor_split_tensor_args", lambda t, x, i: (t.tensor_split(x, i), t.tensor_split(x, i[0], 1)),
         X, np.array([3, 4]), static="eager only: a tensor argument is an input of the program, and the pieces' "
                                     "number and sizes must be known when it is built"),
    Case("tensor_split_ints", lambda t, x: t.tensor_split(x, 4), np.arange(10), dynamic=SECTIONS),
    Case("hsplit_vsplit_dsplit", lambda t, x, v: (t.hsplit(x, 2), x.hsplit([1]), t.vsplit(x, 3), x.vsplit([1, 2]),
                                                  t.dsplit(x, 5), x.dsplit([2]), t.hsplit(v, 3), v.hsplit([4])),
         R.standard_normal((3, 4, 5)), R.standard_normal(6), dynamic=SECTIONS),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=str)
def test_matches_torch(case):
    torch_parity.check(case, __name__)


def test_a_tensor_of_indices_inside_a_program_is_a_clear_error():
    f = d2s.jit.to_static(lambda x, i: d2s.tensor_split(x, i))
    with pytest.raises(TypeError, match="Python ints"):
        f(d2s.zeros(4), d2s.tensor([1, 2]))


def test_pieces_are_views_as_in_pytorch():
    x = d2s.zeros(6)
    a, b = d2s.tensor_split(x, 2)
    b[0] = 5.0
    assert x.tolist() == [0, 0, 0, 5, 0, 0]


@pytest.mark.parametrize("call, msg", [
    (lambda: d2s.tensor_split(d2s.zeros(4), 0), "greater than zero"),
    (lambda: d2s.tensor_split(d2s.tensor(1.0), 2), "1-dimensional"),
    (lambda: d2s.tensor_split(d2s.zeros(4), d2s.tensor([1.0])), "int tensor"),
    (lambda: d2s.tensor_split(d2s.zeros(4), 2, dim=1), "out of range|dim"),
    (lambda: d2s.hsplit(d2s.zeros(2, 5), 2), "not divisible"),
    (lambda: d2s.vsplit(d2s.zeros(4), 2), "at least 2"),
    (lambda: d2s.dsplit(d2s.zeros(4, 2), [1]), "at least 3"),
])
def test_errors_name_the_op_and_the_problem(call, msg):
    with pytest.raises(Exception, match=msg):
        call()
