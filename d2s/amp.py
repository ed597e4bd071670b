"""``d2s.amp``: PyTorch's mixed-precision entry points, as training scripts call them.

``GradScaler`` is PyTorch's loss scaling, step for step: ``scale`` multiplies the loss by the
scale (2**16 at first), ``unscale_``/``step`` divide the gradients by it and skip the
optimizer's step when one of them is inf or NaN, ``update`` halves the scale after such a step
and doubles it after ``growth_interval`` clean ones. With ``enabled=False`` every method passes
through, so ``GradScaler(enabled=use_amp)`` scripts run unchanged. As in PyTorch, a scaler for
``'cuda'`` on a machine without a GPU warns and disables itself.

``autocast`` runs ops in a lower precision in PyTorch. d2s computes every op in its inputs'
dtypes, so ``autocast(..., enabled=False)`` is accepted (and, as in PyTorch, an autocast for a
``'cuda'`` device without a GPU warns and does nothing); an enabled autocast on the CPU raises
instead of silently computing in float32: cast the model and its inputs (``model.half()``) or
pass ``enabled=False``.
"""
import functools
import warnings

import numpy as np

from . import devices as _devices, dtypes as _dtypes
from .tensor import Tensor, tensor

__all__ = ["GradScaler", "autocast", "is_autocast_available", "is_autocast_enabled"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


def _gpu():
    return _devices.available("gpu")  # (d2s.cuda.is_available's answer)


def is_autocast_enabled(device_type=None):
    """Whether an autocast region is active: never in d2s (see :class:`autocast`)."""
    return False


def is_autocast_available(device_type):
    """Whether ``autocast`` can run for ``device_type``: never in d2s (it computes in the
    tensors' own dtypes)."""
    return False


# PyTorch's autocast queries, with the answers PyTorch gives outside any autocast region (d2s
# never runs one): the default lower-precision dtypes, nothing enabled, the cast cache on
_AUTOCAST_DTYPES = {"cpu": "bfloat16", "xla": "bfloat16", "cuda": "float16", "gpu": "float16", "mps": "float16",
                    "xpu": "bfloat16", "hpu": "bfloat16"}
_NESTING = [0]


def get_autocast_dtype(device_type):
    """The dtype an autocast region for ``device_type`` would compute in, as
    ``torch.get_autocast_dtype``: bfloat16 on the CPU, float16 on a GPU."""
    if device_type not in _AUTOCAST_DTYPES:
        raise RuntimeError(f"get_autocast_dtype: unsupported device type {device_type!r}")
    return getattr(_dtypes, _AUTOCAST_DTYPES[device_type])


def get_autocast_cpu_dtype():
    """``torch.get_autocast_cpu_dtype()``: ``get_autocast_dtype('cpu')``."""
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """``torch.get_autocast_gpu_dtype()``: ``get_autocast_dtype('cuda')``."""
    return get_autocast_dtype("cuda")


def get_autocast_xla_dtype():
    """``torch.get_autocast_xla_dtype()``: ``get_autocast_dtype('xla')``."""
    return get_autocast_dtype("xla")


def is_autocast_cpu_enabled():
    """``torch.is_autocast_cpu_enabled()``: False (see :func:`is_autocast_enabled`)."""
    return False


def is_autocast_xla_enabled():
    """``torch.is_autocast_xla_enabled()``: False (see :func:`is_autocast_enabled`)."""
    return False


def is_autocast_cache_enabled():
    """``torch.is_autocast_cache_enabled()``: True, PyTorch's default (d2s caches no casts)."""
    return True


def clear_autocast_cache():
    """``torch.clear_autocast_cache()``: nothing to clear."""


def autocast_increment_nesting():
    """``torch.autocast_increment_nesting()``: the autocast nesting level, plus one."""
    _NESTING[0] += 1
    return _NESTING[0]


def autocast_decrement_nesting():
    """``torch.autocast_decrement_nesting()``: the autocast nesting level, minus one."""
    _NESTING[0] -= 1
    return _NESTING[0]


class autocast:
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context
    manager (and decorator) that is accepted when disabled, or for a GPU this machine lacks (a
    warning, as PyTorch gives), and refused when it would change the precision of the CPU ops."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        del cache_enabled  # (autocast's weight-cast cache: nothing to cache here)
        self.device_type, self.dtype = str(device_type), dtype
        self.enabled = bool(enabled)
        if self.enabled and self.device_type in ("cuda", "gpu") and not _gpu():
            warnings.warn(f"User provided device_type of '{self.device_type}', but CUDA is not available. "
                          "Disabling", UserWarning, stacklevel=2)
            self.enabled = False

    def __enter__(self):
        if self.enabled:
            raise NotImplementedError(
                f"d2s.autocast(device_type={self.device_type!r}, enabled=True): d2s computes every op in its "
                "inputs' dtypes and does not emulate PyTorch's autocast precision rules (its results would "
                "differ from PyTorch's). Cast the model and its inputs instead (model.half(), x.half()), or pass "
                "enabled=False")
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return run


class GradScaler:
    """``torch.amp.GradScaler``: dynamic loss scaling with PyTorch's rules and defaults.

    Args:
        device: ``'cuda'`` (PyTorch's default; disabled with a warning where there is no GPU)
            or ``'cpu'``.
        init_scale: the first scale.
        growth_factor: the scale's factor after ``growth_interval`` steps without inf/NaN.
        backoff_factor: the scale's factor after a step whose gradients held inf or NaN.
        growth_interval: clean steps between two growths.
        enabled: False makes every method pass through (``scale`` returns the loss).
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._enabled and self._device in ("cuda", "gpu") and not _gpu():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._scale = None  # float32 value, set at the first scale()
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}  # id(optimizer) -> {"stage": ..., "found_inf": bool}

    # ------------------------------------------------------------------ scaling
    def _scale_value(self):
        if self._scale is None:
            self._scale = np.float32(self._init_scale)
        return self._scale

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        s = self._scale_value()

        def apply(v):
            if isinstance(v, Tensor):
                return v * tensor(s, device=v.device)
            if isinstance(v, (list, tuple)):
                return type(v)(apply(x) for x in v)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": False})

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any of them
        holds inf or NaN (once per optimizer between two ``update``s)."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # PyTorch's inverse: the reciprocal in float64, rounded to float32 once
        inv = np.float32(1.0 / np.float64(self._scale_value()))
        found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                arr = g.array
                if arr.dtype == np.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                found = found or not bool(np.isfinite(arr).all())
                g.mul_(float(inv))
        state["found_inf"] = found
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless its (unscaled) gradients held inf or NaN; returns what
        the step returns, or None when it is skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        out = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return out

    def update(self, new_scale=None):
        """The next scale: ``new_scale`` if given, else backed off after a skipped step and grown
        after ``growth_interval`` clean ones."""
        if not self._enabled:
            return
        if new_scale is not None:
            value = new_scale.item() if hasattr(new_scale, "item") else new_scale
            self._scale = np.float32(value)
        else:
            if not self._per_optimizer:
                raise AssertionError("No inf checks were recorded prior to update.")
            s = self._scale_value()
            if any(st["found_inf"] for st in self._per_optimizer.values()):
                self._scale = np.float32(s * np.float32(self._backoff_factor))
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = np.float32(s * np.float32(self._growth_factor))
                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_optimizer = {}

    # ------------------------------------------------------------------ queries and state
    def get_scale(self):
        """The scale as a Python float (1.0 when disabled)."""
        return float(self._scale_value()) if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """PyTorch's keys (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        self._scale = np.float32(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
