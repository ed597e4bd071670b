"""Global switches of ``d2s.jit``, plain module attributes: ``d2s.jit.config.strict = True``."""

# When True, a to_static function whose source cannot be read (a lambda, code typed into a
# REPL or built by exec) raises instead of running eagerly with a warning, as if every
# to_static call had been given ``fallback=False``.
strict = False
