"""A sequence grown by ``cat`` in a long range loop is a buffer of its final length inside the
loop op, read as its first ``t`` positions: eager's values exactly (issue 29)."""
import numpy as np
import pytest

import d2s
from d2s.jit import InputSpec

from generate_helpers import assert_exact, top_ops as _top

V = 11
_rng = np.random.default_rng(3)
EMB = d2s.tensor(_rng.standard_normal((V, 5)), dtype="float32")
OUT = d2s.tensor(_rng.standard_normal((5, V)), dtype="float32")


def next_token(idx, window=4):
    """A toy language model: the mean embedding of the last ``window`` tokens, then logits."""
    ctx = idx[:, -window:]
    h = EMB[ctx].mean(dim=1)
    return (h @ OUT).argmax(dim=-1, keepdim=True)


def greedy(idx, n):
    for _ in range(n):
        nxt = next_token(idx)
        idx = d2s.cat((idx, nxt), dim=1)
    return idx


def greedy_stop(idx, n, eos: int = 3):
    for _ in range(n):
        nxt = next_token(idx)
        idx = d2s.cat([idx, nxt], -1)
        if (nxt == eos).all():
            break
    return idx


def running_sum(x, n):
    seq = x
    for _ in range(n):
        seq = d2s.cat((seq, seq[-2:].sum(dim=0, keepdim=True), seq[:1] * 0.5))  # two parts: grows by 2
    return seq


def whole_reads(idx, n):
    total = d2s.zeros(idx.shape[0], dtype="int64")
    for _ in range(n):
        total = total + idx.sum(dim=1) * idx.size(1)  # the whole sequence, and its length
        idx = d2s.cat((idx, (idx[:, -1:] + 1) % V), dim=1)
    return idx, total


def _loop_carries(prog):
    """The types of what the top-level while op carries."""
    op = next(op for op in prog.global_block().ops if op.type == "while")
    return [prog.global_block().vars[v].type for v in op.outputs]


def _prompts():
    return [d2s.tensor(_rng.integers(0, V, (b, t))) for b, t in ((1, 1), (2, 3), (3, 6))]


@pytest.mark.parametrize("n", [9, 40])
def test_greedy_growth_is_a_fixed_buffer(n):
    for idx in _prompts():
        sf = assert_exact(greedy, idx, n)
        prog = sf.get_program(idx, n)
        assert _top(prog, "while") == 1
        b, t = idx.shape
        assert any(tuple(ty.shape) == (b, t + n) for ty in _loop_carries(prog))  # the buffer
        assert all(None not in tuple(ty.shape) for ty in _loop_carries(prog))  # nothing ragged
        assert tuple(prog.outputs and sf(idx, n).shape) == (b, t + n)


def test_a_break_reads_the_first_t_positions():
    for idx in _prompts():
        for eos in range(V):
            assert_exact(greedy_stop, idx, 30, eos)


def test_dynamic_batch_and_prompt_length():
    sf = d2s.jit.to_static(greedy)
    prog = sf.get_program(InputSpec([None, None], "int64"), 20)
    assert _top(prog, "while") == 1
    for idx in _prompts():
        assert np.array_equal(sf(idx, 20).numpy(), greedy(idx, 20).numpy())


def test_parts_of_size_two_and_whole_sequence_reads():
    x = d2s.tensor([0.5, -1.0, 2.0])
    sf = assert_exact(running_sum, x, 12)
    assert _top(sf.get_program(x, 12), "while") == 1
    for idx in _prompts():
        sf = assert_exact(whole_reads, idx, 15)
        assert _top(sf.get_program(idx, 15), "while") == 1


def prepends(idx, n):
    for _ in range(n):
        idx = d2s.cat((next_token(idx), idx), dim=1)  # grows at its start: not a buffer
    return idx


def rewrites(idx, n):
    for _ in range(n):
        idx = d2s.cat((idx, next_token(idx)), dim=1)
        idx[:, 0] = idx[:, -1]  # written in place after it grows
    return idx


def widens(x, n):
    for _ in range(n):
        x = d2s.cat((x, x), dim=0)  # the part's size grows too
    return x


def test_other_growth_unrolls_with_eager_values():
    idx = _prompts()[1]
    for fn, args in ((prepends, (idx, 10)), (rewrites, (idx, 10)), (widens, (d2s.ones(1), 9))):
        sf = assert_exact(fn, *args)
        assert _top(sf.get_program(*args), "while") == 0
