"""What saving and exporting need from any program-producing object, in one form.

``program_and_params(obj, input_spec)`` accepts a StaticFunction, an ``nn.Module`` (its
converted ``forward``; a module that was never converted is converted for the export without
being changed), a traced function, a plain Python function (converted with ``to_static``) or a
Program, and returns an :class:`Exported`: the Program, its parameter arrays by param var
name, and the calling convention (input names and specs, output names and specs, and how the
flat outputs nest into what the function returned).
"""
import inspect

import numpy as np

from d2s_runtime.device import to_host

from .. import pytree
from ..nn.module import Module
from ..static.input_spec import InputSpec
from ..tensor import Tensor
from .api import to_static
from .static_function import StaticFunction


class Exported:
    """A program ready to save or export. Unpacks as ``program, params``.

    Attributes:
        program: the Program. params: ``{param var name: numpy array}``.
        input_names, output_names: names for the program's inputs and outputs.
        output_tree: JSON nesting of the outputs (see ``d2s_runtime.saved_model``).
        param_names: ``{param var name: the module's name for it}`` where known.
        kind: ``'to_static'``, ``'trace'`` or ``'program'``. training: the module's mode.
    """

    def __init__(self, program, params, input_names=None, output_names=None, output_tree=None,
                 param_names=None, kind="program", training=None):
        self.program = program
        self.params = params
        self.input_names = list(input_names or _default_names("input", len(program.inputs)))
        self.output_names = list(output_names or _default_names("output", len(program.outputs)))
        n = len(program.outputs)
        self.output_tree = output_tree or ({"leaf": 0} if n == 1 else {"tuple": [{"leaf": i} for i in range(n)]})
        self.param_names = dict(param_names or {})
        self.kind = kind
        self.training = training

    def __iter__(self):
        return iter((self.program, self.params))

    def specs(self, names, which):
        gb = self.program.block
        return [{"name": n, "shape": list(gb.lookup(v).type.shape), "dtype": gb.lookup(v).type.dtype}
                for n, v in zip(names, which)]

    @property
    def input_specs(self):
        return self.specs(self.input_names, self.program.inputs)

    @property
    def output_specs(self):
        return self.specs(self.output_names, self.program.outputs)


def _default_names(prefix, n):
    return [f"{prefix}_{i}" for i in range(n)]


# ------------------------------------------------------------------ output structure
class _Leaf:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


def tree_of(rebuild, n_outputs, single=False):
    """The JSON output tree of a rebuild function (``rebuild(values) -> user structure``),
    found by rebuilding from markers."""
    if single:
        return {"leaf": 0}
    return _to_json(rebuild([_Leaf(i) for i in range(n_outputs)]))


def _to_json(o):
    leaves, treedef = pytree.tree_flatten(o, is_leaf=pytree.is_registered)
    return _json_of(treedef, iter(leaves))


def _json_of(d, leaves):
    if d.node_type is None:
        return _leaf_json(next(leaves))
    if d.node_type is dict:
        bad = [k for k in d.node_data if not isinstance(k, (str, int, float, bool))]
        if bad:
            raise TypeError(f"cannot save outputs in a dict with keys {bad}: keys must be str, int, float or bool")
        return {"dict": [[k, _json_of(c, leaves)] for k, c in zip(d.node_data, d.children)]}
    items = [_json_of(c, leaves) for c in d.children]
    return {"list": items} if issubclass(d.node_type, list) else {"tuple": items}  # named tuples: plain tuples


def _leaf_json(o):
    if isinstance(o, _Leaf):
        return {"leaf": o.i}
    if o is None or isinstance(o, (bool, int, float, str)):
        return {"const": o}
    if isinstance(o, np.generic):
        return {"const": o.item()}
    raise TypeError(f"cannot save an output of type {type(o).__name__} ({o!r}): a saved function may return "
                    "tensors, and tuples, lists and dicts of them, and Python scalars")


def output_names_of(tree, n):
    """Output names from dict keys where the outputs are a dict of tensors, else output_i."""
    names = _default_names("output", n)
    if "dict" in tree:
        for k, sub in tree["dict"]:
            if "leaf" in sub and isinstance(k, str) and k.isidentifier():
                names[sub["leaf"]] = k
    return names if len(set(names)) == n else _default_names("output", n)


# ------------------------------------------------------------------ inputs
def _spec_list(input_spec):
    if input_spec is None:
        return None
    if isinstance(input_spec, (InputSpec, Tensor, np.ndarray)):
        input_spec = [input_spec]
    out = []
    for s in input_spec:
        if isinstance(s, Tensor):
            s = InputSpec(s.shape, str(s.dtype))
        elif isinstance(s, np.ndarray):
            s = InputSpec(s.shape, s.dtype.name)
        out.append(s)
    return out


def _arg_names(fn, n, bound):
    """The function's own names for its first ``n`` positional parameters, if it has them."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if bound and params:
        params = params[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:n] if len(names) >= n else None


def _input_names(specs, fn, n, bound):
    names = [getattr(s, "name", None) for s in specs] if specs and len(specs) == n else [None] * n
    fallback = _arg_names(fn, n, bound) if fn is not None and specs and len(specs) == n else None
    fallback = fallback or _default_names("input", n)
    names = [nm or fb for nm, fb in zip(names, fallback)]
    return names if len(set(names)) == n else _default_names("input", n)


def _param_names(module, param_tensors):
    if module is None or not hasattr(module, "named_parameters"):
        return {}
    by_id = {id(t): name for name, t in module.named_parameters()}
    return {var: by_id[id(t)] for var, t in param_tensors if id(t) in by_id}


# ------------------------------------------------------------------ the objects
def _is_static_function(obj):
    return hasattr(obj, "get_program") and hasattr(obj, "concrete_programs")


def _is_traced(obj):
    return hasattr(obj, "program") and hasattr(obj, "_param_tensors") and hasattr(obj, "decisions")


def _is_module(obj):
    return isinstance(obj, Module)


def module_static_function(module, name="forward"):
    """The StaticFunction of ``module.<name>``; an unconverted method gets one for the
    export (the module itself is not changed)."""
    attr = getattr(module, name)
    if isinstance(attr, StaticFunction):
        return attr
    fn = getattr(attr, "__func__", None)
    if fn is None:
        raise TypeError(f"{type(module).__name__}.{name} is not a method")
    return StaticFunction(fn, instance=module)


def converted_methods(module):
    """``{name: StaticFunction}`` of every converted method of ``module`` (forward first)."""
    # converted per instance (``m.forward = to_static(m.forward)``, ``to_static(m)``) or per class
    names = [n for n, v in vars(module).items() if isinstance(v, StaticFunction)]
    for klass in type(module).__mro__:
        for name, value in vars(klass).items():
            if isinstance(value, StaticFunction) and name not in names:
                names.append(name)
    if "forward" in names:
        names.remove("forward")
        names.insert(0, "forward")
    return {n: getattr(module, n) for n in names}


def _user_outputs_only(entry):
    """The entry's program without the extra outputs that carry tensors a module's forward
    assigned to its own attributes (``self.last = h``): a saved model returns what the
    function returns."""
    program = entry.program
    extra = sum(len(w.tensors) for w in getattr(entry, "writes", ()))
    if not extra:
        return program
    program = program.clone()
    program.outputs = program.outputs[:len(program.outputs) - extra]
    program.block.outputs = list(program.outputs)
    return program


def from_static_function(sf, input_spec=None):
    """The Exported program of StaticFunction ``sf`` for ``input_spec`` (or its own spec, or
    its one cached program)."""
    specs = _spec_list(input_spec)
    if specs is None and sf.input_spec is not None:
        specs = _spec_list(list(sf.input_spec) if not isinstance(sf.input_spec, dict) else None)
    if specs is None:
        entries = sf.concrete_programs
        name = getattr(sf._fn, "__qualname__", "the function")
        if len(entries) != 1:
            raise ValueError(f"cannot tell which program of {name} to save: it has {len(entries)} cached "
                             "programs and no input_spec; pass input_spec=[d2s.jit.InputSpec([None, ...], "
                             "'float32', name='x'), ...] (None marks a dynamic dim)")
        entry = entries[0]
    else:
        entry = sf._entry(tuple(specs), {})[0]
    program = _user_outputs_only(entry)
    params = {n: to_host(t.array) for n, t in entry.params}
    tree = tree_of(entry.rebuild, len(program.outputs), entry.single)
    instance = sf._instance
    in_names = _input_names(specs, sf._fn, len(program.inputs), instance is not None)
    return Exported(program, params, in_names, output_names_of(tree, len(program.outputs)), tree,
                    _param_names(instance, entry.params), "to_static",
                    getattr(instance, "training", None))


def from_traced(tf, input_spec=None):
    program = tf.program
    params = {n: to_host(t.array) for n, t in tf._param_tensors.items()}
    tree = tree_of(tf._out_build, len(program.outputs))
    module = tf.eager if _is_module(tf.eager) else None
    fn = tf.eager.forward if module is not None else tf.eager
    n = len(program.inputs)
    names = _arg_names(fn, n, False) if len(tf._arg_tree[1]) == n else None
    specs = _spec_list(input_spec)
    if specs is not None:
        # a trace is fixed to its example's shapes: a spec may name the inputs, never widen them
        _check_trace_specs(program, specs)
        if all(getattr(s, "name", None) for s in specs) and len({s.name for s in specs}) == n:
            names = [s.name for s in specs]
    return Exported(program, params, names, output_names_of(tree, len(program.outputs)), tree,
                    _param_names(module, tf._param_tensors.items()), "trace",
                    getattr(module, "training", None))


def _check_trace_specs(program, specs):
    types = [program.block.lookup(v).type for v in program.inputs]
    if len(specs) != len(types):
        raise ValueError(f"input_spec has {len(specs)} spec(s) but the traced program takes {len(types)} input(s) "
                         f"({', '.join(map(str, types))})")
    for k, (s, t) in enumerate(zip(specs, types)):
        shape = tuple(None if d is None or d == -1 else int(d) for d in s.shape)
        if shape != tuple(t.shape) or str(s.dtype) != t.dtype:
            raise ValueError(f"input_spec #{k} ({s}) does not match the traced input {t}: a trace is fixed to the "
                             "shapes and dtypes of its example inputs; re-trace with that shape, or save a "
                             "d2s.jit.to_static function for dynamic dims (InputSpec with None)")


def program_and_params(obj, input_spec=None, params=None):
    """An :class:`Exported` for ``obj`` (see the module docstring); unpacks as
    ``program, params``."""
    from d2s_runtime.ir import Program
    if isinstance(obj, Exported):
        return obj
    if isinstance(obj, Program):
        arrays = {k: to_host(v.array) if isinstance(v, Tensor) else np.asarray(v) for k, v in (params or {}).items()}
        specs = _spec_list(input_spec)
        names = [s.name for s in specs] if specs and all(getattr(s, "name", None) for s in specs) else \
            list(obj.inputs)
        return Exported(obj, arrays, names)
    if _is_traced(obj):
        return from_traced(obj, input_spec)
    if _is_static_function(obj):
        return from_static_function(obj, input_spec)
    if _is_module(obj):
        return from_static_function(module_static_function(obj), input_spec)
    if callable(obj):
        sf = to_static(obj)
        if not _is_static_function(sf):
            raise TypeError(f"cannot export {obj!r}: it is marked not_to_static")
        if input_spec is None:
            raise ValueError(f"exporting the plain function {getattr(obj, '__qualname__', obj)} needs "
                             "input_spec=[d2s.jit.InputSpec(shape, dtype), ...]")
        return from_static_function(sf, input_spec)
    raise TypeError(f"cannot save or export a {type(obj).__name__}: pass a to_static function or module, "
                    "a traced function, a Python function with input_spec, or a Program")
