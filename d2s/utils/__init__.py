"""Training utilities: activation checkpointing and graph memory accounting."""
from .checkpoint import checkpoint, checkpoint_sequential, saved_tensor_bytes

__all__ = ["checkpoint", "checkpoint_sequential", "saved_tensor_bytes"]
