"""``d2s.utils.data``: where PyTorch keeps its data loading (``torch.utils.data``), so
``from torch.utils.data import DataLoader`` runs with its import changed. The same objects as
:mod:`d2s.data`."""
from ..data import *  # noqa: F401,F403
from ..data import __all__  # noqa: F401
