"""Tensor ops that converted code reaches for (shape queries, splitting, padding, packing
Python sequences of tensors), eagerly and inside tensor control flow."""
import d2s

from .harness import T, case

X = T([0.5, -1.0, 2.0, 4.0])
M = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
N0, N2, N3 = T(0), T(2), T(3)


@case((X, N2), (X, N0))
def concat_with_list_of_symbolic(x, n):
    return d2s.concat((d2s.tensor([0]), [n]), 0)


@case((N2,), (N0,))
def tensor_of_symbolic_scalars(n):
    return d2s.tensor([n, n + 1])


@case(T([2, 3]), T([1, 1]))
def zeros_with_tensor_shape(shape):
    return d2s.zeros(shape)


@case(M, T([[1.0], [2.0]]))
def shape_as_tensor(x):
    s = d2s.shape(x)
    if s[0] > 1:
        return s * 2
    return s


@case(M, T([[1.0], [2.0]]))
def pad_in_branch(x):
    if x.sum() > 5:
        return d2s.pad(x, [1, 1])
    return d2s.pad(x, [0, 2])


@case(M,)
def unstack_rows(x):
    a, b = d2s.unstack(x)
    if a.sum() > b.sum():
        return a
    return b


@case(X, T([-4.0, 1.0, 2.0, 3.0]))
def chunk_halves(x):
    lo, hi = d2s.chunk(x, 2)
    if lo.sum() > 0:
        return hi
    return lo


@case(X, T([-4.0, 1.0, 2.0, 3.0]))
def cat_alias(x):
    return d2s.cat([x, x * 2.0], 0)


@case(X, T([-4.0, 1.0, 2.0, 3.0]))
def add_n_terms(x):
    terms = [x, x * 2.0]
    if x.sum() > 0:
        terms.append(x * 3.0)
    return d2s.add_n(terms)


@case(X, T([-4.0, 1.0, 2.0, 3.0]))
def identity_op(x):
    y = d2s.identity(x)
    if y.sum() > 0:
        return y
    return -y


@case(M, X)
def size_and_numel(x):
    if x.numel() > 5:
        return x.size(), x.numel()
    return x.size(), 0


@case(X, T([-4.0, 1.0, 2.0, 3.0]))
def split_and_branch(x):
    a, b = d2s.split(x, 2)
    if a.sum() > b.sum():
        return a - b
    return b - a


@case((X, N2), (X, N0))
def cumsum_in_loop(x, n):
    for _ in range(n):
        x = d2s.cumsum(x, axis=0) * 0.5
    return x


@case((X, N3), (X, N0))
def arange_with_tensor_bound(x, n):
    return d2s.arange(n) * 2


@case(M, T([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))
def reshape_with_computed_shape(x):
    rows = x.shape[0]
    y = x.reshape([rows * 3])
    if y.max() > 3:
        return y.reshape([3, rows])
    return y


@case(M, T([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))
def len_of_tensor_in_loop(x):
    total = x[0] * 0.0
    for i in range(len(x)):
        total = total + x[i]
    return total


@case((X, N2), (X, N0))
def print_op_in_loop(x, n):
    for i in range(n):
        d2s.print(x.sum())
        x = x + 1.0
    return x
