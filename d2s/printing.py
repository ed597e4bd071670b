"""``d2s.print`` (a print that runs every time, eagerly and on every call of a program; see
:mod:`d2s.ops.debug`, where it lives with the other debug ops) and ``d2s.set_printoptions``
(how tensors print, as ``torch.set_printoptions``)."""
from .ops.debug import print  # noqa: F401,A004
from .tensor import PRINT_OPTIONS

__all__ = ["print", "set_printoptions"]

_PROFILES = {"short": dict(precision=2, threshold=1000, edgeitems=2, max_line_width=80),
             "full": dict(precision=4, threshold=2 ** 63 - 1, edgeitems=3, max_line_width=80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print (``repr``/``str``), with PyTorch's arguments.

    Args:
        precision: digits after the decimal point.
        threshold: element count above which the middle is elided.
        edgeitems: elements shown at each end of an elided dim.
        linewidth: characters per line.
        profile: ``'default'`` (d2s's own printing, numpy's defaults), ``'short'`` or ``'full'``;
            applied first, then the other arguments.
        sci_mode: True for scientific notation always, False never, None: numpy's choice.
    """
    if profile is not None:
        if profile != "default" and profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; use 'default', 'short' or 'full'")
        PRINT_OPTIONS.clear()
        PRINT_OPTIONS.update(_PROFILES.get(profile, {}))
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("max_line_width", linewidth)):
        if value is not None:
            PRINT_OPTIONS[key] = int(value)
    if sci_mode is not None:
        digits = PRINT_OPTIONS.get("precision", 4)
        style = "e" if sci_mode else "f"
        PRINT_OPTIONS["formatter"] = {"float_kind": lambda v: f"{v:.{digits}{style}}"}
