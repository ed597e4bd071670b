"""Random draws: ``rand``, ``randn``, ``randint``, the ``*_like`` forms, ``randperm``,
``multinomial``, ``bernoulli``, ``normal``, and the generators (``manual_seed``,
:class:`Generator`, ``default_generator``) (runtime: ``d2s_runtime/ops/random.py``).

Every function takes ``generator=`` (a :class:`Generator`; the shared generator when left
out). Eager code and converted code draw through the same kernels from the same generator, so
after the same seed they give the same numbers; a program's backward replays its forward's
draws. The numbers are not PyTorch's stream (d2s draws with numpy's generators); their
distributions are PyTorch's. None of them is exported to ONNX (a model takes its noise as an
input there).
"""
import builtins
import json

import numpy as np

from d2s_runtime.ops.random import RNG, Generator as _RuntimeGenerator, manual_seed as _runtime_seed

from .._state import STATE
from ..autograd.registry import grad_rule, non_differentiable
from ..dispatch import apply
from ..dtypes import as_dtype, default_float
from ..onnx.registry import onnx_unsupported
from ..tensor import Tensor, tensor, tensor_method
from .creation import _creation, _device, _no_out, _sizes, full, zeros_like
from .shape import broadcast_to
from ._util import _as_tensor, _is_diff, _is_symbolic, _shape_arg

_RANDOM_REASON = "random draws have no ONNX form that reproduces d2s's generator; pass the noise as an input"


# ------------------------------------------------------------------ generators
class Generator(_RuntimeGenerator):
    """A random generator of its own, as ``torch.Generator``: pass it as ``generator=`` to
    any random function (eagerly or in converted code) to draw from it instead of the shared
    generator.

    Args:
        device: 'cpu' (or 'gpu'/'cuda': draws on that device use it too).
    """

    def __init__(self, device="cpu"):
        super().__init__()
        self.device = _device(device) or "cpu"

    def get_state(self):
        """The generator's state as a uint8 tensor (for :meth:`set_state`)."""
        return tensor(np.frombuffer(self.get_state_bytes(), dtype=np.uint8))

    def set_state(self, new_state):
        """Restore a state from :meth:`get_state`; returns the generator."""
        return self.set_state_bytes(_state_bytes(new_state))

    def __repr__(self):
        return f"<d2s.Generator seed={self.initial_seed()} device={self.device!r}>"


class _DefaultGenerator:
    """The shared generator behind every random function (``d2s.default_generator``)."""

    key = None
    device = "cpu"

    def manual_seed(self, seed):
        """Reseed the shared generator (eager draws and programs alike); returns it. ``seed`` is
        an int in PyTorch's range, up to 2**64 - 1 (negative ones wrap, as in PyTorch)."""
        s = int(seed)
        if not -(2 ** 63) <= s < 2 ** 64:
            raise RuntimeError(f"manual_seed: seed {seed} is out of range [-2**63, 2**64 - 1]")
        _runtime_seed(s % 2 ** 64)
        return self

    def seed(self):
        """Reseed from fresh entropy; returns the new seed."""
        RNG.seed(None)
        return RNG.initial_seed

    def initial_seed(self):
        """The seed the shared generator was last seeded with."""
        return RNG.initial_seed

    def get_state(self):
        """The shared generator's state as a uint8 tensor (for :meth:`set_state`)."""
        with RNG.lock:
            state = {k: v for k, v in RNG.state().items() if "#" not in k}
        return tensor(np.frombuffer(json.dumps(state).encode(), dtype=np.uint8))

    def set_state(self, new_state):
        """Restore a state from :meth:`get_state`; returns the generator."""
        try:
            state = json.loads(_state_bytes(new_state).decode())
            if not isinstance(state, dict):
                raise ValueError("not a dict")
            with RNG.lock:
                RNG.set_state({k: v for k, v in state.items() if "#" not in k})
        except (ValueError, TypeError, KeyError, UnicodeDecodeError) as e:
            raise ValueError(f"set_rng_state: not a state from get_rng_state ({e})") from None
        return self

    def __repr__(self):
        return "<d2s.default_generator>"


def _state_bytes(state):
    arr = state.numpy() if isinstance(state, Tensor) else np.asarray(state)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise ValueError(f"a generator state is a 1-d uint8 tensor (from get_state), got {arr.dtype}{arr.shape}")
    return arr.tobytes()


default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Make d2s's random ops (eager and in programs) repeatable; returns ``default_generator``."""
    return default_generator.manual_seed(seed)


def seed():
    """Reseed the shared generator from fresh entropy; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the shared generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The shared generator's state, a uint8 tensor (``torch.get_rng_state``)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the shared generator's state from :func:`get_rng_state`."""
    default_generator.set_state(new_state)


def _gen(generator):
    """The ``generator`` attr of a random op: None (shared) or the Generator's key."""
    if generator is None or isinstance(generator, _DefaultGenerator):
        return None
    if not isinstance(generator, _RuntimeGenerator):
        raise TypeError(f"generator= must be a d2s.Generator, got {type(generator).__name__}")
    return generator.key


def _drawn(name, shape, dtype, device, requires_grad, generator, dist, a=0.0, b=1.0, **attrs):
    """A random creation op of ``shape``: the op ``name`` when the shape is known, else the
    same draws (``random_like`` of ``dist``) shaped by a fill with the program's dims."""
    dt = str(as_dtype(dtype))
    if builtins.any(_is_symbolic(d) for d in shape):
        out = apply("random_like", full(shape, 0, dtype=dt), dist=dist, a=a, b=b, dtype=dt, generator=_gen(generator))
        return out.requires_grad_(True) if requires_grad else out
    if builtins.any(d < 0 for d in shape):
        raise ValueError(f"{name}: negative dimension in size {list(shape)}")
    return _creation(name, device, requires_grad, shape=shape, dtype=dt, generator=_gen(generator), **attrs)


# ------------------------------------------------------------------ rand, randn, randint
def rand(*shape, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """Uniform draws in [0, 1) of the given size (as for ``d2s.zeros``), of the default float
    dtype unless given."""
    _no_out("rand", out)
    return _drawn("rand", _sizes("rand", shape, size), dtype or default_float(), device, requires_grad, generator,
                  "uniform")


def randn(*shape, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    """Standard normal draws of the given size (as for ``d2s.zeros``)."""
    _no_out("randn", out)
    return _drawn("randn", _sizes("randn", shape, size), dtype or default_float(), device, requires_grad, generator,
                  "normal")


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False):
    """Random integers in ``[low, high)`` (``randint(high, size)`` or ``randint(low, high,
    size)``), int64 unless ``dtype`` says otherwise; the bounds may be 0-d tensors, also
    symbolic ones inside a program (drawn between the values they have when it runs)."""
    _no_out("randint", out)
    if size is None:  # randint(high, size)
        if high is None:
            raise TypeError("randint: missing the size (randint(high, size) or randint(low, high, size))")
        if not isinstance(high, (list, tuple)):
            # PyTorch refuses randint(4, 7) too: numpy's randint(low, high) reads it otherwise
            raise TypeError(f"randint: the size must be a tuple of ints, got {high!r}: randint(high, size) or "
                            f"randint(low, high, size), e.g. d2s.randint({low!r}, {high!r}, ()) for one number")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    dtype = str(as_dtype(dtype or "int64"))
    shape = _shape_arg(size if isinstance(size, (list, tuple)) else [size])
    if _is_symbolic(low) or _is_symbolic(high) or builtins.any(_is_symbolic(d) for d in shape):
        if builtins.any(_is_symbolic(d) for d in shape):
            like = full(shape, 0, dtype="int64")
            lo, hi = (int(v) for v in (low, high))  # symbolic bounds with a symbolic size: not supported
            return apply("random_like", like, dist="integers", a=lo, b=hi, dtype=dtype, generator=_gen(generator))
        return apply("randint_dyn", apply("cast", low, dtype="int64"), apply("cast", high, dtype="int64"),
                     shape=shape, dtype=dtype, generator=_gen(generator))
    if STATE.tracer is not None and (isinstance(low, Tensor) or isinstance(high, Tensor)):
        return apply("randint_dyn", apply("cast", low, dtype="int64"), apply("cast", high, dtype="int64"),
                     shape=shape, dtype=dtype, generator=_gen(generator))
    low, high = int(low), int(high)
    if low >= high:
        raise ValueError(f"randint: low ({low}) must be less than high ({high})")
    return _creation("randint", device, requires_grad, shape=shape, low=low, high=high, dtype=dtype,
                     generator=_gen(generator))


non_differentiable("rand", "randn", "randint", "randint_dyn", "randperm", "randperm_dyn", "multinomial",
                   "random_like", reason="a random draw carries no gradient")
onnx_unsupported("rand", "randn", "randint", "randint_dyn", "randperm", "randperm_dyn", "multinomial", "bernoulli",
                 "normal", "random_like", reason=_RANDOM_REASON)


def _like(op, input, dtype, device, requires_grad, generator, dist, a=0.0, b=1.0):
    x = _as_tensor(input)
    dt = x.dtype if dtype is None else dtype
    if x.is_symbolic:
        out = apply("random_like", x, dist=dist, a=a, b=b, dtype=str(as_dtype(dt)), generator=_gen(generator))
        return out.requires_grad_(True) if requires_grad else out
    if dist == "integers":
        return randint(a, b, list(x.shape), generator=generator, dtype=dt, device=device or x.device,
                       requires_grad=requires_grad)
    return (rand if dist == "uniform" else randn)(list(x.shape), generator=generator, dtype=dt,
                                                    device=device or x.device, requires_grad=requires_grad)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
              generator=None):
    """Uniform draws in [0, 1) shaped like ``input`` (its dtype and device unless given)."""
    return _like("rand_like", input, dtype, device, requires_grad, generator, "uniform")


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
               generator=None):
    """Standard normal draws shaped like ``input`` (its dtype and device unless given)."""
    return _like("randn_like", input, dtype, device, requires_grad, generator, "normal")


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False,
                 memory_format=None, generator=None):
    """Random integers in ``[low, high)`` shaped like ``input`` (``randint_like(x, high)``
    or ``randint_like(x, low, high)``), of its dtype unless given."""
    if high is None:
        low, high = 0, low
    if int(low) >= int(high):
        raise ValueError(f"randint_like: low ({low}) must be less than high ({high})")
    return _like("randint_like", input, dtype, device, requires_grad, generator, "integers", int(low), int(high))


# ------------------------------------------------------------------ randperm
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """A random permutation of ``0 .. n-1`` (int64 unless given); ``n`` may be a symbolic 0-d
    tensor inside a program (``d2s.randperm(x.size(0))``)."""
    _no_out("randperm", out)
    dt = str(as_dtype(dtype or "int64"))
    if _is_symbolic(n):
        return apply("randperm_dyn", apply("cast", n, dtype="int64"), dtype=dt, generator=_gen(generator))
    n = int(n)
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    return _creation("randperm", device, requires_grad, n=n, dtype=dt, generator=_gen(generator))


# ------------------------------------------------------------------ multinomial, bernoulli, normal
@tensor_method()
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Category indices drawn from the (unnormalized, non-negative) weights in each row of
    ``input`` (1-d: one distribution; 2-d: one per row), ``num_samples`` per row, with or
    without replacement; int64, as ``torch.multinomial``."""
    _no_out("multinomial", out)
    return apply("multinomial", _as_tensor(input), num_samples=int(num_samples), replacement=bool(replacement),
                 generator=_gen(generator))


@tensor_method()
def bernoulli(input, p=None, *, generator=None, out=None):
    """1 with probability ``input`` (element-wise), else 0, in ``input``'s dtype; with ``p``
    (a float), every element is 1 with probability ``p``."""
    _no_out("bernoulli", out)
    x = _as_tensor(input)
    if p is not None:
        return apply("random_like", x, dist="bernoulli", a=float(p), dtype=str(x.dtype), generator=_gen(generator))
    return apply("bernoulli", x, generator=_gen(generator))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """Normal draws (``torch.normal``): ``normal(mean, std)`` with a tensor mean and/or std
    (broadcast together), or ``normal(mean, std, size)`` with numbers."""
    _no_out("normal", out)
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal: with a number mean and std, give the size (normal(mean, std, size))")
        if float(std) < 0:
            raise ValueError(f"normal: std must be >= 0, got {std}")
        shape = _shape_arg(size if isinstance(size, (list, tuple)) else [size])
        like = full(shape, 0, dtype=dtype or default_float(), device=device)
        out = apply("random_like", like, dist="normal", a=float(mean), b=float(std), generator=_gen(generator))
        return out.requires_grad_(True) if requires_grad else out
    ref = mean if isinstance(mean, Tensor) else std
    if not ref.dtype.is_floating_point:
        raise TypeError(f"normal: mean and std must be floating point tensors, got {ref.dtype}")
    mean = mean if isinstance(mean, Tensor) else tensor(float(mean), dtype=ref.dtype)
    std = std if isinstance(std, Tensor) else tensor(float(std), dtype=ref.dtype)
    return apply("normal", mean, std, generator=_gen(generator))


@grad_rule("normal")
def _normal_grad(ctx, g):
    # PyTorch's: the draws do not depend on mean and std (no reparameterization gradient)
    return tuple(zeros_like(x) if _is_diff(x) else None for x in ctx.inputs)


@grad_rule("bernoulli")
def _bernoulli_grad(ctx, g):
    # PyTorch's: zero
    return (zeros_like(ctx.inputs[0]) if _is_diff(ctx.inputs[0]) else None,)


# ------------------------------------------------------------------ in-place fills (d2s/inplace.py)
def _drawn_like(s, dist, a, b, generator):
    """Draws of ``dist`` shaped like ``s``, of its dtype (``uniform_``, ``normal_``, ...)."""
    return apply("random_like", s, dist=dist, a=a, b=b, dtype=str(s.dtype), generator=_gen(generator))


def _bernoulli_values(s, p, generator):
    """``s.bernoulli_(p)``: 1 with probability ``p`` (a number, or a tensor broadcast to s)."""
    if isinstance(p, Tensor):
        probs = broadcast_to(p if p.dtype.is_floating_point else p.cast(default_float()), list(s.shape))
        return apply("bernoulli", probs, generator=_gen(generator)).cast(s.dtype)
    return _drawn_like(s, "bernoulli", float(p), 0.0, generator)


def _random_values(s, *bounds, generator=None, **kw):
    """``s.random_()``, ``s.random_(to)``, ``s.random_(from, to)``: integers in ``[from, to)``
    (by default up to the largest integer s's dtype holds exactly, as PyTorch)."""
    low, high = kw.pop("from", 0), kw.pop("to", None)
    if kw:
        raise TypeError(f"random_: unexpected keywords {sorted(kw)}; use random_(from, to)")
    if len(bounds) == 1:
        high = bounds[0]
    elif len(bounds) == 2:
        low, high = bounds
    elif bounds:
        raise TypeError("random_: takes at most two bounds (random_(from, to))")
    if high is None:
        dt = str(s.dtype)
        high = 2 if dt == "bool" else 2 ** np.finfo(dt).nmant + 1 if s.dtype.is_floating_point else \
            int(np.iinfo(dt).max) + 1
    if int(low) >= int(high):
        raise ValueError(f"random_: expects from ({low}) < to ({high})")
    return _drawn_like(s, "integers", int(low), int(high), generator)
