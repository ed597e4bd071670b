"""Program passes: pure named functions ``Program -> Program`` (inputs are never mutated).

* ``constant_folding``: computes constant subexpressions once; regroups ``x*c1*c2``.
* ``cse``: merges identical ops.
* ``dce``: removes ops nothing reads (keeps effects).
* ``algebraic_simplify``: identities that keep every value's bits; ``algebraic_reassociate`` (not in
  the default pipeline): also matmuls of broadcasts and sums of matmuls as reductions.
* ``memory_plan``: a buffer-reuse plan the executor follows; reports planned peak memory.
* the loop passes (``merge_loops``, ``loop_residuals``, ...) and their ``scan`` counterparts
  (``merge_scans``, ``scan_residuals``, ``scan_matmul_sums``, ``scan_transposes``): a loop
  gradient's forward computed once, its weight gradients one product after the loop (the
  matmul sums only in ``REASSOCIATING_PIPELINE``: they regroup float sums).

``optimize(program, passes=None)`` runs :data:`DEFAULT_PIPELINE` (or the given passes, as
functions or names) and returns a new program. The analyses the passes share that other code
reads too (the d2s side's replay, reach flags and training split) are public here: ``is_effect``,
``needed_ops``, ``Namer``, ``constant_op_value``.
"""
from ..gc_pause import paused_gc
from ._util import Namer, constant_op_value, is_effect, needed_ops
from .algebraic import algebraic_reassociate, algebraic_simplify
from .constant_folding import constant_folding
from .cse import cse
from .dce import dce
from .loop_invariants import loop_invariants
from .loop_matmul_sums import loop_matmul_sums
from .loop_residuals import loop_residuals
from .loop_transposes import loop_transposes
from .merge_loops import merge_loops
from .memory_plan import memory_plan, planned_peak
from .merge_scans import merge_scans
from .scan_matmul_sums import scan_matmul_sums
from .scan_residuals import scan_residuals
from .scan_transposes import scan_transposes

PASSES = {f.__name__: f for f in (constant_folding, cse, dce, algebraic_simplify, algebraic_reassociate,
                                   memory_plan, merge_loops,
                                   loop_residuals, loop_matmul_sums, loop_transposes, loop_invariants, merge_scans,
                                   scan_residuals, scan_matmul_sums, scan_transposes)}
PASSES["algebraic"] = algebraic_simplify

# Why this order: simplification first turns autograd's zeros_like/ones_like idioms into fulls
# and constants, which folding then computes; a second simplification sees the folded
# constants (x*1 and broadcast-of-scalar matmuls); CSE merges the reductions the rewrites
# create; once a gradient's replayed forward loop is merged into the forward's own loop
# (``merge_loops`` matches carries by position, so it comes before any carry is dropped), DCE
# drops what nothing reads, loop carries included, before the other loop passes work on them;
# the loop passes make a loop gradient's work one product after the loop and show
# what its loops hold fixed, which a last simplification uses (x*1 inside the loop), and a last CSE reads each stack
# once after the loop; DCE
# drops what all of them left dead; the memory plan is made on the final program. The scan
# passes (a recurrent layer's gradient) sit beside their ``while`` counterparts, for the same reasons.
#
# Every pass of DEFAULT_PIPELINE keeps each value's bits (a converted call returns exactly what
# eager code returns). REASSOCIATING_PIPELINE adds the rewrites that regroup float sums for
# speed, whose results differ in their last bits: a loop's weight gradient as one product
# after the loop (``loop_matmul_sums``, ``scan_matmul_sums``; an LSTM training step takes
# about 13% less CPU) and sums of matmuls as reductions (``algebraic_reassociate``).
# ``d2s.jit.config.reassociate = True`` makes converted programs use it.
DEFAULT_PIPELINE = (algebraic_simplify, constant_folding, algebraic_simplify, cse, merge_loops, merge_scans, dce,
                    loop_residuals, scan_residuals, cse, loop_transposes,
                    scan_transposes, loop_invariants, algebraic_simplify, cse, constant_folding, dce, memory_plan)
REASSOCIATING_PIPELINE = (algebraic_reassociate, constant_folding, algebraic_reassociate, cse, merge_loops, merge_scans,
                          dce, loop_residuals, scan_residuals, cse, loop_matmul_sums, scan_matmul_sums,
                          loop_transposes, scan_transposes, loop_invariants, algebraic_reassociate, cse,
                          constant_folding, dce, memory_plan)


def optimize(program, passes=None):
    """Return an optimized copy of ``program``.

    Args:
        program: the Program (left unchanged).
        passes: pass functions or names (see ``PASSES``); default :data:`DEFAULT_PIPELINE`.
    """
    pipeline = DEFAULT_PIPELINE if passes is None else passes
    p = program
    with paused_gc():  # passes allocate many long-lived objects: see gc_pause.py
        for ps in pipeline:
            if isinstance(ps, str) and ps not in PASSES:
                raise KeyError(f"unknown pass {ps!r}; passes: {', '.join(sorted(PASSES))}")
            fn = PASSES[ps] if isinstance(ps, str) else ps
            p = fn(p)
    if p is program:
        p = program.clone()
    return p


__all__ = ["optimize", "constant_folding", "cse", "dce", "algebraic_simplify", "algebraic_reassociate", "memory_plan",
           "planned_peak",
           "merge_loops", "loop_residuals", "loop_matmul_sums", "loop_transposes", "loop_invariants",
           "merge_scans", "scan_residuals", "scan_matmul_sums", "scan_transposes", "PASSES", "DEFAULT_PIPELINE",
           "REASSOCIATING_PIPELINE",
           "is_effect", "needed_ops", "Namer", "constant_op_value"]
