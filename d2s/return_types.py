"""PyTorch's named-tuple results (``torch.return_types``): ``max(x, dim)``, ``sort``, ``topk``, ...

Each is a ``collections.namedtuple`` named as PyTorch names it, so the three ways model code reads
one work alike, eagerly and inside ``to_static``::

    values, indices = x.max(1)      # unpacking
    pred = x.max(1)[1]              # indexing
    pred = x.max(1).indices         # fields

A converted function may return one: it comes back as the same named tuple (a saved program
under ``d2s_runtime`` returns a plain tuple of arrays in the same order).
"""
from collections import namedtuple


def _values_indices(name):
    return namedtuple(name, ["values", "indices"], module=__name__)


max = _values_indices("max")  # noqa: A001  (PyTorch's name)
min = _values_indices("min")  # noqa: A001
median = _values_indices("median")
mode = _values_indices("mode")
sort = _values_indices("sort")
topk = _values_indices("topk")
kthvalue = _values_indices("kthvalue")
aminmax = namedtuple("aminmax", ["min", "max"], module=__name__)
slogdet = namedtuple("slogdet", ["sign", "logabsdet"], module=__name__)
frexp = namedtuple("frexp", ["mantissa", "exponent"], module=__name__)
histogram = namedtuple("histogram", ["hist", "bin_edges"], module=__name__)
triangular_solve = namedtuple("triangular_solve", ["solution", "cloned_coefficient"], module=__name__)
linalg_lu = namedtuple("linalg_lu", ["P", "L", "U"], module=__name__)
linalg_lu_factor = namedtuple("linalg_lu_factor", ["LU", "pivots"], module=__name__)
linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"], module=__name__)
linalg_slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"], module=__name__)
cummax = _values_indices("cummax")
cummin = _values_indices("cummin")
nanmedian = _values_indices("nanmedian")
linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"], module=__name__)
svd = namedtuple("svd", ["U", "S", "V"], module=__name__)
linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"], module=__name__)
linalg_qr = namedtuple("linalg_qr", ["Q", "R"], module=__name__)
qr = namedtuple("qr", ["Q", "R"], module=__name__)
linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"], module=__name__)
linalg_solve_ex = namedtuple("linalg_solve_ex", ["result", "info"], module=__name__)
linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"], module=__name__)
linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"], module=__name__)

__all__ = ["max", "min", "median", "mode", "sort", "topk", "kthvalue", "aminmax", "slogdet", "linalg_slogdet",
           "cummax", "cummin", "nanmedian", "linalg_svd", "svd", "linalg_eigh", "linalg_qr", "qr", "linalg_lstsq",
           "linalg_inv_ex", "linalg_solve_ex", "linalg_cholesky_ex", "frexp", "histogram",
           "triangular_solve", "linalg_lu", "linalg_lu_factor", "linalg_lu_factor_ex"]
