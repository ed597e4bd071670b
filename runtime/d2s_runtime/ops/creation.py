"""Primitives with no tensor inputs: constants, fills, ranges, random draws."""
import contextlib
import threading

import numpy as np

from ..dtypes import normalize
from .registry import ShapeError, TensorType, deflowering, defop


class _RNG:
    """The one random generator shared by eager ops and programs, per array namespace.

    Thread safety: every random kernel draws under ``lock`` (reentrant), so a caller holding
    it (a program run whose draws a later backward must replay) sees no other thread's draws
    between its :meth:`state` snapshot and its own draws. :meth:`replaying` makes the calling
    thread alone draw from private copies of a snapshot, leaving the shared generators (and
    other threads) untouched.
    """

    def __init__(self):
        self.lock = threading.RLock()
        self._local = threading.local()
        self.seed(None)

    def seed(self, seed):
        with self.lock:
            self._seed = seed
            self._gens = {}
            self._namespaces = {}  # key -> xp, to rebuild a generator a restore brings back
            self._device_seed = seed  # where a device generator made on first use starts

    def get(self, xp):
        key = xp.__name__
        replay = getattr(self._local, "replay", None)
        if replay is not None:
            return replay.get(key, xp)
        if key not in self._gens:
            self._gens[key] = np.random.default_rng(self._seed) if xp is np else _DeviceDraws(xp, self._device_seed)
            self._namespaces[key] = xp
        return self._gens[key]

    def state(self):
        """A snapshot of every generator's state (for replaying the same draws later)."""
        self.get(np)  # exists from now on, so a restore replays its draws rather than reseeding
        if self._device_seed is None:  # a device generator made later must start where its replay will
            self._device_seed = int(np.random.default_rng().integers(0, 2 ** 62))
        out = {_DEVICE_SEED: self._device_seed}
        for key, gen in list(self._gens.items()):
            out[key] = gen.bit_generator.state
        return out

    def set_state(self, state):
        """Restore a :meth:`state` snapshot; generators created since then start afresh."""
        for key in list(self._gens):
            if key not in state:
                del self._gens[key]
        self._device_seed = state.get(_DEVICE_SEED, self._device_seed)
        for key, st in state.items():
            gen = self._gens.get(key)
            if gen is None and key in self._namespaces:  # dropped by an earlier restore
                xp = self._namespaces[key]
                gen = self._gens[key] = np.random.default_rng() if xp is np else _DeviceDraws(xp, None)
            if gen is not None:
                gen.bit_generator.state = st

    @contextlib.contextmanager
    def replaying(self, state):
        """Within: this thread's random ops draw from fresh copies of the generators as they
        were at ``state`` (a :meth:`state` snapshot), the same values again; the shared
        generators do not move and other threads are not affected."""
        prev = getattr(self._local, "replay", None)
        self._local.replay = _Replay(state)
        try:
            yield
        finally:
            self._local.replay = prev


class _DeviceDraws:
    """Random draws on a device (cupy) whose generator state cannot be read or restored
    (cuRAND's): each draw uses a device generator seeded from a host numpy generator, whose
    state is therefore the whole state. Snapshots and replays work as on numpy, and eager code
    and a program draw the same values after the same ``manual_seed``."""

    def __init__(self, xp, seed):
        self._xp, self._host = xp, np.random.default_rng(seed)

    @property
    def bit_generator(self):
        return self._host.bit_generator

    def _device(self):
        return self._xp.random.RandomState(int(self._host.integers(0, 2 ** 31)))

    def random_sample(self, size):
        return self._device().random_sample(size)

    def standard_normal(self, size):
        return self._device().standard_normal(size)

    def randint(self, low, high, size):
        return self._device().randint(low, high, size=size)


class _Replay:
    """Private generators rebuilt from a snapshot, made on first use per array namespace."""

    def __init__(self, state):
        self.state, self.gens = state, {}

    def get(self, key, xp):
        gen = self.gens.get(key)
        if gen is None:
            st = self.state.get(key)
            gen = np.random.default_rng() if xp is np else _DeviceDraws(xp, self.state.get(_DEVICE_SEED))
            if st is not None:
                gen.bit_generator.state = st
            self.gens[key] = gen
        return gen


# the key of a snapshot's seed for device generators made after it
_DEVICE_SEED = "<device seed>"


RNG = _RNG()


def manual_seed(seed):
    """Make every random op (eager and in programs) repeatable from ``seed``."""
    RNG.seed(int(seed))


def _fill_infer(shape, value=0.0, dtype="float32"):
    return TensorType(shape, dtype)


defop("full", _fill_infer, doc="An array of ``shape`` filled with ``value``.", fresh=True)(
    lambda xp, shape, value=0.0, dtype="float32": xp.full(tuple(shape), value, dtype=normalize(dtype)))


def _full_like_infer(x, value=0.0, dtype=None):
    return TensorType(x.shape, dtype or x.dtype)


@defop("full_like", _full_like_infer, fresh=True)
def _full_like(xp, x, value=0.0, dtype=None):
    """An array shaped like x (whose values are never read) filled with ``value``: the way to
    make zeros/ones when x's shape is only known when the program runs."""
    return xp.full(x.shape, value, dtype=normalize(dtype) if dtype else x.dtype)


def _arange_infer(start, stop, step=1, dtype="int64"):
    n = max(0, int(np.ceil((stop - start) / step)))
    return TensorType((n,), dtype)


defop("arange", _arange_infer, doc="Evenly spaced values in ``[start, stop)`` by ``step``.")(
    lambda xp, start, stop, step=1, dtype="int64": xp.arange(start, stop, step, dtype=normalize(dtype)))


def _linspace_infer(start, stop, num, dtype="float32"):
    return TensorType((num,), dtype)


defop("linspace", _linspace_infer, doc="``num`` evenly spaced values from ``start`` to ``stop`` (included).")(
    lambda xp, start, stop, num, dtype="float32": xp.linspace(start, stop, num, dtype=normalize(dtype)))


def _eye_infer(n, m=None, dtype="float32"):
    return TensorType((n, n if m is None else m), dtype)


defop("eye", _eye_infer, doc="An ``n`` x ``m`` matrix with ones on the diagonal.")(
    lambda xp, n, m=None, dtype="float32": xp.eye(n, m, dtype=normalize(dtype)))


def _random_infer(shape, dtype="float32", **_):
    return TensorType(shape, dtype)


@defop("rand", _random_infer, random=True)
def _rand(xp, shape, dtype="float32"):
    """Uniform draws in ``[0, 1)`` from the shared generator."""
    with RNG.lock:
        gen = RNG.get(xp)
        draw = getattr(gen, "random", None) or gen.random_sample  # numpy Generator / cupy RandomState
        out = draw(tuple(shape))
    return out.astype(normalize(dtype), copy=False)


@defop("randn", _random_infer, random=True)
def _randn(xp, shape, dtype="float32"):
    """Standard normal draws from the shared generator."""
    with RNG.lock:
        out = RNG.get(xp).standard_normal(tuple(shape))
    return out.astype(normalize(dtype), copy=False)


@defop("randint", _random_infer, random=True)
def _randint(xp, shape, low=0, high=2, dtype="int64"):
    """Uniform integer draws in ``[low, high)`` from the shared generator."""
    with RNG.lock:
        gen = RNG.get(xp)
        draw = gen.integers if xp is np else gen.randint
        out = draw(low, high, size=tuple(shape))
    return out.astype(normalize(dtype), copy=False)


# Creation with sizes known only when the program runs (``d2s.zeros([x.shape[0], 2])`` or
# ``d2s.arange(n)`` on symbolic values): the unknown sizes are 0-d integer inputs.
def _full_dims_infer(*dims, shape, value=0.0, dtype="float32"):
    return TensorType([None if d == -1 else d for d in shape], dtype)


@defop("full_dims", _full_dims_infer)
def _full_dims(xp, *dims, shape, value=0.0, dtype="float32"):
    """``full`` whose -1 entries of ``shape`` are read, in order, from the inputs."""
    it = iter(dims)
    return xp.full(tuple(int(next(it)) if d == -1 else d for d in shape), value, dtype=normalize(dtype))


def _random_dims_infer(*dims, shape, dtype="float32"):
    return TensorType([None if d == -1 else d for d in shape], dtype)


def _dims(dims, shape):
    it = iter(dims)
    return [int(next(it)) if d == -1 else d for d in shape]


@defop("rand_dims", _random_dims_infer, random=True)
def _rand_dims(xp, *dims, shape, dtype="float32"):
    """``rand`` whose -1 entries of ``shape`` are read, in order, from the inputs."""
    return _rand(xp, _dims(dims, shape), dtype)


@defop("randn_dims", _random_dims_infer, random=True)
def _randn_dims(xp, *dims, shape, dtype="float32"):
    """``randn`` whose -1 entries of ``shape`` are read, in order, from the inputs."""
    return _randn(xp, _dims(dims, shape), dtype)


def _arange_dyn_infer(start, stop, step, dtype="int64"):
    return TensorType((None,), dtype)


@defop("arange_dyn", _arange_dyn_infer)
def _arange_dyn(xp, start, stop, step, dtype="int64"):
    """``arange`` over 0-d inputs (bounds only known when the program runs)."""
    return xp.arange(start.item() if hasattr(start, "item") else start, stop.item() if hasattr(stop, "item") else stop,
                     step.item() if hasattr(step, "item") else step, dtype=normalize(dtype))


def _randint_dyn_infer(low, high, shape, dtype="int64"):
    for name, t in (("low", low), ("high", high)):
        if t.ndim != 0:
            raise ShapeError(f"randint: {name} must be a scalar (a 0-d tensor), got shape {t.shape}")
    return TensorType(shape, dtype)


@defop("randint_dyn", _randint_dyn_infer, random=True)
def _randint_dyn(xp, low, high, shape, dtype="int64"):
    """``randint`` whose bounds are 0-d inputs (known only when the program runs)."""
    low, high = int(low), int(high)
    if low >= high:
        raise ValueError(f"randint: low ({low}) must be less than high ({high})")
    return _randint(xp, shape, low=low, high=high, dtype=dtype)


@deflowering("full", "native")
def _full_native(e, shape, value=0.0, dtype="float32"):
    return e.fill(value)


@deflowering("full_like", "native")
def _full_like_native(e, x, value=0.0, dtype=None):
    return e.fill(value, shape_of=x)
