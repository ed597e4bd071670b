"""``d2s.print``: a print that runs every time, eagerly and on every call of a program (see
:mod:`d2s.ops.debug`, where it lives with the other debug ops)."""
from .ops.debug import print  # noqa: F401,A004

__all__ = ["print"]
