"""Static analysis of a function's AST: control-flow graph, activity (read/written names),
liveness and definedness. The control-flow transformers read its annotations to decide what
each branch and loop carries and which names may be undefined."""
from .liveness import analyze, Anno

__all__ = ["analyze", "Anno"]
