"""Converted vs eager: Python lists in loops and branches (tensor lists, packing sequences of
tensors, names of enclosing scopes), and what is refused with a clear error."""
import pytest

import d2s
from convert_helpers import check, run_static, t
from d2s.convert import ConvertError
from d2s.transformers import convert_function

X = t([1.0, 2.0])


def n_(v):
    return d2s.tensor(v)  # an int64 0-d tensor


# ------------------------------------------------------------------ names of enclosing scopes
LOG = []


def append_to_global(x, n):
    for i in range(n):
        LOG.append(i)
    return x + len(LOG)


def test_global_list_appended_in_python_loop():
    for n in (0, 3):
        LOG.clear()
        expected = append_to_global(X, n)
        LOG.clear()
        got = convert_function(append_to_global).fn(X, n)
        assert LOG == list(range(n))
        assert got.tolist() == expected.tolist()


def test_global_list_mutated_in_tensor_loop_is_refused():
    LOG[:] = [7]
    with pytest.raises(ConvertError, match="enclosing scope") as e:
        run_static(append_to_global, X, n_(3))
    assert "for i in range(n)" in str(e.value)
    assert LOG == [7]  # the build left it untouched


def make_closure_appender():
    acc = []

    def g(x, n):
        for i in range(n):
            acc.append(x * i)
        out = d2s.stack(acc) if acc else x
        acc.clear()
        return out
    return g


def test_closure_list_appended_in_python_loop():
    check(make_closure_appender(), (X, 0), (X, 3))


def make_closure_np_style():
    import numpy as np
    arr = np.zeros(0)

    def g(x, n):
        out = arr
        for i in range(n):
            out = np.append(out, i)
        return x + float(out.sum())
    return g


def test_closure_module_attribute_call_named_append_is_not_a_local():
    check(make_closure_np_style(), (X, 0), (X, 3))


def bound_in_one_branch_then_mutated(x, c):
    if c:
        lst = [x]
    for i in range(3):
        lst.append(x * i)
    return d2s.stack(lst)


def test_name_bound_in_one_python_branch_then_mutated_in_loop():
    check(bound_in_one_branch_then_mutated, (X, True))
    conv = convert_function(bound_in_one_branch_then_mutated).fn
    with pytest.raises(NameError):
        bound_in_one_branch_then_mutated(X, False)
    with pytest.raises(NameError):
        conv(X, False)


def static_equal(fn, *input_sets):
    """``d2s.jit.to_static(fn)`` returns what ``fn`` returns (values, dtypes, Python list and
    tuple structure) on each input set."""
    sf = d2s.jit.to_static(fn)

    def flat(o):
        if isinstance(o, (list, tuple)):
            return (type(o).__name__, [flat(v) for v in o])
        if isinstance(o, d2s.Tensor):
            return ("tensor", str(o.dtype), o.numpy().tolist())
        return ("py", type(o).__name__, o)

    for args in input_sets:
        args = args if isinstance(args, tuple) else (args,)
        e, s = flat(fn(*args)), flat(sf(*args))
        assert s == e, f"on {args}: to_static gave {s}, eager {e}"


# ------------------------------------------------------------------ list concatenation (item 7)
def concat_plus(x, n):
    s = [x]
    for i in range(n):
        s = s + [x * i]
    return d2s.stack(s)


def concat_iadd(x, n):
    s = [x]
    for i in range(n):
        s += [x * i, x + i]
    return d2s.stack(s)


def concat_extend(x, n):
    s = []
    for i in range(n):
        s.extend([x * i])
        s.extend((x - i,))
    return s


def concat_radd(x, n):
    s = [x]
    for i in range(n):
        s = [x * i] + s
    return d2s.stack(s)


@pytest.mark.parametrize("fn", [concat_plus, concat_iadd, concat_radd])
def test_list_concatenation_in_tensor_loop(fn):
    check(fn, (X, n_(0)), (X, n_(1)), (X, n_(3)))


def test_list_extend_in_tensor_loop_returns_a_python_list():
    static_equal(concat_extend, (X, n_(0)), (X, n_(2)), (X, n_(3)))


# ------------------------------------------------------------------ lists grown in tensor loops (item 14)
def iterate_grown_list(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
    s = x * 0
    for v in a:
        s = s + v
    return s


def enumerate_grown_list(x, n):
    a = []
    for i in range(n):
        a.append(x + i)
    s = x * 0
    for k, v in enumerate(a):
        s = s + v * k
    return s, len(a)


def pop_in_tensor_if(x, n):
    a = []
    s = x * 0
    for i in range(n):
        a.append(x * i)
        if x.sum() > i:
            s = s + a.pop()
    return s


def pop_in_tensor_if_started_empty(x, n):
    a = []
    s = x * 0
    for i in range(n):
        if x.sum() > i:
            a.append(x + i)
        else:
            if len(a) > 0:
                s = s + a.pop()
    return s


def index_from_end_in_tensor_if(x, n):
    feats = []
    for i in range(n):
        feats.append(x * (i + 1))
        if i >= 1 and x.sum() > 0:
            x = x + feats[-2]
    return x


def test_iterating_a_list_grown_in_a_tensor_loop():
    check(iterate_grown_list, (X, n_(0)), (X, n_(1)), (X, n_(4)))
    check(enumerate_grown_list, (X, n_(0)), (X, n_(3)))


def test_pop_inside_tensor_if_inside_tensor_loop():
    check(pop_in_tensor_if, (X, n_(0)), (X, n_(2)), (X, n_(5)), (-X, n_(3)))


def test_pop_inside_tensor_if_on_a_list_that_started_empty():
    check(pop_in_tensor_if_started_empty, (X, n_(0)), (X, n_(3)), (X, n_(6)), (-X, n_(3)))


def test_negative_index_inside_tensor_if_inside_tensor_loop():
    check(index_from_end_in_tensor_if, (X, n_(0)), (X, n_(1)), (X, n_(4)), (-X, n_(3)))


# ------------------------------------------------------------------ a list whose length a tensor `if` decides (item 6)
def list_from_tensor_ifexp(x):
    lst = [x[0]] if x.sum() > 0 else []
    return list(lst)


def list_from_tensor_if_then_loop(x):
    if x.sum() > 0:
        lst = [x[0], x[1]]
    else:
        lst = [x[1]]
    total = x[0] * 0
    for v in lst:
        total = total + v
    return total, lst


def test_list_whose_length_a_tensor_ifexp_decides():
    static_equal(list_from_tensor_ifexp, X, -X)


def test_list_whose_length_a_tensor_if_decides_is_iterated():
    static_equal(list_from_tensor_if_then_loop, X, -X)


def iterate_outside_converted_for(x):
    lst = [x[0]] if x.sum() > 0 else []
    return tuple(lst)


def test_iterating_such_a_list_outside_a_converted_for_is_a_clear_error():
    with pytest.raises(TypeError, match="known only when the program runs") as e:
        d2s.jit.to_static(iterate_outside_converted_for)(X)
    assert "tuple(lst)" in str(e.value)


# ------------------------------------------------------------------ Python lists mutated per iteration (item 4)
def pop_python_numbers(x, n):
    lst = [1, 2, 3, 4, 5]
    s = 0
    for _ in range(n):
        s += lst.pop()
    return x + s, lst


def append_python_numbers(x, n):
    lst = [0.5]
    for i in range(n):
        lst.append(i * 2)
        lst.append(x.sum())
    return lst


def append_strings(x, n):
    names = []
    for i in range(n):
        names.append("step")
        x = x + 1
    return x, names


def test_pop_from_a_list_of_numbers_runs_per_iteration():
    static_equal(pop_python_numbers, (X, n_(0)), (X, n_(2)), (X, n_(5)))


def test_append_numbers_and_tensors_to_a_list_of_numbers():
    fn = d2s.jit.to_static(append_python_numbers)
    for n in (0, 1, 3):
        got, expected = fn(X, n_(n)), append_python_numbers(X, n_(n))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert float(g) == float(e) and g.dtype == d2s.float32


def test_a_list_of_other_values_changing_length_in_a_tensor_loop_is_refused():
    with pytest.raises(ConvertError, match="'names' is a Python list of str") as e:
        d2s.jit.to_static(append_strings)(X, n_(2))
    assert "for i in range(n)" in str(e.value)
    assert append_strings(X, 2)[1] == ["step", "step"]
    got = d2s.jit.to_static(append_strings)(X, 2)  # a Python bound: the loop unrolls
    assert got[1] == ["step", "step"]


# ------------------------------------------------------------------ Python lists at a tensor position (items 4, 8)
def read_at_loop_index(x, n):
    ws = [x, x * 2, x * 3]
    s = x * 0
    for i in range(n):
        s = s + ws[i]
    return s


def read_numbers_at_loop_index(x, n):
    scale = [0.5, 2.0, -1.0, 4.0]
    for i in range(n):
        x = x * scale[i]
    return x


def read_from_end_at_tensor_index(x, n):
    ws = [x, x + 1]
    i = n - 3
    return ws[i]


def write_at_loop_index(x, n):
    hs = [x * 0, x * 0, x * 0]
    for i in range(n):
        hs[i] = x * (i + 1)
        hs[-1] += x
    return hs


def test_python_list_read_at_a_tensor_loop_index():
    check(read_at_loop_index, (X, n_(0)), (X, n_(2)), (X, n_(3)))
    check(read_numbers_at_loop_index, (X, n_(0)), (X, n_(1)), (X, n_(4)))
    check(read_from_end_at_tensor_index, (X, n_(1)), (X, n_(2)), (X, n_(4)))


def test_python_list_written_at_a_tensor_loop_index():
    check(write_at_loop_index, (X, n_(0)), (X, n_(1)), (X, n_(2)))
    static_equal(write_at_loop_index, (X, n_(0)), (X, n_(2)))


def test_writing_past_the_end_at_a_tensor_index_fails_when_the_program_runs():
    with pytest.raises(IndexError):
        write_at_loop_index(X, n_(4))
    with pytest.raises(IndexError, match="list index out of range"):
        d2s.jit.to_static(write_at_loop_index)(X, n_(4))


def mixed_list_at_tensor_index(x, n):
    parts = [x, "label"]
    return parts[n]


def test_a_list_of_other_values_at_a_tensor_index_is_refused():
    with pytest.raises(TypeError, match="list holding str values") as e:
        run_static(mixed_list_at_tensor_index, X, n_(0))
    assert "return parts[n]" in str(e.value)


# ------------------------------------------------------------------ sequences packed into tensors (item 5)
def concat_with_a_list_holding_a_tensor(x):
    n = d2s.sum(x > 0)
    return d2s.concat((d2s.tensor([0]), [n]), 0)


def tensor_of_scalars(x):
    a, b = x.sum(), x.max()
    return d2s.tensor([a, b]), d2s.tensor([[a, 1.0], [b, 2.0]]), d2s.tensor([x.argmax(), 3])


def tensor_of_scalars_with_dtype(x):
    return d2s.tensor([x.sum(), x.min()], dtype="int64")


def stack_of_mixed_parts(x):
    return d2s.stack([x.sum(), 2.0, x.max()])


def shape_from_tensor(x):
    shape = d2s.tensor([2, 3])
    n = d2s.sum(x > 0)
    dyn = d2s.tensor([n, 2])
    return d2s.zeros(shape), d2s.ones(dyn), d2s.full(dyn, 7), d2s.reshape(d2s.ones(6), shape)


def test_list_holding_a_symbolic_tensor_in_concat():
    check(concat_with_a_list_holding_a_tensor, X, t([1.0, -2.0]), t([-1.0, -2.0]))


def test_tensor_of_symbolic_scalars_packs_with_eager_dtypes():
    check(tensor_of_scalars, X, t([-3.0, 5.0]))
    check(tensor_of_scalars_with_dtype, X)
    check(stack_of_mixed_parts, X)
    for out_e, out_s in zip(tensor_of_scalars(X), run_static(tensor_of_scalars, X)):
        assert out_e.numpy().dtype == out_s.dtype


def test_creation_with_a_1d_int_tensor_as_shape():
    check(shape_from_tensor, X, t([1.0, -2.0]), t([-1.0, -2.0]))
    assert d2s.zeros(d2s.tensor([2, 3])).shape == (2, 3)
    with pytest.raises(TypeError, match="must hold integers"):
        d2s.zeros(d2s.tensor([2.0, 3.0]))


# ------------------------------------------------------------------ more list methods on grown lists
def reverse_and_clear(x, n):
    a, b = [], []
    for i in range(n):
        a.append(x * i)
        b.append(x + i)
    a.reverse()
    b.clear()
    b.append(x)
    return a, b


def insert_into_grown_list(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
    a.insert(0, x)
    return a


def test_reverse_and_clear_on_a_grown_list():
    static_equal(reverse_and_clear, (X, n_(0)), (X, n_(3)))


def test_unsupported_list_method_names_the_method_not_an_internal_type():
    with pytest.raises(TypeError, match=r"list.insert\(\) is not supported") as e:
        d2s.jit.to_static(insert_into_grown_list)(X, n_(2))
    assert "TensorArray" not in str(e.value)
    assert "a.insert(0, x)" in str(e.value)


# ------------------------------------------------------------------ gradients through list ops
@pytest.mark.parametrize("fn", [concat_plus, concat_radd, iterate_grown_list, pop_in_tensor_if,
                                read_at_loop_index, write_at_loop_index, index_from_end_in_tensor_if])
def test_gradients_through_list_ops_match_eager(fn):
    import jit_helpers
    sf = d2s.jit.to_static(fn)
    for n in (1, 3):
        jit_helpers.check(fn, t([0.5, -1.5]), n_(n), static=sf)


def test_gradient_through_a_returned_grown_list():
    import jit_helpers
    sf = d2s.jit.to_static(concat_extend)
    for n in (1, 2):
        jit_helpers.check(concat_extend, t([0.5, -1.5]), n_(n), static=sf)


# ------------------------------------------------------------------ more shapes of real code
def nested_loops_with_lists(x, n, m):
    outs = []
    for i in range(n):
        inner = []
        j = 0
        while j < m:
            inner.append(x * j)
            j += 1
        outs.append(x + len(inner))
    return d2s.stack(outs + [x])


def zip_of_grown_lists(x, n):
    a, b = [], []
    for i in range(n):
        a.append(x * i)
        b.append(x + i)
    s = x * 0
    for u, v in zip(a, b):
        s = s + u * v
    return s


def rnn_over_rows(xs, h):
    outs = []
    for row in xs:
        h = d2s.tanh(row + h)
        outs.append(h)
    return d2s.stack(outs), outs[-1]


def history_of_a_while(x):
    hist = []
    while x.sum() < 10:
        x = x * 2
        hist.append(x)
    return hist


def test_lists_in_nested_tensor_loops():
    check(nested_loops_with_lists, (X, n_(0), n_(2)), (X, n_(2), n_(0)), (X, n_(2), n_(3)))


def test_zip_of_lists_grown_in_a_tensor_loop():
    check(zip_of_grown_lists, (X, n_(0)), (X, n_(3)))


def test_rnn_outputs_over_tensor_rows():
    # dynamic=True: rows of an unknown dim make the loop a while op
    check(rnn_over_rows, (t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), X), (t([[1.0, 2.0]]), X), dynamic=True)


def test_history_of_a_tensor_while_returns_a_python_list():
    static_equal(history_of_a_while, X, t([20.0, 1.0]), t([0.1, 0.1]))


def counts_in_a_fixed_list(x, n):
    counts = [0, 0.5]
    for i in range(n):
        counts[0] = counts[0] + 1
        counts[1] += x.sum()
    return counts[0], counts[1]


def pop_or_append(x, n, start):
    a = [x] * start
    for i in range(n):
        if x.sum() > i:
            a.pop()
        else:
            a.append(x * i)
    return len(a)


def flags_at_computed_positions(x, n):
    seen = [False, False]
    for i in range(n):
        seen[i % 2] = True
    return seen


def test_fixed_lists_of_numbers_and_flags():
    check(counts_in_a_fixed_list, (X, n_(0)), (X, n_(3)))
    check(flags_at_computed_positions, (X, n_(0)), (X, n_(1)), (X, n_(3)))


def test_pop_or_append_under_a_tensor_if():
    check(pop_or_append, (X, n_(0), 3), (X, n_(3), 3), (-X, n_(2), 3), (t([1.5, 1.0]), n_(5), 3))


def test_pop_from_an_empty_grown_list_raises_index_error_when_the_program_runs():
    with pytest.raises(IndexError):
        pop_or_append(X, n_(2), 1)
    with pytest.raises(IndexError):
        d2s.jit.to_static(pop_or_append)(X, n_(2), 1)


def test_reading_past_the_end_at_a_tensor_index_raises_index_error():
    with pytest.raises(IndexError):
        read_from_end_at_tensor_index(X, n_(6))
    with pytest.raises(IndexError):
        d2s.jit.to_static(read_from_end_at_tensor_index)(X, n_(6))


def numbers_appended_under_tensor_if(x):
    lst = [1, 2]
    if x.sum() > 0:
        lst.append(3)
    return x * len(lst), lst


def tensors_appended_under_tensor_if(x):
    lst = []
    if x.sum() > 0:
        lst.append(x)
        lst.append(x * 2)
    else:
        lst.append(x - 1)
    return lst


def test_lists_whose_length_a_tensor_if_decides_come_back_as_python_lists():
    static_equal(numbers_appended_under_tensor_if, X, -X)
    static_equal(tensors_appended_under_tensor_if, X, -X)


# ------------------------------------------------------------------ lists of tuples of tensors
def lstm_like_outputs(x, n):
    h, c = x, x * 0
    outs = []
    for i in range(n):
        h, c = d2s.tanh(h + c), c + i
        outs.append((h, c))
    s = x * 0
    for a, b in outs:
        s = s + a * b
    return s, outs


def pop_pairs(x, n):
    pairs = [(x, 1)]
    s = x * 0
    for i in range(n):
        pairs.append((x * i, i))
        if x.sum() > i:
            a, k = pairs.pop()
            s = s + a * k
    return s, len(pairs)


def dict_records(x, n):
    recs = []
    for i in range(n):
        recs.append({"v": x * i, "i": i})
    total = x * 0
    for k in range(len(recs)):
        total = total + recs[k]["v"] * recs[-1]["i"]
    return total


def pairs_under_tensor_if(x):
    outs = [(x, x + 1)]
    if x.sum() > 0:
        outs.append((x * 2, x * 3))
    return outs


def lstm_like_sum(x, n):
    return lstm_like_outputs(x, n)[0]  # a call: the callee is converted too


def test_list_of_tuples_grown_in_a_tensor_loop():
    check(lstm_like_sum, (X, n_(0)), (X, n_(1)), (X, n_(3)))
    check(pop_pairs, (X, n_(0)), (X, n_(3)), (-X, n_(2)))
    check(dict_records, (X, n_(0)), (X, n_(3)))


def test_list_of_tuples_comes_back_as_python_tuples():
    static_equal(lstm_like_outputs, (X, n_(0)), (X, n_(2)))
    static_equal(pairs_under_tensor_if, X, -X)


def test_gradients_through_a_list_of_tuples():
    import jit_helpers
    sf = d2s.jit.to_static(lstm_like_outputs)
    for n in (1, 3):
        jit_helpers.check(lstm_like_outputs, t([0.5, -1.5]), n_(n), static=sf)


# ------------------------------------------------------------------ reads of too-short lists raise when they run
def pop_in_a_branch_not_taken(x):
    a = []
    if x.sum() > 100:
        x = x + a.pop()
    return x


def read_guarded_by_and(x, n):
    a = []
    s = x * 0
    for i in range(n):
        if i > 5 and a[-1].sum() > 0:
            s = s + 1
        s = s + x
    return s


def pop_every_iteration(x, n):
    a = []
    s = x * 0
    for i in range(n):
        s = s + a.pop()
    return s


def tensor_index_into_empty(x, n):
    a = []
    s = x * 0
    for i in range(n):
        s = s + a[i]
    return s


@pytest.mark.parametrize("fn, inputs", [
    (pop_in_a_branch_not_taken, [(X,), (t([200.0, 1.0]),)]),
    (read_guarded_by_and, [(X, n_(0)), (X, n_(3)), (X, n_(7))]),
    (pop_every_iteration, [(X, n_(0)), (X, n_(2))]),
    (tensor_index_into_empty, [(X, n_(0)), (X, n_(1))]),
])
def test_a_too_short_python_list_raises_index_error_only_where_python_does(fn, inputs):
    sf = d2s.jit.to_static(fn)
    for args in inputs:
        try:
            expected = fn(*args)
        except IndexError:
            with pytest.raises(IndexError):
                sf(*args)
            continue
        assert sf(*args).tolist() == expected.tolist()


def pop_while_iterating(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
    s = x * 0
    for v in a:
        s = s + v
        a.pop()
    return s


def iterate_a_copy_while_popping(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
    s = x * 0
    for v in list(a):
        s = s + v + a.pop()
    return s


def test_changing_a_grown_list_while_iterating_over_it_is_refused():
    with pytest.raises(ConvertError, match="changes the list it iterates over") as e:
        d2s.jit.to_static(pop_while_iterating)(X, n_(3))
    assert "for v in a:" in str(e.value)
    check(iterate_a_copy_while_popping, (X, n_(0)), (X, n_(3)))


def append_to_global_under_tensor_if(x):
    if x.sum() > 0:
        LOG.append("positive")
    return x


def test_global_list_mutated_under_a_tensor_if_is_refused():
    LOG[:] = []
    with pytest.raises(ConvertError, match="tensor `if` mutates a list that belongs to an enclosing scope"):
        d2s.jit.to_static(append_to_global_under_tensor_if)(X)
    assert LOG == []
    convert_function(append_to_global_under_tensor_if).fn(X)  # concrete: a Python if, as eager
    assert LOG == ["positive"]


def worklist(x, n):
    todo = []
    for i in range(n):
        todo.append(x * i)
    total = x * 0
    while todo:
        total = total + todo.pop()
    return total, len(todo)


def test_while_over_a_grown_list_tests_its_length():
    check(worklist, (X, n_(0)), (X, n_(1)), (X, n_(4)))


def keyed_halves(x, y):
    acc = []
    if x.sum() > 0:
        acc.append(y * 2)
    return {f"k{i}": t * 0.5 for i, t in enumerate(acc)}


def test_a_comprehension_over_enumerate_of_a_list_grown_in_a_tensor_branch_says_what_to_do():
    # it raised "'TensorEnumerate' object is not iterable", naming d2s's internals
    with pytest.raises(TypeError, match="comprehension, generator or list.*`for` statement") as err:
        d2s.jit.to_static(keyed_halves)(d2s.ones(3), d2s.ones(3))
    assert "TensorEnumerate" not in str(err.value) and "enumerate(acc)" in str(err.value)
