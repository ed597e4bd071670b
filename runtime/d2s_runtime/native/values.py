"""What the native lowerings share that needs nothing of the op registry: the numpy type names
of the dtypes the backend lowers, its one-line refusal and the int check of attrs. Lowering
hooks beside the ops (``norm.py``, ``rows.py``, ...) import these from here, not from
``lower.py``, which imports the registry whose op modules import the hooks (an import cycle)."""
import numpy as np

NP_TYPE = {"float32": "np.float32", "float64": "np.float64", "int32": "np.int32", "int64": "np.int64",
           "bool": "np.bool_"}


class NativeUnsupported(Exception):
    """The program has something the native backend does not lower (one-line reason)."""


def _int(v, what):
    if type(v) is bool or not isinstance(v, (int, np.integer)):
        raise NativeUnsupported(f"{what} must be an int, got {type(v).__name__}")
    return int(v)
