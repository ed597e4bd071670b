"""Illegal loops named clearly, legal ones converted (issue 27, family 4): a loop variable whose
rank, dtype or structure an iteration changes is refused naming the variable and the loop's
line; a variable that is dead once an unrolled loop has returned may change its rank; a slice
bound by a loop counter (``attn[:t + 1]``) reads a part of run-time length; ``randn``/``rand``
take a dynamic dim as ``zeros`` does; a dict read at a tensor gets an error that says why."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec
from d2s.user_errors import ConvertError

from convert_helpers import check_exact
from jit_helpers import check as check_grads

T = d2s.tensor


def rank_grows(x, n):
    for i in range(n):
        x = x.unsqueeze(0)
    return x


def becomes_a_tuple(x, n):
    for i in range(n):
        x = (x, x)
    return x


def becomes_none(x, n):
    for i in range(n):
        x = None
    return x


def str_grows(x, n):
    s = "a"
    for i in range(n):
        s = s + "b"
    return x, s


def list_becomes_a_tensor(x, n):
    v = [x, x]
    for i in range(n):
        v = d2s.stack(v)
    return v


def dict_changes_keys(x, n):
    d = {"a": x}
    for i in range(n):
        d = {"b": x}
    return d


def rank_shrinks_then_returns(x, n):
    for i in range(n):
        x = x.sum(0)
        if x.ndim == 0:
            return x * 2
    return x


@pytest.mark.parametrize("fn,what", [
    (rank_grows, r"loop variable 'x' changes rank from 1 to 2 .*shape \[(3|\?)\] becomes \[1, (3|\?)\]"),
    (becomes_a_tuple, r"loop variable 'x' is a tensor before an iteration .* and a tuple of 2 after it"),
    (rank_shrinks_then_returns, r"loop variable 'x' changes rank from 2 to 1"),
    (becomes_none, r"loop variable 'x' is a tensor before an iteration .* and None after it"),
    (str_grows, r"loop variable 's' is the str 'a' before an iteration .* and the str 'ab' after it"),
    (list_becomes_a_tensor, r"loop variable 'v' is a list before an iteration .* and a tensor after it"),
    (dict_changes_keys, r"loop variable 'd' is a dict with keys \['a', 'b'\] .* with keys \['b'\] after it"),
])
@pytest.mark.parametrize("dynamic", [False, True])
def test_a_variable_no_program_can_carry_is_named_with_its_line(fn, what, dynamic):
    x = d2s.ones([2, 3]) if fn is rank_shrinks_then_returns else d2s.ones([3])
    specs = [InputSpec([None] * x.ndim, "float32"), InputSpec([], "int64")] if dynamic else None
    with pytest.raises(ConvertError, match=what) as info:
        d2s.jit.to_static(fn, input_spec=specs)(x, T(2))
    assert "for i in range(n):" in str(info.value) and __file__ in str(info.value)


def stages(x):
    # a network returning from inside its loop over stages, x changing rank from stage to stage
    for stage in range(3):
        x = d2s.tanh(x).sum(-1)
        if x.sum() > 0:
            return x.mean()
    return x * 2


def stages_with_inner_loop(x, n):
    k = 0
    for stage in range(3):
        x = d2s.tanh(x).sum(-1)
        while k < n:
            k += 1
            if x.sum() > 5:
                return x.mean()
    return x * 2


def stages_with_a_break(x):
    for stage in range(3):
        x = d2s.tanh(x).sum(-1)
        if x.sum() > 0:
            break  # x is read after the loop: its rank depends on the data
    return x * 2


def test_a_variable_dead_after_the_loop_returned_may_change_rank():
    inputs = [d2s.ones([2, 2, 3]), -d2s.ones([2, 2, 3]), T([[[1.0, -2.0, 1.0], [-1.0, -1.0, -1.0]]])]
    check_exact(stages, [(x,) for x in inputs])
    check_exact(stages_with_inner_loop, [(inputs[0], T(3)), (inputs[1], T(0)), (inputs[2], T(2))])
    for x in inputs:
        check_grads(stages, x)


def test_with_a_break_instead_the_rank_after_the_loop_depends_on_the_data():
    with pytest.raises(ConvertError, match="'x' has rank"):
        d2s.jit.to_static(stages_with_a_break)(d2s.ones([2, 2, 3]))


def prefix_sums(attn, n):
    out = d2s.zeros([])
    for t in range(n):
        out = out + attn[:t + 1].sum()
    return out


def row_prefixes(attn, n):
    outs = []
    for t in range(n):
        outs.append((attn[t, :t + 1] * 2.0).sum())
    return d2s.stack(outs)


def slices_of_every_kind(x, n):
    total = d2s.zeros([])
    for t in range(n):
        total = total + x[t:].sum() + x[-t - 1:].sum() * 10 + x[:-t].sum() * 100 + x[t::2].sum() * 1000 \
            + x[::-1][:t].sum() * 10000 + x[t:1:-1].sum() * 100000
    return total


def test_a_slice_bounded_by_a_loop_counter_reads_a_part_of_run_time_length():
    a = T([1.0, 2.0, 3.0, 4.0])
    check_exact(prefix_sums, [(a, T(3)), (a, T(0)), (a, T(6))])
    m = T(np.arange(16.0, dtype=np.float32).reshape(4, 4))
    check_exact(row_prefixes, [(m, T(4)), (m, T(2))])
    check_exact(slices_of_every_kind, [(a, T(5)), (a, T(1))])
    check_grads(prefix_sums, a, T(3))
    check_grads(row_prefixes, m, T(3))


def write_a_slice(x, n):
    for t in range(n):
        x[:t] = 0.0
    return x


def test_writing_a_slice_of_run_time_length_is_refused_at_the_line():
    with pytest.raises(ConvertError, match="assigning into a slice whose bound") as info:
        d2s.jit.to_static(write_a_slice)(d2s.ones([3]), T(2))
    assert "x[:t] = 0.0" in str(info.value)


def noise(x):
    return x + d2s.randn(x.shape[0], 2).sum(1) * 0.0 + d2s.rand([x.shape[0]]), d2s.randn(x.shape[0]).shape[0]


def test_random_draws_take_a_dynamic_dim():
    x = T([1.0, 2.0, 3.0])
    d2s.manual_seed(7)
    want = noise(x)
    static = d2s.jit.to_static(noise, input_spec=[InputSpec([None], "float32")])
    d2s.manual_seed(7)
    got = static(x)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())  # the same draws from one generator
    assert int(got[1]) == 3
    assert "random_like" in str(static.programs[0])  # drawn when the program runs, shaped by its dims


def read_at_a_tensor(x, i):
    d = {0: x, 1: x * 2}
    return d[i]


def read_at_a_counter(x, n):
    d = {0: x, 1: x * 2, 2: x * 3}
    s = x * 0
    for i in range(n):
        s = s + d[i]
    return s


def test_a_dict_read_at_a_tensor_says_why():
    x = d2s.ones([3])
    with pytest.raises(KeyError):
        read_at_a_tensor(x, T(1))  # tensors hash by identity, eagerly too
    with pytest.raises(KeyError, match="looked up by identity"):
        d2s.jit.to_static(read_at_a_tensor)(x, T(1))
    with pytest.raises(ConvertError, match=r"(?s)reading a dict at a int known only when the program runs.*d\[i\]"):
        d2s.jit.to_static(read_at_a_counter)(x, T(2))
