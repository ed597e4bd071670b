"""The public tensor functions (``d2s.add``, ``d2s.sum``, ...), one module per op family.

Each family module holds, for each of its ops, the public wrapper (a thin call of
:func:`d2s.dispatch.apply`, or a composition of such calls), its gradient rule
(``@grad_rule``, or ``non_differentiable(...)`` with the reason) and its ONNX converter
(``@onnx_converter``, or ``onnx_unsupported(...)`` with the reason), side by side, mirroring
the runtime's ``d2s_runtime/ops/*.py`` where the kernel, shape rule and traits live. Wrappers
that are also Tensor methods say so with ``@tensor_method`` (see ``d2s/tensor.py``).

Adding an op: its kernel, shape rule and traits go in its runtime family module
(``defop``); its wrapper (with a docstring), ``@grad_rule`` (or ``non_differentiable``),
``@onnx_converter`` (or ``onnx_unsupported``) and an example call (``sample_call``, which
the registry test gradchecks and the ONNX test exports) go in its family module here.
``tests/ops/test_registry.py`` fails until all of them are there.

Families are imported lowest first: each may use the ones above it in this list. A family's
public wrappers are its functions without a leading underscore; this package re-exports them
(so adding an op touches its family module only). The shape family's module is
``d2s.ops.shape``; the name ``d2s.ops.shape`` itself is the ``shape`` op.
"""
import inspect

from . import (creation, elementwise, division, pointwise, shape as _shape_family, reduce, indexing, selection,
               rearrange, random, types, linalg, matrices, conv, pooling, norm, nn, sorting, counting, bitshift, cumulative, debug,
               special, combining, windows, decompositions, promotion, integrals)

_FAMILIES = (creation, elementwise, division, pointwise, _shape_family, reduce, indexing, selection, rearrange, random,
             types, linalg, matrices, conv, pooling, norm, nn, sorting, counting, bitshift, cumulative, debug,
             special, combining, windows, decompositions, promotion, integrals)


def _public(family):
    """A family's public wrappers: the functions it defines whose names have no leading
    underscore (its helpers have one)."""
    return {name: fn for name, fn in vars(family).items()
            if not name.startswith("_") and inspect.isfunction(fn) and fn.__module__ == family.__name__}


for _family in _FAMILIES:
    globals().update(_public(_family))

# the public functions: every family's public wrappers (d2s re-exports exactly these)
__all__ = sorted({name for family in _FAMILIES for name in _public(family)})  # a later family may redefine one
