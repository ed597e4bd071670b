"""if/elif/else, ternaries and and/or/not on tensors and on Python values."""
import d2s

from .harness import T, case

POS, NEG, MIX = T([1.0, 2.0, 3.0]), T([-1.0, -2.0, -0.5]), T([-2.0, 0.5, 1.0])


@case(POS, NEG, MIX)
def relu_like(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = -x
    return y


@case(POS, NEG, MIX)
def elif_chain(x):
    m = x.mean()
    if m > 1.0:
        return x - 1.0
    elif m > 0.0:
        return x * 0.5
    elif m > -1.0:
        return x + 1.0
    else:
        return x * 0.0


@case(POS, NEG, MIX)
def if_without_else_updates(x):
    y = x + 1.0
    if x.max() > 2.0:
        y = y * 3.0
    return y


@case(POS, NEG, MIX)
def nested_ifs(x):
    if x[0] > 0:
        if x[1] > 1.5:
            r = x * 4.0
        else:
            r = x * 3.0
    else:
        if x[2] > 0:
            r = x * 2.0
        else:
            r = x
    return r


@case(POS, NEG, MIX)
def ternary_expression(x):
    scale = 2.0 if x.sum() > 0 else 0.5
    return x * scale


@case(POS, NEG, MIX)
def ternary_of_tensors(x):
    return x.exp() if x.min() > 0 else x.abs()


@case(POS, NEG, MIX)
def and_or_not_predicates(x):
    if x.sum() > 0 and x.min() > 0:
        return x + 10.0
    if not x.max() > 0 or x[0] < -1.5:
        return x - 10.0
    return x


@case((POS, True), (POS, False), (NEG, True), (NEG, False))
def python_flag_and_tensor(x, use_abs):
    if use_abs and x.sum() < 0:
        x = x.abs()
    return x * 2.0


@case((POS, None), (MIX, T([1.0, 1.0, 1.0])), (NEG, T([0.5, 0.5, 0.5])))
def optional_bias(x, bias):
    if bias is not None:
        x = x + bias
    if x.mean() > 0:
        x = x * 2.0
    return x


@case((POS, "relu"), (MIX, "relu"), (MIX, "tanh"), (NEG, "none"))
def activation_by_name(x, act):
    if act == "relu":
        out = d2s.relu(x)
    elif act == "tanh":
        out = d2s.tanh(x)
    else:
        out = x
    return out


@case(POS, NEG, MIX)
def both_branches_define_new_names(x):
    if x.sum() > 0:
        a = x * 2.0
        b = x.sum()
    else:
        a = x - 1.0
        b = x.max()
    return a + b


@case(POS, NEG, MIX)
def branch_returns_tuple_of_tensors(x):
    if x.mean() > 0:
        lo, hi = x.min(), x.max()
    else:
        lo, hi = x.max(), x.min()
    return lo, hi


@case(True, False)
def python_name_bound_in_one_branch(c):
    if c:
        i = 1
    return i


@case(POS, NEG)
def tensor_name_bound_in_one_branch(x):
    if x.sum() > 0:
        y = x * 2.0
    return y


@case(POS, NEG, MIX)
def int_dtype_preserved_by_branches(x):
    k = d2s.tensor(1)
    if x.sum() > 0:
        k = k + 2
    else:
        k = k * 5
    return k


@case(POS, NEG, MIX)
def bool_result_from_branches(x):
    if x.mean() > 0:
        flag = x.max() > 2.5
    else:
        flag = x.min() < -1.5
    return flag


@case(POS, NEG, MIX)
def python_int_set_in_tensor_branch(x):
    m = 1
    if x.sum() > 0:
        m = 3
    return x * m


@case(POS, NEG, MIX)
def compare_chain(x):
    if -1.0 < x.mean() < 1.0:
        return x * 0.0
    return x


@case(POS, NEG, MIX)
def any_all_predicates(x):
    if (x > 0).all():
        return x.log()
    if (x > 0).any():
        return d2s.where(x > 0, x, d2s.zeros_like(x))
    return -x


@case(POS, NEG, MIX)
def if_on_elementwise_comparison_reduced(x):
    mask = x > 0.0
    if mask.sum() >= 2:
        return x[mask].sum()
    return x.sum() * 0.0


@case(POS, NEG, MIX)
def pass_in_branch(x):
    if x.sum() > 0:
        pass
    else:
        x = x * -1.0
    return x


@case(POS, NEG, MIX)
def isinstance_dispatch(x):
    y = x.sum()
    if isinstance(y, d2s.Tensor):
        y = y * 2.0
    if y > 0:
        y = y + 1.0
    return y
