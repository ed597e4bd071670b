"""``torch.nn.parallel``'s name training scripts import: ``DistributedDataParallel`` is d2s's
MPI data parallel (:mod:`d2s.distributed`), loaded when first asked for."""
import importlib

__all__ = ["DistributedDataParallel"]


def __getattr__(name):
    if name == "DistributedDataParallel":
        return importlib.import_module("d2s.distributed").DistributedDataParallel
    raise AttributeError(f"module 'd2s.nn.parallel' has no attribute {name!r}")
