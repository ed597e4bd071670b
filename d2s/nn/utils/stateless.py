"""``functional_call``: run a module with some of its parameters and buffers replaced by
given tensors, as PyTorch's ``torch.func.functional_call`` (also
``torch.nn.utils.stateless.functional_call``)."""
from contextlib import contextmanager

__all__ = ["functional_call"]


def _slot(module, name):
    """(registry dict, key) holding the parameter or buffer at dotted ``name``."""
    path, _, leaf = name.rpartition(".")
    mod = module.get_submodule(path)
    for reg in ("_parameters", "_buffers"):
        d = mod.__dict__[reg]
        if leaf in d:
            return d, leaf
    raise AttributeError(f"{type(mod).__name__} has no parameter or buffer named {leaf!r} (from {name!r})")


@contextmanager
def _swapped(module, values, tie_weights, strict):
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = sorted(k for k in own if k not in values)
        unexpected = sorted(k for k in values if k not in own)
        if missing or unexpected:
            raise RuntimeError(f"functional_call got missing keys {missing} and unexpected keys {unexpected}")
    if tie_weights:
        # a tensor shared under several names takes the given value under all of them
        by_id = {id(own[k]): v for k, v in values.items() if k in own}
        values = dict(values)
        for k, t in own.items():
            if k not in values and id(t) in by_id:
                values[k] = by_id[id(t)]
    saved = []
    try:
        for name, value in values.items():
            d, key = _slot(module, name)
            saved.append((d, key, d[key]))
            d[key] = value
        yield
    finally:
        for d, key, old in reversed(saved):
            d[key] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the parameters and buffers named in
    ``parameter_and_buffer_dicts`` (one dict of dotted names, or a sequence of dicts) replaced
    by the given tensors for this call only; gradients flow to the given tensors.

    Args:
        tie_weights: a tensor the module holds under several names (tied weights) takes the
            given value under each of them.
        strict: every parameter and buffer must be given, and nothing else.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        values = dict(parameter_and_buffer_dicts)
    else:
        values = {}
        for d in parameter_and_buffer_dicts:
            overlap = set(values) & set(d)
            if overlap:
                raise ValueError(f"{sorted(overlap)} appeared in multiple dictionaries; behavior of functional call "
                                 "is ambiguous")
            values.update(d)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, values, tie_weights, strict):
        return module(*args, **(kwargs or {}))
