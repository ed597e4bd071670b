"""Program passes (``d2s.passes.optimize``): re-exported from the runtime, where they live so a
deployed model can be optimized without d2s."""
from d2s_runtime.passes import (DEFAULT_PIPELINE, PASSES, algebraic_simplify, constant_folding, cse, dce,  # noqa: F401
                                memory_plan, optimize, planned_peak)

__all__ = ["optimize", "constant_folding", "cse", "dce", "algebraic_simplify", "memory_plan", "planned_peak",
           "PASSES", "DEFAULT_PIPELINE"]
