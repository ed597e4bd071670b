"""Training utilities: activation checkpointing and graph memory accounting."""
from .checkpoint import checkpoint, checkpoint_sequential, saved_tensor_bytes

__all__ = ["checkpoint", "checkpoint_sequential", "saved_tensor_bytes"]


def __getattr__(name):
    # ``d2s.utils.data`` without importing it first, as ``torch.utils.data`` works after ``import torch``
    if name == "data":
        import importlib
        return importlib.import_module("d2s.utils.data")
    raise AttributeError(f"module 'd2s.utils' has no attribute {name!r}")
