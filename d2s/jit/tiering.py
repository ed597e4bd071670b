"""The runner of a converted program: the runtime's tier ladder (``d2s_runtime.tiers.TieredRunner``)
with d2s's passes as its optimization step, from the program's second call on."""
import warnings

from d2s_runtime.passes import REASSOCIATING_PIPELINE, optimize
from d2s_runtime.tiers import TieredRunner

from . import config


def optimized(program, what):
    """``optimize(program)`` (the runtime's passes) when it keeps the program's interface; the
    program unchanged otherwise (a failing pass must not break a working program). With
    ``config.reassociate``, the passes that regroup float sums run too."""
    try:
        out = optimize(program, passes=REASSOCIATING_PIPELINE if config.reassociate else None)
    except Exception as e:  # noqa: BLE001 - any pass failure: keep the unoptimized program
        warnings.warn(f"d2s.jit: optimizing the {what} program failed ({type(e).__name__}: {e}); "
                      "running it unoptimized", RuntimeWarning, stacklevel=4)
        return program
    if out is None or list(out.inputs) != list(program.inputs) or list(out.params) != list(program.params) \
            or len(out.outputs) != len(program.outputs):
        return program
    return out


def tiered(program, device, what, checked=False, optimize=True, backend="python"):
    """The :class:`~d2s_runtime.tiers.TieredRunner` of a converted program: its first run on the
    quick interpreter over the program as built, later runs optimized (``optimize``: the
    passes, see ``_optimize``) and compiled, natively where ``backend`` asks (a ``'native'``
    backend optimizes at once). A program run once (a one-off shape, a debugging call) never
    pays for the passes or the code generation, and the first call of a StaticFunction costs
    conversion, build and a quick preparation only. ``checked``: check the inputs of each run
    (inputs that no signature checked, such as output gradients)."""
    passes = (lambda p: optimized(p, what)) if optimize else None
    return TieredRunner(program, device, backend, optimize=passes, quick=optimize, checked=checked)
