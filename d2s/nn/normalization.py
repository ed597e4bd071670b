"""Normalization layers with PyTorch's constructor arguments, parameter and buffer names, and
train/eval behaviour: ``BatchNorm1d``/``2d``/``3d``, ``InstanceNorm1d``/``2d``/``3d``,
``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``LocalResponseNorm``.

Running statistics are buffers updated in place in training mode, as PyTorch updates them.
Inside ``to_static`` the update is part of the program: the new values are extra results of
the program, written into the same buffer objects after each call (the buffer update path of
``d2s.inplace.call_inplace``), so a converted model trains exactly as the eager one.
"""
from d2s_runtime.device import get_xp

from . import _functional_norm as FN
from . import init
from ._param import default_float, new_parameter
from .module import Buffer, Module
from .._state import STATE
from ..autograd import no_grad
from ..dtypes import as_dtype
from ..inplace import call_inplace
from ..tensor import get_default_device


def _store(module, name, value):
    """Write ``value`` into buffer ``name`` in place (eagerly), or, while a program is built, make
    it the program's update of the buffer: ``call_inplace`` then returns the new value, which
    to_static writes into the buffer after each call. It shadows the buffer as an instance
    attribute (later reads in this forward see it; to_static removes it after the build), so
    the buffer keeps its place in the registry and the state_dict's order stays PyTorch's."""
    if STATE.tracer is not None and STATE.builder is None:
        raise RuntimeError(
            f"{type(module).__name__} in training mode under d2s.jit.trace: its running statistics ({name}) are "
            "buffers a traced program cannot update. Call model.eval() before tracing, or convert with "
            "d2s.jit.to_static, whose programs update them after each call")
    with no_grad():
        buf = getattr(module, name)
        new = call_inplace(buf, "copy_", True, (value,), {})
        if new is not buf:
            module.__dict__[name] = new


def _new_buffer(shape, value, dtype, device):
    xp = get_xp(device if device is not None else get_default_device())
    return Buffer(xp.full(shape, value, dtype=str(as_dtype(dtype))))


def _affine_params(module, shape, affine, bias, dtype, device):
    """A normalization's ``weight`` (ones) and ``bias`` (zeros) of ``shape`` when ``affine``
    (``bias=False``: no bias), registered as None otherwise, as PyTorch's layers do."""
    if affine:
        module.weight = init.ones_(new_parameter(shape, dtype, device))
        if bias:
            module.bias = new_parameter(shape, dtype, device)
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module, affine):
    if affine:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


class _NormBase(Module):
    """Shared by BatchNorm and InstanceNorm: ``weight``/``bias`` (ones/zeros) when ``affine``;
    ``running_mean``/``running_var``/``num_batches_tracked`` buffers when ``track_running_stats``."""

    # a checkpoint older than PyTorch 0.4.1 (or a plain dict without PyTorch's _metadata) may
    # have no num_batches_tracked: the module keeps its own, as in PyTorch
    _version_2_buffers = ("num_batches_tracked",)

    _expected_dims = None  # input ranks the layer accepts (batched)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dtype = default_float(dtype)
        _affine_params(self, (self.num_features,), affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", _new_buffer((self.num_features,), 0, dtype, device))
            self.register_buffer("running_var", _new_buffer((self.num_features,), 1, dtype, device))
            self.register_buffer("num_batches_tracked", _new_buffer((), 0, "int64", device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self, self.affine)

    def _check_input_dim(self, x):
        nd = x.ndim
        if self._expected_dims is not None and nd not in self._expected_dims:
            want = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(f"{type(self).__name__}: expected {want} input (got {nd}D input)")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        if self.training:
            out, mean, var = FN.batch_norm_train(input, self.weight, self.bias, self.eps, type(self).__name__)
            if self.track_running_stats:
                self._update_running_stats(mean, var)
            return out
        if self.running_mean is None or self.running_var is None:  # track_running_stats=False
            return FN.batch_norm_train(input, self.weight, self.bias, self.eps, type(self).__name__)[0]
        return FN.batch_norm_eval(input, self.running_mean, self.running_var, self.weight, self.bias, self.eps)

    def _update_running_stats(self, mean, var):
        with no_grad():
            count = self.num_batches_tracked + 1
            _store(self, "num_batches_tracked", count)
            # momentum None: a cumulative average, 1 / (batches seen so far)
            factor = 1.0 / count.cast(mean.dtype) if self.momentum is None else float(self.momentum)
            _store(self, "running_mean", FN.running_average(self.running_mean, mean, factor))
            _store(self, "running_var", FN.running_average(self.running_var, var, factor))


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs, as ``torch.nn.BatchNorm1d``.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: running statistics ``(1 - momentum) * running + momentum * batch``; None
            keeps a cumulative average.
        affine: learn ``weight`` (ones) and ``bias`` (zeros).
        track_running_stats: keep ``running_mean``, ``running_var`` and
            ``num_batches_tracked``, used in eval mode; without them batch statistics are used
            in both modes.
    """

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs, as ``torch.nn.BatchNorm2d`` (arguments as
    :class:`BatchNorm1d`)."""

    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) inputs, as ``torch.nn.BatchNorm3d``."""

    _expected_dims = (5,)


class _InstanceNorm(_NormBase):
    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        nd = input.ndim
        name = type(self).__name__
        if nd not in (self._spatial + 1, self._spatial + 2):
            raise ValueError(f"{name}: expected {self._spatial + 1}D (unbatched) or {self._spatial + 2}D (batched) "
                             f"input (got {nd}D input)")
        unbatched = nd == self._spatial + 1
        x = input.unsqueeze(0) if unbatched else input
        c = x.shape[1]
        if self.affine and isinstance(c, int) and c != self.num_features:
            raise ValueError(f"{name}: expected input's size at dim=1 to match num_features ({self.num_features}), "
                             f"but got: {c}")
        if self.training or not self.track_running_stats:
            out, mean, var = FN.instance_norm_train(x, self.weight, self.bias, self.eps)
            if self.track_running_stats:
                momentum = self.momentum if self.momentum is not None else 0.0
                with no_grad():
                    _store(self, "running_mean", FN.running_average(self.running_mean, mean, momentum))
                    _store(self, "running_var", FN.running_average(self.running_var, var, momentum))
        else:
            out = FN.batch_norm_eval(x, self.running_mean, self.running_var, self.weight, self.bias, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or (C, L) inputs, as ``torch.nn.InstanceNorm1d``
    (``affine`` and ``track_running_stats`` default to False)."""

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or (C, H, W) inputs, as ``torch.nn.InstanceNorm2d``."""

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or (C, D, H, W) inputs, as ``torch.nn.InstanceNorm3d``."""

    _spatial = 3


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims, as ``torch.nn.LayerNorm``; learnable
    ``weight`` (ones) and ``bias`` (zeros; ``bias=False`` drops it) when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        dtype = default_float(dtype)
        _affine_params(self, self.normalized_shape, elementwise_affine, bias, dtype, device)

    def reset_parameters(self):
        _reset_affine(self, self.elementwise_affine)

    def forward(self, input):
        return FN.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalize over groups of ``num_channels / num_groups`` channels (and the spatial dims),
    as ``torch.nn.GroupNorm``; per-channel ``weight`` (ones) and ``bias`` (zeros) when ``affine``."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("GroupNorm: num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = int(num_groups), int(num_channels), eps, affine
        dtype = default_float(dtype)
        _affine_params(self, (self.num_channels,), affine, bias, dtype, device)

    def reset_parameters(self):
        _reset_affine(self, self.affine)

    def forward(self, input):
        return FN.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims, as
    ``torch.nn.RMSNorm`` (``eps=None``: the machine epsilon of the input's dtype)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = init.ones_(new_parameter(self.normalized_shape, default_float(dtype), device))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        return FN.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Local response normalization across channels, as ``torch.nn.LocalResponseNorm``."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return FN.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


