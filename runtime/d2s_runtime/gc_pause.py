"""``paused_gc()``: no cyclic garbage collection while a program is built, optimized or prepared.

Building a program allocates many small objects (ops, vars, attrs, autograd nodes) that stay
alive; Python's collector, triggered every few hundred allocations, then walks them all
again and again, which makes building a program of N ops cost about N^1.7 instead of N.
Pausing it for the duration (and collecting nothing extra afterwards: what is garbage is
found by the next ordinary collection) keeps the build linear.
"""
import contextlib
import gc


@contextlib.contextmanager
def paused_gc():
    """Disable the cyclic garbage collector inside the block (re-enabled after, if it was on)."""
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
