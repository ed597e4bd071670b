"""The public tensor functions (``d2s.add``, ``d2s.sum``, ...), one module per op family.

Each family module holds, for each of its ops, the public wrapper (a thin call of
:func:`d2s.dispatch.apply`, or a composition of such calls), its gradient rule
(``@grad_rule``, or ``non_differentiable(...)`` with the reason) and its ONNX converter
(``@onnx_converter``, or ``onnx_unsupported(...)`` with the reason), side by side, mirroring
the runtime's ``d2s_runtime/ops/*.py`` where the kernel, shape rule and traits live. Wrappers
that are also Tensor methods say so with ``@tensor_method`` (see ``d2s/tensor.py``).

Families are imported lowest first: each may use the ones above it in this list. (The shape
family's module is ``d2s.ops.shape``; the name ``d2s.ops.shape`` itself is the ``shape`` op.)
"""
from . import creation, elementwise, shape as _shape_family, reduce, indexing, linalg, nn, debug  # noqa: F401
from .creation import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .debug import print  # noqa: F401,A004

__all__ = (creation.__all__ + elementwise.__all__ + _shape_family.__all__ + reduce.__all__ + indexing.__all__
           + linalg.__all__ + nn.__all__ + debug.__all__)
