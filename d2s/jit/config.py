"""Settings of ``d2s.jit``: plain module attributes, read when they matter.

    import d2s
    d2s.jit.config.cache_size_limit = 32
    d2s.jit.config.strict = True

``cache_size_limit``: the most programs one StaticFunction keeps (per function, and per module
instance for a module's forward), like PyTorch's recompile limit (``torch._dynamo.config.
cache_size_limit``, also 8). A function that needs more builds warns once, naming the
argument dims that keep changing and suggesting an ``InputSpec`` with ``None`` there, then
drops its least recently used program for each new one. ``None`` means no limit.
"""

cache_size_limit = 8

# When True, a to_static function whose source cannot be read (a lambda, code typed into a
# REPL or built by exec) raises instead of running eagerly with a warning, as if every
# to_static call had been given ``fallback=False``.
strict = False

# The backend of programs built from now on, for to_static functions given no ``backend=``:
# "python" (the code generator), "native" (numba-compiled in the background, swapped in when
# ready) or "auto" (native where numba is installed and the program is supported). See the
# documentation's page on the native backend (docs/native.md).
backend = "python"

# When True, programs optimized from now on may regroup float sums for speed (the runtime's
# REASSOCIATING_PIPELINE): a loop's weight gradients summed as one matrix product after the loop
# (an LSTM training step: about 13% less CPU), sums of matmuls computed as reductions. Their
# results then differ from eager code's in the last bits; by default (False) a converted call
# returns exactly what the eager call returns.
reassociate = False

# A `for` over a `range` of Python ints longer than this becomes one loop op (a `while` whose
# counter stands for the Python int) when its body allows it: tensors that keep their shapes,
# the counter used only in tensor code (docs/to_static/generation.md). Shorter loops, and
# bodies that need the counter as a Python value, unroll. None: every Python loop unrolls.
unroll_threshold = 8
