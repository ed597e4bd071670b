"""Refuses a tensor ``if``/loop whose traced body mutates a list, dict or set of an enclosing
scope: the body runs once while the program is built, so such a mutation would happen once
instead of as the data decides."""
from ..user_errors import at_user_line


class refuse_escaping:
    """Around the build of a tensor loop: a global or closure list (dict, set) that its body
    mutates would be mutated once, while the body is traced, not once per iteration; such a
    loop is refused with a clear error instead (the mutation cannot be carried without
    rebinding a name that belongs to another scope)."""

    def __init__(self, escaping, what="tensor loop"):
        self.thunk, self.what = escaping, what

    def __enter__(self):
        self.watched = []
        if self.thunk is None:
            return self
        try:
            objs = self.thunk()
        except NameError:
            objs = ()
        self.watched = [(o, _copy(o)) for o in objs if isinstance(o, (list, dict, set))]
        return self

    def __exit__(self, *exc):
        for o, before in self.watched:
            if not _same_items(o, before):
                _restore(o, before)  # leave the user's object as it was before the build
                raise at_user_line(
                    f"this {self.what} mutates a {type(o).__name__} that belongs to an enclosing scope (a global "
                    "or closure variable); its code runs once per branch while the program is built, not as the "
                    "data decides when it runs. Copy it into a local variable before it (e.g. "
                    "`log = list(LOG)`), mutate that, and assign it back after it") from None
        return False


def _copy(o):
    return dict(o) if isinstance(o, dict) else set(o) if isinstance(o, set) else list(o)


def _same_items(o, before):
    if isinstance(o, set):
        return o == before
    if len(o) != len(before):
        return False
    if isinstance(o, dict):
        return list(o) == list(before) and all(o[k] is before[k] for k in o)
    return all(a is b for a, b in zip(o, before))


def _restore(o, before):
    if isinstance(o, list):
        o[:] = before
    else:
        o.clear()
        o.update(before)
