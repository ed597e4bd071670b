"""Converted vs eager: if/elif/else, ternaries, branch targets, early returns."""
import d2s
from convert_helpers import check, t

POS, NEG, ZERO = t([1.0, 2.0]), t([-3.0, 1.0]), t([0.5, -0.5])
INPUTS = [POS, NEG, ZERO]


def if_else(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x - 1
    return y


def test_if_else():
    check(if_else, *INPUTS)


def if_elif_else(x):
    s = x.sum()
    if s > 1:
        y = x + 1
    elif s > -1:
        y = x * 3
    else:
        y = -x
    return y


def test_if_elif_else():
    check(if_elif_else, *INPUTS)


def nested_three_deep(x):
    y = x
    if x[0] > 0:
        if x[1] > 1:
            if x.sum() > 2.5:
                y = y * 10
            else:
                y = y * 5
        else:
            y = y + 1
    else:
        y = y - 1
    return y


def test_nested_three_deep():
    check(nested_three_deep, POS, NEG, t([1.0, 1.2]), t([2.0, 0.0]))


def if_zero_d_bool(x, flag):
    if flag:
        return x + 1
    return x - 1


def test_if_on_0d_bool_tensor():
    check(if_zero_d_bool, (POS, d2s.tensor(True)), (POS, d2s.tensor(False)))


def if_without_else(x):
    y = x
    if x.mean() > 0:
        y = y * 4
    return y + 1


def test_if_without_else():
    check(if_without_else, *INPUTS)


def assigned_one_branch_unused(x):
    if x.sum() > 0:
        tmp = x * 2
        x = tmp + 1
    return x


def test_variable_in_one_branch_unused_after():
    check(assigned_one_branch_unused, *INPUTS)


def only_in_nested_branches(x):
    if x.sum() > 0:
        if x[0] > 1.5:
            z = x * 2
        else:
            z = x * 3
    else:
        z = x
    return z


def test_variable_only_in_nested_branches():
    check(only_in_nested_branches, POS, NEG, t([2.0, 1.0]))


def branch_local_temporaries(x):
    if x.sum() > 0:
        a = x * 2
        b = a + 1
        y = b * a
    else:
        c = x - 1
        y = c * c
    return y


def test_branch_local_temporaries():
    check(branch_local_temporaries, *INPUTS)


def successive_ifs(x):
    y = x
    if x[0] > 0:
        y = y + 1
    if x[1] > 0:
        y = y * 2
    if y.sum() > 3:
        y = y - 3
    return y


def test_successive_ifs():
    check(successive_ifs, *INPUTS)


def ternary(x):
    y = x * 2 if x.sum() > 0 else x * -1
    return y


def test_ternary():
    check(ternary, *INPUTS)


def ternary_in_lambda(x):
    f = lambda v: v + 1 if v.sum() > 0 else v - 1  # noqa: E731
    return f(x)


def test_ternary_inside_lambda():
    check(ternary_in_lambda, *INPUTS)


def ternary_in_loop(x):
    out = x
    for i in range(3):
        out = out + 1 if out.sum() < 4 else out - 2
    return out


def test_ternary_inside_loop_body():
    check(ternary_in_loop, *INPUTS)


def dict_target(x):
    d = {"a": x}
    if x.sum() > 0:
        d["a"] = x * 2
        d["b"] = x
    else:
        d["a"] = x * 3
        d["b"] = -x
    return d["a"] + d["b"]


def test_dict_subscript_target_in_branches():
    check(dict_target, *INPUTS)


class Holder:
    def __init__(self):
        self.value = None


def attribute_target(x):
    h = Holder()
    h.value = x
    if x.sum() > 0:
        h.value = x + 10
    else:
        h.value = x - 10
    return h.value


def test_attribute_target_in_branches():
    check(attribute_target, *INPUTS)


def tensor_subscript_target(x):
    y = x * 1
    if x.sum() > 0:
        y[0] = 5.0
    else:
        y[1] = -5.0
    return y


def test_tensor_subscript_target_in_branches():
    check(tensor_subscript_target, *INPUTS)


def python_scalar_vs_tensor(x):
    if x.sum() > 0:
        y = 0.0
    else:
        y = x.sum()
    return x + y


def test_python_number_in_one_branch_tensor_in_other():
    check(python_scalar_vs_tensor, *INPUTS)


def python_numbers_differ(x):
    if x.sum() > 0:
        k = 1
    else:
        k = 2
    return x * k


def test_python_numbers_that_differ_become_tensors():
    check(python_numbers_differ, *INPUTS)


def python_predicate(x, mode):
    if mode == "double":
        return x * 2
    elif mode == "neg":
        return -x
    else:
        return x


def test_mode_strings_dispatch_in_python():
    check(python_predicate, (POS, "double"), (POS, "neg"), (NEG, "other"))


def early_return_chain(x):
    s = x.sum()
    if s > 1:
        return x + 1
    elif s > -1:
        return x * 2
    y = x - 5
    return y * 2


def test_early_return_in_if_elif_chain_with_code_after():
    check(early_return_chain, *INPUTS)


def early_return_tuple(x):
    if x.sum() > 0:
        return x, x.sum()
    z = x * 3
    return z, z.sum()


def test_early_return_tuples():
    check(early_return_tuple, *INPUTS)


def no_return(x, acc):
    if x.sum() > 0:
        acc.append(1)


def test_function_with_no_return():
    check(no_return, (POS, []), static=False)
    check(no_return, (NEG, []), static=False)


def nested_return_then_code(x):
    if x[0] > 0:
        if x[1] > 0:
            return x * 2
        x = x + 100
    return x - 1


def test_nested_early_return():
    check(nested_return_then_code, POS, NEG, t([1.0, -1.0]))


def if_with_dynamic_shape(x):
    if x.shape[0] > 2:
        return x.sum()
    return x.mean()


def test_shape_in_condition_static_and_dynamic():
    check(if_with_dynamic_shape, t([1.0, 2.0, 3.0]), t([1.0, 5.0]))
    check(if_with_dynamic_shape, t([1.0, 2.0, 3.0]), t([1.0, 5.0]), dynamic=True)


def raise_under_python_condition(x, strict):
    if strict and x.ndim != 1:
        raise ValueError("need a vector")
    return x + 1


def test_raise_under_python_condition():
    check(raise_under_python_condition, (POS, True), (POS, False))


def _append_under_tensor_if(x, n):
    acc = [x]
    for i in range(n):  # a Python loop: the list length depends on which branches run
        if x.sum() > i:
            acc.append(x * (i + 1))
        x = x - 0.5
    return d2s.stack(acc).sum(0), len(acc)


def test_list_appended_in_one_branch_of_a_tensor_if_becomes_a_tensor_array():
    check(_append_under_tensor_if, *[(d2s.full([2, 3], v), 3) for v in (-2.0, 0.4, 3.0)])


def _append_after_early_return(x):
    acc = [x]
    for i in range(2):
        if x.mean() > 2.0:
            return x, d2s.stack(acc).sum(0)
        j = 0
        while x.mean() < 1.0 and j < 3:
            acc.append(x)
            x = x + 0.4
            j += 1
    return x, d2s.stack(acc).sum(0)


def test_list_grown_by_a_tensor_loop_under_an_early_return_guard():
    check(_append_after_early_return, *[d2s.full([2, 2], v) for v in (-1.0, 0.5, 3.0)])
