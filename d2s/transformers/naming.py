"""Fresh names for generated code, unique against every name in the converted function."""
import gast


class Namer:
    """Hands out names that collide with nothing the user wrote (nor each other)."""

    def __init__(self, tree=None):
        self.taken = set()
        if tree is not None:
            for node in gast.walk(tree):
                if isinstance(node, gast.Name):
                    self.taken.add(node.id)
                elif isinstance(node, (gast.FunctionDef, gast.ClassDef)):
                    self.taken.add(node.name)

    def new(self, base):
        """A fresh name starting with ``base`` (``true_fn``, ``true_fn_1``, ...)."""
        candidate, n = base, 0
        while candidate in self.taken:
            n += 1
            candidate = f"{base}_{n}"
        self.taken.add(candidate)
        return candidate
