"""Every gast-version-specific node constructor used by the transformers (gast 0.7 fields)."""
import gast


def name(id, ctx=None):
    """A Name node; ``ctx`` defaults to Load."""
    return gast.Name(id=id, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def param(id):
    return gast.Name(id=id, ctx=gast.Param(), annotation=None, type_comment=None)


def constant(value):
    return gast.Constant(value=value, kind=None)


def arguments(names):
    """Positional parameters ``names`` and nothing else."""
    return gast.arguments(args=[param(n) for n in names], posonlyargs=[], vararg=None,
                          kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def lambda_(body, names=()):
    return gast.Lambda(args=arguments(names), body=body)


def function_def(fname, names, body):
    return gast.FunctionDef(name=fname, args=arguments(names), body=body, decorator_list=[],
                            returns=None, type_comment=None, type_params=[])


def tuple_(elts, ctx=None):
    return gast.Tuple(elts=list(elts), ctx=ctx or gast.Load())


def call(func, args=(), keywords=()):
    return gast.Call(func=func, args=list(args), keywords=list(keywords))


def keyword(arg, value):
    return gast.keyword(arg=arg, value=value)


def assign(target, value):
    return gast.Assign(targets=[target], value=value, type_comment=None)


def expr_stmt(value):
    return gast.Expr(value=value)
