"""Builtins (len, int, bool, max, sorted, isinstance), shapes in conditions, indexing and
slicing forms, annotations, and variables that change type in a loop."""
import d2s

from .harness import T, case

X = T([0.5, -1.0, 2.0])
M = T([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
N0, N2, N3 = T(0), T(2), T(3)


@case(X, M)
def shape_in_python_condition(x):
    if x.shape[0] > 2 and x.ndim == 1:
        return x[:2]
    return x.reshape([-1])


@case(X, T([-1.0, -1.0, -1.0]))
def int_and_bool_builtins(x):
    n = int(x.shape[0])
    positive = bool(x.shape[0] > 1)
    if x.sum() > 0:
        x = x * n
    return x, n, positive


@case((X, T([1.0, 1.0, 1.0])), (X, T([-5.0, 0.0, 0.0])))
def builtin_max_of_tensor_sums(x, y):
    best = max(x.sum(), y.sum())
    return best * 2.0


@case(X, T([3.0, 2.0, 1.0]))
def sorted_python_values_then_tensor_if(x):
    order = sorted([3, 1, 2])
    if x[0] > x[2]:
        return x * order[0]
    return x * order[-1]


@case(M, T([[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]))
def extended_slices(x):
    if x[..., 0].sum() > 1.0:
        y = x[1:, ::2]
    else:
        y = x[:1, 1:]
    return y, x[None].shape


@case(M, T([[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]))
def bool_mask_assignment(x):
    y = x * 1.0
    y[y < 0] = 0.0
    if y.sum() > 5:
        y = y / y.sum()
    return y


@case(X, T([-3.0, 1.0, 1.0]))
def unpack_tensor_into_names(x):
    a, b, c = x
    if a > b:
        return a + c
    return b - c


@case((X, N3), (X, N0), (X, 2))
def annotated_assignments(x: d2s.Tensor, n) -> d2s.Tensor:
    total: d2s.Tensor = x * 0.0
    for i in range(n):
        step: float = 0.5
        total = total + x * step
    return total


@case((X, N3), (X, N0), (X, 2))
def int_accumulator_becomes_float_tensor(x, n):
    s = 0
    for _ in range(n):
        s = s + x
    return s


@case((X, N2), (X, N0), (X, 2))
def subscript_augassign_in_tensor_loop(x, n):
    d = {"s": x * 0.0}
    for i in range(n):
        d["s"] += x
    return d["s"]


@case((X, N2), (X, 1))
def enumerate_with_start_over_list(x, n):
    weights = [0.5, 1.5, 2.5]
    out = x * 0.0
    for i, w in enumerate(weights, start=1):
        if i > n:
            break
        out = out + x * w * i
    return out


@case(X, T([-1.0, 2.0, -3.0]))
def loop_over_dict_items(x):
    params = {"a": 1.0, "b": -2.0}
    out = x
    for name, value in params.items():
        if (out * value).sum() > 0:
            out = out * value
    return out


@case(X, T([-1.0, 2.0, -3.0]))
def nested_lists_of_tensors(x):
    grid = [[x, x * 2.0], [x * 3.0, x * 4.0]]
    total = x * 0.0
    for row in grid:
        for cell in row:
            if cell.sum() > 0:
                total = total + cell
    return total


@case((X, N3), (X, N0))
def python_and_tensor_counter_condition(x, n):
    i, j = 0, 0
    while i < 5 and j < n:
        x = x + 1.0
        i += 1
        j += 1
    return x


@case(M, T([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]))
def reductions_with_keepdims_in_condition(x):
    rows = x.sum(axis=1, keepdims=True)
    if (rows > 0).all():
        return x / rows
    return x - rows


@case(X, T([4.0, 4.0, 4.0]))
def nested_function_returns_early_in_loop(x):
    def first_big(v):
        for i in range(3):
            if v[i] > 1.0:
                return i
        return -1

    return first_big(x)


GLOBAL_SCALE = d2s.tensor([1.0, 2.0, 3.0])


@case(X, T([-4.0, 4.0, 4.0]))
def reads_global_tensor(x):
    if (x * GLOBAL_SCALE).sum() > 0:
        return x * GLOBAL_SCALE
    return x


@case(X, T([-4.0, 4.0, 4.0]))
def conditional_python_string(x):
    mode = "train" if x.shape[0] == 3 else "eval"
    if mode == "train":
        x = x * 2.0
    return x, mode
