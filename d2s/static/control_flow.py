"""Functional control flow: ``d2s.cond``, ``d2s.while_loop``, ``d2s.scan`` (``fori_loop``,
``switch`` and ``map`` are in ``structured``; ``d2s.lax`` gives JAX's signatures).

Each structured op has a family module holding its builder and every rule of its op on the d2s
side (replay, gradient, reach flags, ONNX form, sample call), as ``d2s/ops/<family>.py`` holds
a primitive's: ``conditionals`` (``cond``), ``while_loops`` (``while``), ``scans`` (``scan``).
They share ``cf_common`` (the vocabulary: errors, pytrees, traced blocks, captures),
``weak_types`` (Python numbers through control flow) and ``object_identity`` (tensor objects
updated in place through branches and loops). This module names the public builders.

Each builder is a public dispatcher with two halves (like AutoGraph's operators): with a
concrete predicate it is plain Python, so eager autograd sees the ops that ran; with a
symbolic predicate, inside a program being built, it builds a ``cond`` / ``while`` / ``scan``
op whose sub-blocks hold the traced functions (the layouts are documented in
``d2s_runtime/ops/control_flow.py``).
"""
from .cf_common import ControlFlowError, tree_flatten
from .conditionals import cond, static_cond
from .object_identity import alias_flag, alias_targets
from .scans import scan
from .while_loops import run_while, while_loop

__all__ = ["cond", "while_loop", "scan", "ControlFlowError", "tree_flatten", "static_cond", "run_while",
           "alias_flag", "alias_targets"]
