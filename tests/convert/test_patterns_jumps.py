"""Converted vs eager: break, continue and return inside loops, under tensor conditions."""
import d2s
from convert_helpers import check, t

X = t([1.0, 2.0, 3.0])


def n_(v):
    return d2s.tensor(v)


def break_in_while(x, n):
    i = 0
    while i < n:
        x = x + 1
        if x.sum() > 12:
            break
        i += 1
    return x, i


def test_break_in_tensor_while():
    check(break_in_while, (X, n_(10)), (X, n_(1)), (X, n_(0)))


def continue_in_while(x, n):
    i = 0
    acc = x * 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        acc = acc + x
    return acc


def test_continue_in_tensor_while():
    check(continue_in_while, (X, n_(5)), (X, n_(0)))


def break_in_for_range(x, n):
    acc = x * 0
    for i in range(n):
        if acc.sum() > 10:
            break
        acc = acc + x
    return acc


def test_break_in_for_over_tensor_range():
    check(break_in_for_range, (X, n_(10)), (X, n_(1)), (X, n_(0)))


def continue_in_for_rows(m):
    acc = m[0] * 0
    for row in m:
        if row.sum() < 0:
            continue
        acc = acc + row
    return acc


def test_continue_in_for_over_rows():
    check(continue_in_for_rows, t([[1.0, 2.0], [-5.0, 1.0], [3.0, 3.0]]))


def break_both_branches(x, n):
    i = 0
    while i < n:
        if x.sum() > 5:
            x = x - 1
            break
        else:
            x = x + 2
            break
        x = x * 100  # dead code
    return x


def test_break_in_both_branches_followed_by_dead_code():
    check(break_both_branches, (X, n_(3)), (t([0.0, 0.0, 0.0]), n_(3)), (X, n_(0)))


def nested_loops_break(x, n, m):
    total = x * 0
    i = 0
    while i < n:
        j = 0
        while j < m:
            if j >= i:
                break
            total = total + x
            j += 1
        i += 1
    return total


def test_break_in_nested_loops():
    check(nested_loops_break, (X, n_(4), n_(10)), (X, n_(0), n_(1)))


def break_then_continue(x):
    acc = x * 0
    for i in range(6):
        if i == 1:
            continue
        if i == 4:
            break
        acc = acc + x * i
    return acc


def test_python_break_and_continue_in_unrolled_loop():
    check(break_then_continue, X)


def tensor_break_in_python_for(x):
    for i in range(5):
        x = x * 2
        if x.sum() > 20:
            break
    return x


def test_tensor_break_inside_unrolled_python_for():
    check(tensor_break_in_python_for, X, t([0.1, 0.1, 0.1]), t([50.0, 0.0, 0.0]))


def return_in_while(x, n):
    i = 0
    while i < n:
        if x.sum() > 10:
            return x * 100
        x = x + 1
        i += 1
    return x


def test_return_under_tensor_if_inside_while():
    check(return_in_while, (X, n_(10)), (X, n_(2)), (X, n_(0)))


def return_in_for(m):
    for row in m:
        if row.sum() > 5:
            return row
    return m[0] * 0


def test_return_under_tensor_if_inside_for():
    check(return_in_for, t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [0.0, 1.0]]))


def return_in_python_for(x, y):
    a = x * 1.0
    for i in range(3):
        if a.sum() > 1.0:
            return a * 2.0
        a = a + y
    return a - 1.0


def test_return_under_tensor_if_inside_unrolled_python_for():
    check(return_in_python_for, (X, X), (-X, X), (-X * 10, X))
