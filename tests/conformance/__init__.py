"""A conformance corpus for ``d2s.jit.to_static``: small functions in the style of real code,
grouped by theme, each run eagerly and converted on several inputs (every branch, zero-trip
loops, Python and tensor values). ``tests/jit/test_conformance.py`` runs them all.

Each theme module registers its functions with ``@case(...)`` (see ``harness.py``);
``all_cases()`` imports every theme and returns the registry.
"""
import importlib

THEMES = ("conditionals", "loops", "returns", "closures", "containers", "pythonic", "scalars",
          "modules", "ops", "builtins_and_indexing")


def all_cases():
    from .harness import REGISTRY
    for theme in THEMES:
        importlib.import_module(f"{__name__}.{theme}")
    return dict(REGISTRY)
