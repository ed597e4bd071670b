"""Maps frames of converted (generated) code back to the user's original file and line.

The converter compiles each converted function under its own filename; ``register`` records,
for that filename, where each generated line came from. ``original_location`` answers for one
frame (``d2s.static.errors`` uses it to point symbolic-value errors at the user's line) and
``annotate_exception`` adds the user's frames to an exception raised inside converted code.
"""
import linecache
import os

# generated filename -> (mapping callable: generated lineno -> (file, line) or None, name)
_MAPS = {}


def register(filename, source_map, original_file=None, name=None):
    """Record that code compiled under ``filename`` comes from ``original_file``.

    ``source_map`` may be a dict ``{generated lineno: original lineno}`` or ``{generated
    lineno: (file, lineno)}``, an object with a ``lookup(lineno)`` / ``original(lineno)``
    method or a callable, giving the original line (or ``(file, line)``) of a generated line.
    """
    if not filename:
        return
    _MAPS[filename] = (_as_lookup(source_map, original_file), name)


def _as_lookup(source_map, original_file):
    if source_map is None:
        return lambda lineno: None
    if isinstance(source_map, dict):
        get = source_map.get
    else:
        get = next((getattr(source_map, m) for m in ("lookup", "original", "get", "original_location",
                                                     "to_original") if callable(getattr(source_map, m, None))),
                   source_map if callable(source_map) else None)
        if get is None:
            return lambda lineno: None

    def lookup(lineno):
        try:
            loc = get(lineno)
        except (KeyError, IndexError, TypeError, ValueError):
            return None
        if loc is None:
            return None
        if isinstance(loc, int):
            return (original_file, loc) if original_file else None
        if isinstance(loc, (tuple, list)) and len(loc) >= 2:
            return loc[0], loc[1]
        fn, ln = getattr(loc, "filename", None), getattr(loc, "lineno", None)
        return (fn, ln) if fn and ln else None

    return lookup


def is_generated(filename):
    return filename in _MAPS


def original_location(filename, lineno, text=""):
    """``(file, line, text)`` of the user's source for a frame at ``filename:lineno``.

    Frames that are not in converted code come back unchanged.
    """
    entry = _MAPS.get(filename)
    if entry is None:
        return filename, lineno, text
    loc = entry[0](lineno)
    if loc is None:
        return filename, lineno, text
    ofile, oline = loc
    otext = linecache.getline(ofile, oline).strip() if ofile and os.path.exists(ofile) else ""
    return ofile, oline, otext or text


def user_frames(tb):
    """``[(file, line, function, text)]`` of the converted-code frames in traceback ``tb``,
    mapped back to the user's source (outermost first)."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in _MAPS:
            f, ln, text = original_location(code.co_filename, tb.tb_lineno, "")
            if f != code.co_filename:
                out.append((f, ln, code.co_name, text))
        tb = tb.tb_next
    return out


def annotate_exception(exc, fn_name=None):
    """Add a note to ``exc`` naming the user's frames it passed through in converted code.

    Python tracebacks show the generated file and line; the note shows the original ones, as
    a traceback would have, so the error points at the user's own source.
    """
    frames = user_frames(exc.__traceback__)
    if not frames or getattr(exc, "_d2s_annotated", False):
        return exc
    lines = [f"(in the converted code of {fn_name}; the user's source:)" if fn_name else
             "(in converted code; the user's source:)"]
    for f, ln, name, text in frames:
        lines.append(f'  File "{f}", line {ln}, in {name}')
        if text:
            lines.append(f"    {text}")
            lines.append(f"    {'^' * len(text)}")
    try:
        exc.add_note("\n".join(lines))
        exc._d2s_annotated = True
    except (AttributeError, TypeError):  # exceptions with __slots__ or read-only attributes
        pass
    return exc
