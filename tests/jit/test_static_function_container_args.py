"""d2s/jit/static_function.py: a converted function that changes a list or dict argument
(append, pop, item or key write) is refused with an error naming the argument and the
function's file and line, instead of leaving the caller's container silently as it was;
functions that only read their containers (or restore them) still convert, as eager."""
import pytest

import d2s
from d2s.user_errors import ConvertError


def appends_to_argument(log, x):
    log.append(x.sum())
    return x * 2.0


def appends_in_tensor_branch(log, x):
    if x.sum() > 0:
        log.append(x.max())
    return x


def sets_dict_key(d, x):
    d["y"] = x + 1.0
    return x


def reads_only(xs, d, x):
    return xs[0] * x + d["a"], len(xs)


def appends_then_pops(log, x):
    log.append(x)
    log.pop()
    return x + 1.0


X, NEG = d2s.tensor([1.0, 2.0]), d2s.tensor([-1.0, -2.0])


@pytest.mark.parametrize("fn,arg,name", [(appends_to_argument, [1.0], "log"), (appends_in_tensor_branch, [], "log"),
                                         (sets_dict_key, {"a": 1.0}, "d")])
def test_changing_a_container_argument_is_refused_naming_it(fn, arg, name):
    for x in (X, NEG):
        with pytest.raises(ConvertError) as info:
            d2s.jit.to_static(fn)(arg, x)
        text = str(info.value)
        assert f"changes its list or dict argument '{name}'" in text
        assert "test_static_function_container_args.py" in text and f"in {fn.__name__}" in text


def test_reading_or_restoring_container_arguments_converts():
    static = d2s.jit.to_static(reads_only)
    xs, d = [d2s.tensor(3.0)], {"a": d2s.tensor([0.5, 0.5])}
    got, want = static(xs, d, X), reads_only(xs, d, X)
    assert got[1] == want[1] and got[0].numpy().tolist() == want[0].numpy().tolist()
    log = [1.0]
    out = d2s.jit.to_static(appends_then_pops)(log, X)
    assert log == [1.0] and out.numpy().tolist() == [2.0, 3.0]
