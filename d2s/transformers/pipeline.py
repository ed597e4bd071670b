"""The conversion pipeline: source -> gast -> ordered transformers -> ast -> compiled function."""
import ast
import inspect
import linecache
import textwrap
import types

import gast

from .. import convert as convert_runtime  # the `_jst` module converted code calls
from ..convert import call as _call
from . import analysis
from .assert_statements import AssertStatements
from .base import JST, Context, nonlocal_cells, updates_in_place
from .break_statements import BreakStatements
from .call_trees import CallTrees
from .closure_cells import ClosureCells
from .conditional_expressions import ConditionalExpressions
from .continue_statements import ContinueStatements
from ..user_errors import ConversionError, SourceUnavailable
from .for_loops import ForLoops
from .formatted_strings import FormattedStrings
from .if_statements import IfStatements
from .inplace_calls import InplaceCalls
from .lambda_source import lambda_as_function
from .logical_expressions import LogicalExpressions
from .loop_else import LoopElse
from .naming import Namer
from .return_statements import ReturnStatements
from .subscripts import Subscripts
from .undefined_reads import UndefinedReads
from .unsupported_features import UnsupportedFeatures
from .while_loops import WhileLoops
from .while_walrus import WhileWalrus

# The order matters; each entry says why it comes where it does. ``True`` marks passes that
# read the name analysis, which is recomputed just before them (earlier passes changed the tree).
PIPELINE = [
    # Loop `else` clauses become a `no_break` flag tested after the loop, before anything else:
    # every later pass then sees loops without `else` (a `return` in the else is an ordinary
    # return after the loop for the return pass; its own breaks are still plain breaks, lowered
    # with the rest by the break pass), and the pins below see the code that will really run.
    (LoopElse, False),
    # A `while` test binding a name with := moves into the body (after the else pass, whose
    # flag this generated break must leave set), so the loop passes carry that name.
    (WhileWalrus, False),
    # Rejects yield/async, and pins control flow that must stay Python (inside try/with,
    # global writes) before any pass rewrites it.
    (UnsupportedFeatures, False),
    # Reads of locals that may be unbound get a check, while the body is still the user's:
    # later passes bind such names to placeholders, where Python would have raised.
    (UndefinedReads, False),
    # Early returns become one result variable: later passes see assignments and breaks only.
    (ReturnStatements, False),
    # continue, then break, become flags and guards, so loop bodies are straight-line code
    # with ifs: the loop passes need no knowledge of jumps. Continue goes first because its
    # guards may contain breaks that the break pass then lowers in the same loop.
    (ContinueStatements, False),
    (BreakStatements, False),
    # assert becomes a call before loops and ifs carve the body into functions.
    (AssertStatements, False),
    # in-place updates (x.add_(v), self.buf += v) assign their target before loops and ifs
    # carve the body into functions, so the name analysis carries the new values out of them.
    (InplaceCalls, False),
    # Loops before ifs: the flags' guards (`if not break_`) must be inside the loop bodies'
    # functions when the if pass runs, and a loop's carried names are those of the original
    # body. for before while: both post-order, each re-analyzed, so either order is correct.
    (ForLoops, True),
    (WhileLoops, True),
    (IfStatements, True),
    # Expressions last: ternaries, then and/or/not (including the `not flag` guards generated
    # above), then calls, which also wrap calls the earlier passes left in user expressions.
    (ConditionalExpressions, False),
    (LogicalExpressions, False),
    # Subscripts with a computed index go through helpers (a Python list read or written at a
    # tensor position); after the control-flow passes, so their analysis sees plain subscripts.
    (Subscripts, False),
    # f-strings given to print keep their pieces, so a print op shows run-time values; before
    # the call pass, which wraps `print` (the name this pass looks for)
    (FormattedStrings, False),
    (CallTrees, False),
    # Last, over the finished tree: generated functions binding a closure cell declare it
    # nonlocal, so the user's lambdas and nested functions read the live value.
    (ClosureCells, False),
]


class ConvertedFunction:
    """The result of :func:`convert_function`.

    Attributes:
        fn: the converted function (same signature, original globals and closure cells).
        code: the converted source, as a string.
        source_map: generated line -> (original filename, original line, original source line).
        original: the function that was converted.
    """

    def __init__(self, fn, code, source_map, original):
        self.fn, self.code, self.source_map, self.original = fn, code, source_map, original

    def __repr__(self):
        return f"<ConvertedFunction {getattr(self.original, '__qualname__', self.original)}>"


# (code object, its file) -> (converted code object, source text, source map). Code objects
# compare equal across files (equality ignores co_filename): keyed by code alone, the same
# function in two files would run under the first file's name and report errors there.
_CACHE = {}


def _parse(fn):
    try:
        # the code object, not the function: inspect would follow a functools.wraps wrapper's
        # __wrapped__ to the inner function and drop the wrapper's own code
        lines, start = inspect.getsourcelines(fn.__code__)
        filename = inspect.getsourcefile(fn.__code__) or fn.__code__.co_filename
    except (OSError, TypeError) as e:
        raise SourceUnavailable(f"cannot read the source of {getattr(fn, '__qualname__', fn)!r}: {e}") from None
    source = textwrap.dedent("".join(lines))
    try:
        module = gast.parse(source)
    except SyntaxError as e:
        raise SourceUnavailable(f"the source of {fn.__qualname__} cannot be parsed on its own: {e}") from None
    func = module.body[0] if module.body else None
    if not isinstance(func, (gast.FunctionDef, gast.AsyncFunctionDef)):
        raise SourceUnavailable(f"{fn.__qualname__} is not defined by a def statement (a lambda?)")
    if isinstance(func, gast.AsyncFunctionDef):
        raise ConversionError("`async def` functions are not supported by to_static", filename, start)
    gast.increment_lineno(module, start - 1)
    # decorators (@to_static itself among them) must not run again on the converted function
    func.decorator_list = []
    return module, func, filename


def transform(module, func, filename):
    """Run the pipeline over ``func`` (in place) and return it."""
    ctx = Context(filename, Namer(module), func)
    ctx.cells = analysis.activity.closure_cells(func)
    ctx.nonlocal_cells = nonlocal_cells(func, analysis.activity.own_names(func)[0])
    ctx.in_place = updates_in_place(func)  # (on the user's code, before any pass lowers it)
    for cls, needs_analysis in PIPELINE:
        if needs_analysis:
            # a closure may read a cell at any time: branches and loops carry what they rebind
            analysis.analyze(module, always_live=ctx.cells)
        cls(ctx).transform(func)
    return func


def _source_map(func_ast, code, filename):
    """Generated line -> (file, original line, original text), pairing the statements of the
    unparsed code with those of the tree it came from (unparse then parse keeps the shape)."""
    generated = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.stmt)]
    original = [n for n in ast.walk(func_ast) if isinstance(n, ast.stmt)]
    out = {}
    for g, o in zip(generated, original):
        for line in range(g.lineno, (g.end_lineno or g.lineno) + 1):
            if line not in out or isinstance(g, ast.stmt):
                out.setdefault(line, (filename, o.lineno, linecache.getline(filename, o.lineno).strip()))
    return out


def _compile(func_ast, fn, filename):
    """Compile the converted def inside a factory taking the free variable names, so it
    closes over cells like the original; return its code object."""
    freevars = list(fn.__code__.co_freevars)
    # the def gets a name nobody reads, so a function calling itself by name still reaches the
    # global (not the factory's local); code names are restored below
    renamed = ast.FunctionDef(**{**{f: getattr(func_ast, f) for f in func_ast._fields},
                                 "name": "__d2s_converted"})
    func_ast = ast.copy_location(renamed, func_ast)
    factory = ast.FunctionDef(
        name="__d2s_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in freevars], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[func_ast, ast.Return(value=ast.Name(id=func_ast.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.copy_location(factory, func_ast)
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts
                 if isinstance(c, types.CodeType) and c.co_name == func_ast.name)
    return inner.replace(co_name=fn.__name__, co_qualname=fn.__qualname__)


def convert_function(fn):
    """Convert ``fn``'s source so its control flow on tensors builds graph ops.

    Args:
        fn: a Python function or bound method (methods convert ``__func__`` and rebind).
    Returns:
        a :class:`ConvertedFunction`.
    Raises:
        ConversionError: for unsupported syntax, at the user's file and line.
        SourceUnavailable: when the source cannot be read (REPL, exec): run eagerly instead.
    """
    if inspect.ismethod(fn):
        inner = convert_function(fn.__func__)
        return ConvertedFunction(types.MethodType(inner.fn, fn.__self__), inner.code, inner.source_map, fn)
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"convert_function expects a Python function or method, got {type(fn).__name__}")
    key = (fn.__code__, fn.__code__.co_filename)
    cached = _CACHE.get(key)
    if cached is None:
        # a lambda's source is part of a larger statement: found by its lines and columns
        module, func, filename = lambda_as_function(fn) if fn.__name__ == "<lambda>" else _parse(fn)
        transform(module, func, filename)
        func_ast = gast.gast_to_ast(func)
        ast.fix_missing_locations(func_ast)
        code_text = ast.unparse(func_ast)
        source_map = _source_map(func_ast, code_text, filename)
        code_obj = _compile(func_ast, fn, filename)
        cached = _CACHE[key] = (code_obj, code_text, source_map)
    code_obj, code_text, source_map = cached
    g = fn.__globals__
    jst = convert_runtime
    if g.get(JST, jst) is not jst:
        raise ConversionError(f"the module of {fn.__qualname__} defines its own global '{JST}', which "
                              "converted code needs for d2s's runtime helpers; rename it",
                              fn.__code__.co_filename, fn.__code__.co_firstlineno)
    g[JST] = jst
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[n] for n in code_obj.co_freevars) or None
    new = types.FunctionType(code_obj, g, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    new.__dict__.update(fn.__dict__)
    new.__d2s_converted__ = True
    return ConvertedFunction(new, code_text, source_map, fn)


def _converted_or_same(fn):
    """``fn`` converted, or ``fn`` itself when its source cannot be read (it then runs eagerly)."""
    try:
        return convert_function(fn).fn
    except SourceUnavailable:
        return fn


# converted code converts the functions it calls (``_jst.convert_call``); the runtime helpers sit
# below this layer, so the conversion is handed to them here
_call.set_source_converter(_converted_or_same)
