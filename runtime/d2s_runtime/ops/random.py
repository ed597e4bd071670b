"""Random draws: the generators (the shared one and :class:`Generator` objects) and every op
that draws from them (``random`` trait): rand, randn, randint, randperm, multinomial,
bernoulli, normal and ``random_like`` (the draws behind ``rand_like`` and the in-place
``uniform_``/``normal_``/... of a tensor).

A random op's ``generator`` attr is None (the shared generator) or the key of a
:class:`Generator` of this process. Eager code and a program draw through the same kernels
from the same generator state, so the same seed gives the same numbers in both. A saved
program run in another process, where that Generator does not exist, draws from the shared
generator. The kernels draw only uniform and standard normal numbers (and integers), which
device generators have too, and build every distribution from them.
"""
import contextlib
import json
import os
import threading
import weakref

import numpy as np

from .. import forksafe, philox
from ..dtypes import FLOATS, normalize
from .registry import ShapeError, TensorType, deflowering, defop
from .rules import broadcast_shapes, fmt_shape


class _RNG:
    """The generators shared by eager ops and programs: the default one (per array namespace)
    and every live :class:`Generator`.

    Thread safety: every random kernel draws under ``lock`` (reentrant), so a caller holding
    it (a program run whose draws a later backward must replay) sees no other thread's draws
    between its :meth:`state` snapshot and its own draws. :meth:`replaying` makes the calling
    thread alone draw from private copies of a snapshot, leaving the shared generators (and
    other threads) untouched.
    """

    def __init__(self):
        self.lock = forksafe.RLock()  # (free again in a forked child)
        self._local = threading.local()
        self.generators = weakref.WeakValueDictionary()  # key -> Generator
        self.seed(None)

    def seed(self, seed):
        """Reseed the default generator (None: from fresh entropy)."""
        with self.lock:
            self.initial_seed = int(np.random.SeedSequence().entropy % 2 ** 63) if seed is None else int(seed)
            self._seed = self.initial_seed % 2 ** 64
            self._gens = {}
            self._namespaces = {}  # key -> xp, to rebuild a generator a restore brings back
            self._device_seed = self._seed  # where a device generator made on first use starts

    def get(self, xp, generator=None):
        """The generator to draw from on namespace ``xp``: the default one, or Generator
        ``generator`` (a key; one this process does not have falls back to the default)."""
        g = None if generator is None else self.generators.get(generator)
        key = xp.__name__ if g is None else f"{xp.__name__}#{g.key}"
        replay = getattr(self._local, "replay", None)
        if replay is not None:
            return replay.get(key, xp)
        if g is not None:
            return g.draws(xp)
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
        for g in list(self.generators.values()):
            g.draws(np)
            for name, gen in list(g._gens.items()):
                out[f"{name}#{g.key}"] = gen.bit_generator.state
        return out

    def set_state(self, state):
        """Restore a :meth:`state` snapshot; generators created since then start afresh."""
        own = {k: v for k, v in state.items() if "#" not in k}
        for key in list(self._gens):
            if key not in own:
                del self._gens[key]
        self._device_seed = own.get(_DEVICE_SEED, self._device_seed)
        for key, st in own.items():
            gen = self._gens.get(key)
            if gen is None and key in self._namespaces:  # dropped by an earlier restore
                xp = self._namespaces[key]
                gen = self._gens[key] = np.random.default_rng() if xp is np else _DeviceDraws(xp, None)
            if gen is not None:
                gen.bit_generator.state = st
        for key, st in state.items():
            if "#" in key:
                name, gkey = key.split("#", 1)
                g = self.generators.get(int(gkey))
                if g is not None and name in g._gens:
                    g._gens[name].bit_generator.state = st

    @contextlib.contextmanager
    def graph_draws(self, hook):
        """Within: this thread's device draws take their counters from ``hook.words(stream,
        n)`` (a graph capture's: the offset in a device buffer, see ``gpu/rng.py``)."""
        prev = getattr(self._local, "graph", None)
        self._local.graph = hook
        try:
            yield
        finally:
            self._local.graph = prev

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
    """Random draws on a device: a counter-based stream (Philox4x32-10, ``philox.py``) whose
    state is a key and a counter offset, both host ints. A draw of n numbers is one
    element-wise computation over counters ``offset .. offset+n-1``, with no generator state on
    the device, so snapshots and replays work as on numpy (eager code and a program draw the
    same values after the same ``manual_seed``), and a captured graph draws the same stream with
    its offset in a device buffer (``gpu/rng.py``): graph mode draws what the Python backend
    would."""

    def __init__(self, xp, seed):
        self._xp = xp
        self.key = philox.key_of(np.random.SeedSequence().entropy if seed is None else seed)
        self.offset = 0

    @property
    def bit_generator(self):
        return self  # (snapshots read and write ``.state``, as of a numpy bit generator)

    @property
    def state(self):
        return {"philox4x32": [self.key[0], self.key[1]], "offset": self.offset}

    @state.setter
    def state(self, st):
        try:
            k0, k1 = (int(k) for k in st["philox4x32"])
            offset = int(st["offset"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a device generator state ({e!r})") from None
        self.key, self.offset = (k0 & 0xFFFFFFFF, k1 & 0xFFFFFFFF), offset

    def _words(self, n):
        hook = getattr(RNG._local, "graph", None)
        if hook is not None:  # inside a graph capture: the offset is the graph's device buffer
            return hook.words(self, n)
        w = philox.words(self._xp, self.key, self.offset, n)
        self.offset += n
        return w

    def random_sample(self, size):
        w = self._words(_size(size))
        return philox.uniform(self._xp, w[0], w[1]).reshape(tuple(size))

    def standard_normal(self, size):
        return philox.normal(self._xp, self._words(_size(size))).reshape(tuple(size))

    def randint(self, low, high, size):
        w = self._words(_size(size))
        return philox.integers(self._xp, w[0], w[1], low, high).reshape(tuple(size))


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


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


class Generator:
    """A random generator of its own (``torch.Generator``): random ops given it as
    ``generator=`` draw from it, eagerly and in programs, leaving the shared one alone.

    Args:
        seed: the initial seed (PyTorch's default seed when not given).
    """

    DEFAULT_SEED = 67280421310721  # torch.Generator()'s

    def __init__(self, seed=None):
        # a random key (48 bits: exact in JSON): a saved program naming this generator, run in
        # another process, finds no generator of that key there and draws from the shared one
        with RNG.lock:
            self.key = int.from_bytes(os.urandom(6), "big")
            while self.key in RNG.generators:
                self.key = int.from_bytes(os.urandom(6), "big")
        self.manual_seed(self.DEFAULT_SEED if seed is None else seed)
        RNG.generators[self.key] = self

    def manual_seed(self, seed):
        """Reseed; returns the generator."""
        with RNG.lock:
            self._initial = int(seed)
            self._gens = {}
            self._restore = {}
        return self

    def seed(self):
        """Reseed from fresh entropy; returns the new seed."""
        s = int(np.random.SeedSequence().entropy % 2 ** 63)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed the generator was last seeded with."""
        return self._initial

    def draws(self, xp):
        """This generator's draws on namespace ``xp`` (made from its seed on first use)."""
        gen = self._gens.get(xp.__name__)
        if gen is None:
            seed = self._initial % 2 ** 64
            gen = self._gens[xp.__name__] = np.random.default_rng(seed) if xp is np else _DeviceDraws(xp, seed)
            if xp.__name__ in self._restore:
                gen.bit_generator.state = self._restore.pop(xp.__name__)
        return gen

    def get_state_bytes(self):
        """The generator's state as bytes (JSON: loading it back never runs code)."""
        with RNG.lock:
            self.draws(np)
            states = {name: g.bit_generator.state for name, g in self._gens.items()}
        return json.dumps({"seed": self._initial, "states": states}).encode()

    def set_state_bytes(self, data):
        """Restore a state from :meth:`get_state_bytes`."""
        try:
            state = json.loads(bytes(data).decode())
            seed, states = int(state["seed"]), dict(state["states"])
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            raise ValueError(f"Generator.set_state: not a state from get_state ({e})") from None
        with RNG.lock:
            self.manual_seed(seed)
            for name, st in states.items():
                gen = np.random.default_rng() if name == "numpy" else _DeviceDraws(np, 0)
                try:
                    gen.bit_generator.state = st
                except (ValueError, TypeError, KeyError) as e:
                    raise ValueError(f"Generator.set_state: not a state from get_state ({e})") from None
                if name == "numpy":
                    self._gens[name] = gen
                else:  # a device's host generator: applied when the device draws next
                    self._restore[name] = st
        return self


def uniform_draws(xp, shape, generator):
    """``shape`` uniform numbers in [0, 1) from ``generator`` (None: the shared one), as every
    kernel here draws them (the native backend's sampling draws through it too)."""
    gen = RNG.get(xp, generator)
    draw = getattr(gen, "random", None) or gen.random_sample  # numpy Generator / cupy RandomState
    return draw(tuple(shape))


def _draw_normal(xp, shape, generator):
    return RNG.get(xp, generator).standard_normal(tuple(shape))


def _draw_integers(xp, low, high, shape, generator):
    gen = RNG.get(xp, generator)
    draw = gen.integers if xp is np else gen.randint
    return draw(low, high, size=tuple(shape))


# ------------------------------------------------------------------ rand, randn, randint
def _random_infer(shape, dtype="float32", **_):
    return TensorType(shape, dtype)


@defop("rand", _random_infer, random=True)
def _rand(xp, shape, dtype="float32", generator=None):
    """Uniform draws in ``[0, 1)``."""
    with RNG.lock:
        out = uniform_draws(xp, shape, generator)
    return out.astype(normalize(dtype), copy=False)


@defop("randn", _random_infer, random=True)
def _randn(xp, shape, dtype="float32", generator=None):
    """Standard normal draws."""
    with RNG.lock:
        out = _draw_normal(xp, shape, generator)
    return out.astype(normalize(dtype), copy=False)


@defop("randint", _random_infer, random=True)
def _randint(xp, shape, low=0, high=2, dtype="int64", generator=None):
    """Uniform integer draws in ``[low, high)``."""
    if low >= high:
        raise ValueError(f"randint: low ({low}) must be less than high ({high})")
    with RNG.lock:
        out = _draw_integers(xp, low, high, shape, generator)
    return out.astype(normalize(dtype), copy=False)


def _randint_dyn_infer(low, high, shape, dtype="int64", generator=None):
    for name, t in (("low", low), ("high", high)):
        if t.ndim != 0:
            raise ShapeError(f"randint: {name} must be a scalar (a 0-d tensor), got shape {t.shape}")
    return TensorType(shape, dtype)


@defop("randint_dyn", _randint_dyn_infer, random=True)
def _randint_dyn(xp, low, high, shape, dtype="int64", generator=None):
    """``randint`` whose bounds are 0-d inputs (known only when the program runs)."""
    return _randint(xp, shape, low=int(low), high=int(high), dtype=dtype, generator=generator)


# ------------------------------------------------------------------ randperm
def _randperm_infer(n, dtype="int64", generator=None):
    return TensorType((n,), dtype)


def _permutation(xp, n, generator):
    # the order of uniform draws: the same on every array namespace's generator
    with RNG.lock:
        keys = uniform_draws(xp, (n,), generator)
    return xp.argsort(keys, kind="stable")


@defop("randperm", _randperm_infer, random=True)
def _randperm(xp, n, dtype="int64", generator=None):
    """A random permutation of ``0 .. n-1``."""
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    return _permutation(xp, int(n), generator).astype(normalize(dtype), copy=False)


def _randperm_dyn_infer(n, dtype="int64", generator=None):
    if n.ndim != 0 or not n.dtype.startswith("int"):
        raise ShapeError(f"randperm: n must be a 0-d integer tensor, got {n}")
    return TensorType((None,), dtype)


@defop("randperm_dyn", _randperm_dyn_infer, random=True)
def _randperm_dyn(xp, n, dtype="int64", generator=None):
    """``randperm`` of an ``n`` known only when the program runs."""
    return _randperm(xp, int(n), dtype=dtype, generator=generator)


# ------------------------------------------------------------------ multinomial
def _multinomial_infer(p, num_samples, replacement=False, generator=None):
    if p.ndim not in (1, 2):
        raise ShapeError(f"multinomial: probabilities must be 1-d or 2-d, got {fmt_shape(p.shape)}")
    if p.dtype not in FLOATS:
        raise ShapeError(f"multinomial: probabilities must be floating point, got {p.dtype}")
    k = p.shape[-1]
    if num_samples <= 0:
        raise ShapeError(f"multinomial: num_samples must be positive, got {num_samples}")
    if not replacement and k is not None and num_samples > k:
        raise ShapeError(f"multinomial: cannot draw {num_samples} samples without replacement from {k} categories")
    return TensorType(p.shape[:-1] + (num_samples,), "int64")


@defop("multinomial", _multinomial_infer, random=True)
def _multinomial(xp, p, num_samples, replacement=False, generator=None):
    """Category indices drawn from each row of (unnormalized) probabilities ``p``: with
    replacement by the inverse CDF, without by the exponential race (``E_i / p_i`` smallest
    first, which is sequential weighted sampling without replacement)."""
    w = p.astype("float64").reshape(-1, p.shape[-1])
    rows, k = w.shape
    if xp is np:
        # the same two checks in four ufunc reductions: the smallest weight is not >= 0 where
        # one is NaN or negative, the largest is inf where one is
        if w.size and not (np.minimum.reduce(w, axis=None) >= 0 and np.maximum.reduce(w, axis=None) < np.inf):
            raise ValueError("multinomial: probability tensor contains either inf, nan or element < 0")
        if rows and np.minimum.reduce(np.add.reduce(w, axis=1), axis=None) <= 0:
            raise ValueError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if xp is not np and w.size and (not bool(xp.isfinite(w).all()) or bool((w < 0).any())):
        raise ValueError("multinomial: probability tensor contains either inf, nan or element < 0")
    if xp is not np and rows and bool((w.sum(axis=1) <= 0).any()):
        raise ValueError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and num_samples > k:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from {k} categories")
    with RNG.lock:
        u = uniform_draws(xp, (rows, num_samples if replacement else k), generator)
    if replacement:
        cdf = xp.cumsum(w, axis=1)
        cdf = cdf / cdf[:, -1:]
        # each row's CDF shifted by its row number: one sorted array for all rows
        offsets = xp.arange(rows, dtype="float64")[:, None]
        flat = (cdf + offsets).reshape(-1)
        idx = xp.searchsorted(flat, (u + offsets).reshape(-1), side="right").reshape(rows, num_samples)
        idx = idx - (xp.arange(rows) * k)[:, None]
        last = k - 1 - xp.argmax((w > 0)[:, ::-1], axis=1)  # rounding never picks a category of weight 0
        out = xp.minimum(idx, last[:, None])
    else:
        with np.errstate(divide="ignore"):
            keys = -xp.log1p(-u) / w  # Exp(1) / p; weight 0: never before a positive one
        if num_samples == 1 and not bool(xp.isnan(keys).any()):
            # the first of a stable ascending sort is the first smallest key: argmin's pick
            # (a NaN key, 0 / 0, sorts last but argmin would pick it: sorted then)
            out = xp.argmin(keys, axis=1)[:, None]
        else:
            out = xp.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    return out.astype("int64").reshape(p.shape[:-1] + (num_samples,))


@deflowering("multinomial", "native")
def _multinomial_native(e, p, num_samples, replacement=False, generator=None):
    """The kernel's draws and arithmetic (``_lib.multinomial_rows``), the uniform numbers taken
    from the shared generator as the kernel takes them; another Generator stays on Python."""
    if generator is not None or p.ndim not in (1, 2) or type(num_samples) is not int:
        e.unsupported("multinomial from a Generator of its own")
    l = e._l
    p = l.array(p)
    ind = l.indent
    w, out, res = l.fresh(), l.fresh(), l.fresh()
    l.emit(ind, f"{w} = np.ascontiguousarray({p.name}.astype(np.float64)).reshape((-1, {p.name}.shape[{p.ndim - 1}]))")
    if not replacement:
        l.emit(ind, f"if {num_samples} > {w}.shape[1]: raise ValueError('multinomial: cannot draw more samples "
                    f"without replacement than there are categories')")
    l.emit(ind, f"{out} = L.multinomial_rows({w}, {num_samples}, {bool(replacement)})")
    lead = f"{p.name}.shape[0], " if p.ndim == 2 else ""
    l.emit(ind, f"{res} = {out}.reshape(({lead}{num_samples},))")
    return l.new_array(res, "int64", tuple(e.out.shape))


_multinomial_native.draws_in_order = True  # (the lowerer keeps an effect op only with this mark)


# ------------------------------------------------------------------ bernoulli, normal
def _bernoulli_infer(p, generator=None):
    if p.dtype not in FLOATS:
        raise ShapeError(f"bernoulli: probabilities must be floating point, got {p.dtype}")
    return TensorType(p.shape, p.dtype)


@defop("bernoulli", _bernoulli_infer, random=True)
def _bernoulli(xp, p, generator=None):
    """1 with probability ``p`` (element-wise), else 0, in ``p``'s dtype."""
    if p.size and (bool((p < 0).any()) or bool((p > 1).any()) or not bool(xp.isfinite(p).all())):
        raise ValueError("bernoulli: probabilities must lie in [0, 1]")
    with RNG.lock:
        u = uniform_draws(xp, p.shape, generator)
    return (u < p).astype(p.dtype)


def _normal_infer(mean, std, generator=None):
    shape = broadcast_shapes("normal", mean.shape, std.shape)
    dtype = mean.dtype if mean.dtype in FLOATS else std.dtype if std.dtype in FLOATS else None
    if dtype is None:
        raise ShapeError(f"normal: mean or std must be floating point, got {mean.dtype} and {std.dtype}")
    if mean.dtype in FLOATS and std.dtype in FLOATS and mean.dtype != std.dtype:
        dtype = max(mean.dtype, std.dtype, key=FLOATS.index)
    return TensorType(shape, dtype)


@defop("normal", _normal_infer, random=True)
def _normal(xp, mean, std, generator=None):
    """Normal draws of mean ``mean`` and standard deviation ``std`` (broadcast together)."""
    dtype = normalize(_normal_infer(TensorType(mean.shape, mean.dtype.name), TensorType(std.shape, std.dtype.name)).dtype)
    if std.size and bool((std < 0).any()):
        raise ValueError("normal: std must be >= 0")
    shape = np.broadcast_shapes(mean.shape, std.shape)
    with RNG.lock:
        z = _draw_normal(xp, shape, generator)
    return (mean + std * z).astype(dtype, copy=False)


# ------------------------------------------------------------------ random_like
DISTRIBUTIONS = ("uniform", "normal", "exponential", "geometric", "bernoulli", "integers", "cauchy", "log_normal")


def _random_like_infer(x, dist, a=0.0, b=1.0, dtype=None, generator=None):
    if dist not in DISTRIBUTIONS:
        raise ShapeError(f"random_like: unknown distribution {dist!r}; one of {', '.join(DISTRIBUTIONS)}")
    return TensorType(x.shape, dtype or x.dtype)


@defop("random_like", _random_like_infer, random=True, fresh=True)
def _random_like(xp, x, dist, a=0.0, b=1.0, dtype=None, generator=None):
    """Draws shaped like ``x`` (whose values are never read), of ``dtype`` (x's by default):
    ``uniform`` in [a, b), ``normal`` of mean a and std b, ``exponential`` of rate a,
    ``geometric`` of success probability a (values 1, 2, ...), ``bernoulli`` of probability
    a, ``integers`` in [a, b), ``cauchy`` of median a and scale b, ``log_normal`` whose log
    has mean a and std b."""
    dt = normalize(dtype) if dtype else x.dtype
    shape = x.shape
    with RNG.lock:
        if dist == "normal" or dist == "log_normal":
            z = _draw_normal(xp, shape, generator)
        elif dist == "integers":
            return _draw_integers(xp, int(a), int(b), shape, generator).astype(dt, copy=False)
        else:
            u = uniform_draws(xp, shape, generator)
    if dist == "uniform":
        out = a + (b - a) * u
    elif dist == "normal":
        out = a + b * z
    elif dist == "log_normal":
        out = xp.exp(a + b * z)
    elif dist == "exponential":
        out = -xp.log1p(-u) / a
    elif dist == "geometric":
        out = xp.floor(xp.log1p(-u) / np.log1p(-a)) + 1 if a < 1 else xp.ones(shape)
    elif dist == "bernoulli":
        out = u < a
    else:  # cauchy
        out = a + b * xp.tan(np.pi * (u - 0.5))
    return out.astype(dt, copy=False)
