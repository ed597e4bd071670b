"""Early returns: in branches, in loops, nested loops, with different Python types, and
inside try/with blocks."""
import d2s

from .harness import T, case

POS, NEG, MIX = T([1.0, 2.0, 3.0]), T([-1.0, -2.0, -0.5]), T([-2.0, 0.5, 1.0])
N0, N2, N4 = T(0), T(2), T(4)


@case(POS, NEG, MIX)
def guard_clause(x):
    if x.sum() < 0:
        return x * 0.0
    y = x * 2.0
    return y + 1.0


@case((POS, N0), (POS, N4), (MIX, N4), (NEG, N2), (POS, 3))
def return_from_loop(x, n):
    for i in range(n):
        x = x + 1.0
        if x.sum() > 10.0:
            return x
    return x * -1.0


@case((POS, N0), (MIX, N2), (MIX, N4), (NEG, N4))
def return_from_nested_loops(x, n):
    for i in range(n):
        for j in range(n):
            x = x + 0.5
            if x.max() > 3.5:
                return x, i
    return x, -1


@case((POS, N0), (MIX, N4), (NEG, N4), (POS, 4))
def return_from_while(x, n):
    i = 0
    while i < n:
        if x.min() > 1.5:
            return x * 100.0
        x = x + 0.5
        i += 1
    return x


@case(POS, NEG, MIX)
def return_none_or_tensor(x):
    if x.sum() > 0:
        return x
    return None


@case((POS, True), (POS, False), (NEG, False))
def python_early_return_types(x, flag):
    if flag:
        return 1
    return x


@case(POS, NEG, MIX)
def return_python_number_in_tensor_branch(x):
    if x.sum() > 0:
        return 1.0
    return 2.0


@case(POS, NEG, MIX)
def return_int_vs_tensor(x):
    if x.mean() > 0:
        return x.sum()
    return 0


@case(POS, NEG, MIX)
def return_tuple_from_branches(x):
    if x[0] > 0:
        return x, x.sum()
    return -x, x.mean()


@case(POS, NEG, MIX)
def return_dict_from_branches(x):
    if x.max() > 2.0:
        return {"out": x, "score": x.max()}
    return {"out": -x, "score": x.min()}


@case(POS, NEG, MIX)
def return_inside_elif_ladder(x):
    s = x.sum()
    if s > 5:
        return x * 5.0
    elif s > 0:
        y = x * 2.0
    elif s > -4:
        return x * 0.25
    else:
        y = x
    return y - 1.0


@case((POS, True), (NEG, True), (POS, False))
def return_inside_try_in_if(x, check):
    if check:
        try:
            return x * 2.0
        finally:
            pass
    return x


@case(POS, NEG, MIX)
def return_inside_with_in_tensor_if(x):
    if x.sum() > 0:
        with d2s.no_grad():
            return x * 3.0
    return x


@case((POS, N0), (MIX, N4), (NEG, N2))
def return_after_break(x, n):
    i = 0
    while i < n:
        if x.max() > 2.0:
            break
        x = x + 1.0
        i += 1
    if i == 0:
        return x * 0.0
    return x


@case((POS, N0), (MIX, N4), (NEG, N4))
def return_in_else_of_loop(x, n):
    for i in range(n):
        if x.sum() > 4.0:
            break
        x = x + 1.0
    else:
        return x * -1.0
    return x


@case((POS, 0), (POS, 2), (MIX, 3), (NEG, 1))
def return_in_python_loop_tensor_if(x, n):
    for i in range(n):
        if x.sum() > 3.0 * (i + 1):
            return x - i
        x = x + 1.0
    return x


@case(POS, NEG, MIX)
def bare_return_in_branch(x):
    if x.sum() > 0:
        return
    return x


@case((POS, N0), (MIX, N4), (NEG, N4))
def return_different_python_types_from_loop(x, n):
    for i in range(n):
        if x.sum() > 3.0:
            return "big"
        x = x + 1.0
    return "small"
