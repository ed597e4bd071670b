"""d2s/convert/loops.py: a loop variable that starts as a Python float is carried by a tensor
loop as a double, as Python holds it: ``s += 0.1`` or ``s += float(x[i])`` adds as eager code
adds (float32 gave 0.10000000149 for 0.1), while ``s = s + x[i]`` still gives x's dtype (the
float stays weakly typed against tensors). Converted vs eager on zero, one and several trips."""
import pytest

import d2s

T = d2s.tensor


def python_sums(x, n):
    s = 0.0
    t = 0.0
    for i in range(n):
        s += 0.1
        t += float(x[i % 3])
        if x[i % 3] > 1:
            s = s * 2
    return s, t, s * x


def tensor_sum(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i % 3]
    return s


def while_items(x, n):
    t = 0.0
    i = 0
    while i < n:
        t += x[i % 3].item() * 0.5
        i += 1
    return t


def _same(got, want):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert type(got) is type(want), (got, want)
    if isinstance(want, float):
        assert got == want, (got, want)
    else:
        assert got.dtype == want.dtype and got.numpy().tolist() == want.numpy().tolist(), (got, want)


@pytest.mark.parametrize("fn", [python_sums, tensor_sum, while_items])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_a_python_float_carried_by_a_tensor_loop_adds_as_python(fn, dtype):
    static = d2s.jit.to_static(fn)
    for x in (T([1.0, 2.0, 3.0]), T([0.1, 0.2, 0.3])):
        x = x.to(dtype)
        for n in (0, 1, 4):
            _same(static(x, T(n)), fn(x, T(n)))
