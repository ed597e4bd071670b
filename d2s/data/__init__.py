"""Data loading (``d2s.data``): datasets and an asynchronous, prefetching ``DataLoader``."""
from .dataset import Dataset, TensorDataset
from .loader import DataLoader, default_collate

__all__ = ["Dataset", "TensorDataset", "DataLoader", "default_collate"]
