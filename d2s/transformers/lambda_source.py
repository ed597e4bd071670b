"""Finds a lambda's own source inside the statement around it, by line and column offsets.

A lambda's source is one expression of a larger statement (``f = to_static(lambda x: ...)``,
several lambdas on one line, a call spread over lines), so ``inspect.getsource`` cannot give
it alone. As TensorFlow AutoGraph does, the module's source is parsed and the ``Lambda``
node is picked by the line its code object starts on, its parameter names and the columns
its body's instructions cover (``co_positions``). The lambda then becomes a one-statement
``def`` that the pipeline converts like any function.
"""
import inspect
import linecache
import textwrap

import gast

from . import gast_compat as gc
from ..user_errors import SourceUnavailable


def lambda_as_function(fn):
    """``(module, FunctionDef, filename)`` for lambda ``fn``: ``def __d2s_lambda(<its
    parameters>): return <its body>``, located at the lambda's own lines and columns."""
    code = fn.__code__
    try:
        filename = inspect.getsourcefile(fn) or code.co_filename
    except TypeError:
        filename = code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise SourceUnavailable(f"cannot read the source of the lambda at {filename}:{code.co_firstlineno}")
    lam = _find(fn, _parse_around(fn, lines), filename)
    ret = gast.copy_location(gast.Return(value=lam.body), lam.body)
    func = gast.copy_location(gc.function_def("__d2s_lambda", [], [ret]), lam)
    func.args = lam.args
    module = gast.Module(body=[func], type_ignores=[])
    return module, func, filename


def _parse_around(fn, lines):
    """The parsed module source (its line numbers and columns are the file's); when the file
    does not parse as a whole (it changed since), the statement holding the lambda."""
    try:
        return gast.parse("".join(lines))
    except SyntaxError:
        pass
    try:
        stmt, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise SourceUnavailable(f"cannot read the source of the lambda: {e}") from None
    src = "".join(stmt)
    if textwrap.dedent(src) != src:
        # an indented statement: parse it as the body of a block so columns stay the file's
        src = "if 1:\n" + src
        start -= 1
    try:
        tree = gast.parse(src)
    except SyntaxError as e:
        raise SourceUnavailable(f"the statement holding the lambda at line {start} does not parse on its own: "
                                f"{e}") from None
    gast.increment_lineno(tree, start - 1)
    return tree


def _find(fn, tree, filename):
    code = fn.__code__
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    if code.co_flags & inspect.CO_VARARGS:
        params.append(code.co_varnames[len(params)])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append(code.co_varnames[len(params)])
    found = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda) and n.lineno == code.co_firstlineno
             and _param_names(n.args) == params]
    if len(found) > 1:
        span = _body_span(code)
        if span is not None:
            found = [n for n in found if _covers(n.body, span)]
    if len(found) > 1:
        # nested lambdas with the same parameters: the innermost whose body still covers
        # every instruction is this one; anything else is a genuinely ambiguous line
        found = [n for n in found if not any(m is not n and _inside(m, n) for m in found)]
    if len(found) != 1:
        what = "no lambda" if not found else f"{len(found)} lambdas"
        raise SourceUnavailable(f"{what} with parameters ({', '.join(params)}) found at "
                                f"{filename}:{code.co_firstlineno}")
    return found[0]


def _param_names(args):
    names = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg is not None:
        names.append(args.vararg.id)
    if args.kwarg is not None:
        names.append(args.kwarg.id)
    return names


def _body_span(code):
    """``((first line, col), (last line, end col))`` of the source the lambda's instructions
    come from, or None (no position information)."""
    # (the frame setup and the implicit return carry empty spans at column 0: not source)
    positions = [p for p in code.co_positions() if p[0] is not None and p[2] is not None
                 and (p[0], p[2]) != (p[1], p[3])]
    if not positions:
        return None
    start = min((p[0], p[2]) for p in positions)
    end = max((p[1], p[3]) for p in positions)
    return start, end


def _covers(node, span):
    start, end = span
    return (node.lineno, node.col_offset) <= start and end <= (node.end_lineno, node.end_col_offset)


def _inside(inner, outer):
    """Whether lambda ``inner`` lies within lambda ``outer``'s body."""
    return inner is not outer and any(inner is n for n in gast.walk(outer.body))
