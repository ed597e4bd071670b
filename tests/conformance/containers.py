"""Lists, dicts and tuples: append/pop/extend/+ in Python and tensor loops, index
assignment, comprehensions, stacking, unpacking, namedtuples and arguments mutated in place."""
import collections

import d2s

from .harness import T, case

X = T([0.5, -1.0, 2.0])
N0, N1, N2, N3 = T(0), T(1), T(2), T(3)
Pair = collections.namedtuple("Pair", ["lo", "hi"])


@case((X, N0), (X, N3), (X, 3), (X, 0))
def append_then_stack(x, n):
    outs = []
    for i in range(n + 1):
        outs.append(x * i)
    return d2s.stack(outs)


@case((X, N3), (X, N1), (X, 2))
def append_in_tensor_loop_return_list(x, n):
    outs = []
    for i in range(n):
        outs.append(x + i)
    return outs


@case(N0, N2, 0, 2)
def pop_in_loop(n):
    l = [1, 2, 3, 4]
    s = 0
    for _ in range(n):
        s += l.pop()
    return s, len(l)


@case((X, N2), (X, N0), (X, 2))
def pop_tensors_in_loop(x, n):
    stack = [x, x * 2.0, x * 3.0]
    acc = x * 0.0
    for _ in range(n):
        acc = acc + stack.pop()
    return acc


@case((X, N3), (X, N0))
def list_concat_in_tensor_loop(x, n):
    s = []
    for i in range(n):
        s = s + [x * i]
    return s


@case((X, N3), (X, N0))
def list_extend_in_loop(x, n):
    s = [x]
    for i in range(n):
        s.extend([x * i, x + i])
    return len(s), s


@case((X, N3), (X, N0), (X, N1))
def iterate_list_built_in_tensor_loop(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
    total = x * 0.0
    for v in a:
        total = total + v
    return total


@case((X, N3), (X, N2))
def negative_index_of_list_in_tensor_if(x, n):
    feats = [x]
    for i in range(n):
        if x.sum() > 0:
            feats.append(feats[-1] * 2.0)
        else:
            feats.append(feats[-1] + 1.0)
    return feats[-2]


@case((X, N3), (X, N0))
def pop_inside_tensor_if_inside_loop(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
        if x.sum() > 0:
            a.pop()
    return len(a)


@case(X, T([-1.0, -2.0, -3.0]))
def list_literal_with_conditional(x):
    l = [x[0]] if x.sum() > 0 else []
    return list(l)


@case((X, N2), (X, N0))
def list_index_assignment(x, n):
    buf = [x, x, x]
    for i in range(n):
        buf[i] = buf[i] * 10.0
    return buf


@case(X, T([3.0, 4.0, -5.0]))
def list_index_assignment_python(x):
    buf = [x, x, x]
    for i in range(3):
        if i % 2 == 0:
            buf[i] = buf[i] * 10.0
    return d2s.stack(buf)


@case((X, N2), (X, N0))
def python_list_read_with_tensor_index(x, n):
    weights = [1.0, 2.0, 3.0, 4.0]
    acc = x * 0.0
    for i in range(n):
        acc = acc + x * weights[i]
    return acc


@case(X, T([-3.0, 1.0, 1.0]))
def dict_accumulate_python_keys(x):
    stats = {}
    stats["sum"] = x.sum()
    stats["max"] = x.max()
    if stats["sum"] > 0:
        stats["sum"] = stats["sum"] * 2.0
    return stats


@case((X, N2), (X, N0))
def dict_updated_in_tensor_loop(x, n):
    d = {"acc": x * 0.0, "steps": d2s.tensor(0)}
    for i in range(n):
        d["acc"] = d["acc"] + x
        d["steps"] = d["steps"] + 1
    return d


@case((X, N2), (X, N1))
def dict_key_first_set_in_tensor_loop(x, n):
    d = {}
    for i in range(n):
        d["last"] = x * i
    return d["last"]


@case(X, T([1.0, 1.0, 1.0]))
def list_comprehension_over_range(x):
    return [x * i for i in range(3)]


@case(X, T([1.0, -1.0, 1.0]))
def comprehension_with_tensor_filter(x):
    return [v for v in [x, -x, x * 2.0] if v.sum() > 0]


@case(X, T([1.0, 2.0, 3.0]))
def dict_comprehension(x):
    return {f"p{i}": x ** i for i in range(3)}


@case(X)
def generator_expression_sum(x):
    return sum(x * i for i in range(4))


@case(X, T([-1.0, 5.0, 0.0]))
def tuple_unpacking_star(x):
    first, *rest = [x[0], x[1], x[2]]
    if first > 0:
        return first, rest
    return -first, rest[::-1]


@case(X, T([-1.0, 5.0, 0.0]))
def namedtuple_result(x):
    if x.sum() > 2.0:
        return Pair(x.min(), x.max())
    return Pair(x.max(), x.min())


@case(([1.0, 2.0], X), ([], X))
def mutates_argument_list(log, x):
    log.append(x.sum())
    if x.sum() > 0:
        log.append(x.max())
    return len(log)


@case(({"a": X}, X),)
def mutates_argument_dict(d, x):
    d["b"] = d["a"] * 2.0
    if x.sum() > 0:
        d["c"] = x
    return sorted(d)


@case((X, N3), (X, N0))
def tensor_setitem_in_loop(x, n):
    out = d2s.zeros([4])
    for i in range(n):
        out[i] = x.sum() * i
    return out


@case(X, T([-1.0, 5.0, 0.0]))
def tensor_setitem_in_branch(x):
    y = x * 1.0
    if x.sum() > 2.0:
        y[0] = 100.0
    else:
        y[1:] = -1.0
    return y


@case((X, N3), (X, N0))
def len_of_list_grown_in_tensor_loop(x, n):
    items = []
    for i in range(n):
        items.append(x[0] * i)
    return len(items)


@case((X, 3), (X, 0))
def list_of_python_numbers_in_python_loop(x, n):
    coeffs = []
    for i in range(n):
        coeffs.append(i * 0.5)
    return x * sum(coeffs), coeffs
