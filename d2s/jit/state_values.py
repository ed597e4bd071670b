"""What ``side_effects`` (the Python state a program was built from) and ``object_guards``
(values reached through objects) both read Python state with: a sentinel for a missing entry,
the scalar types held by value, and a closure cell read as an attribute dict is. Their own
module so that neither of the two imports the other for them."""

_MISSING = object()


_PY_STATE_TYPES = frozenset({int, float, bool, str, type(None)})


class _Cell:
    """A closure cell read as an attribute dict is (``get``), so the state check reads it alike."""
    __slots__ = ("cell",)

    def __init__(self, cell):
        self.cell = cell

    def get(self, key, default=None):
        try:
            return self.cell.cell_contents
        except ValueError:  # emptied (del of the variable)
            return default
