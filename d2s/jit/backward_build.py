"""Building the backward program of a to_static program.

The backward program takes the forward inputs, then one gradient per differentiable
(floating) forward output, reads the forward params, and returns the gradients w.r.t. the
chosen inputs and params. ``d2s.static.backward.gradients`` builds it from the forward
program itself (its ops replayed with autograd on, so the eager gradient rules append the
backward ops). If that fails for a program, the converted function is run once more on
symbolic inputs that require grad and ``d2s.grad`` is applied to its symbolic outputs: the
same rules, reached through Python instead of the program. Either way the forward is
recomputed inside the backward program.
"""
from d2s_runtime.gc_pause import paused_gc

from ..autograd import enable_grad
from ..autograd.engine import grad as _grad
from ..ops import zeros_like
from ..static import backward as static_backward  # (a module: tests replace gradients in it)
from ..static.builder import ProgramBuilder


def _type_of(t):
    if t.is_symbolic:
        return t._var.type.shape, t._var.type.dtype
    return tuple(t.array.shape), t.array.dtype.name


def build_backward(entry, in_mask, par_mask):
    """``(program, {backward param name: forward param index, or the Parameter itself})``.

    Uses ``d2s.static.backward.gradients`` (the program's own ops replayed, no Python rerun)
    when it handles the program, and re-runs the converted function otherwise."""
    with paused_gc():  # building allocates many long-lived objects: see d2s_runtime/gc_pause.py
        return _build_backward(entry, in_mask, par_mask)


def _build_backward(entry, in_mask, par_mask):
    prog = entry.program
    wrt = [n for n, m in zip(prog.inputs, in_mask) if m] + [n for n, m in zip(prog.params, par_mask) if m]
    try:
        bwd = static_backward.gradients(prog, wrt)
    except Exception as e:  # noqa: BLE001 - fall back to rebuilding from the Python function
        _warn_fallback(prog, e)
    else:
        index = {n: i for i, (n, _) in enumerate(entry.params)}
        return bwd, {n: index[n] for n in bwd.params}
    return build_by_retrace(entry, in_mask, par_mask)


def _warn_fallback(prog, err):
    import warnings
    warnings.warn(f"d2s.jit: d2s.static.backward could not differentiate program {prog.name!r} "
                  f"({type(err).__name__}: {err}); building its backward from the Python function instead",
                  RuntimeWarning, stacklevel=5)


def build_by_retrace(entry, in_mask, par_mask):
    """The backward program by running the converted function again with grad on."""
    builder = ProgramBuilder(entry.device)
    with builder, enable_grad():
        sym_in, outs = entry.retrace(builder, in_mask)
        float_outs = [o for o, f in zip(outs, entry.out_float) if f]
        grad_ins = [builder.add_input(*_type_of(o), name=None) for o in float_outs]
        targets = [s for s, m in zip(sym_in, in_mask) if m]
        for (_, t), m in zip(entry.params, par_mask):
            if m:
                targets.append(builder.param(t))
        roots = [(o, g) for o, g in zip(float_outs, grad_ins) if o.requires_grad]
        if roots and targets:
            grads = _grad([o for o, _ in roots], targets, grad_outputs=[g for _, g in roots],
                          allow_unused=True)
        else:
            grads = [None] * len(targets)
        grads = [zeros_like(t) if g is None else g for g, t in zip(grads, targets)]
        outputs = [builder.var_of(g) for g in grads]
    program = builder.program
    program.outputs = outputs
    program.block.outputs = list(outputs)
    fwd_index = {id(t): i for i, (_, t) in enumerate(entry.params)}
    param_src = {n: fwd_index.get(id(t), t) for n, t in builder.param_tensors.items()}
    return program, param_src
