"""Seeding every random source at once, as ``torch.manual_seed`` does.

d2s draws every random number (random ops eagerly and in programs, on the CPU and the GPU,
``nn.init``, dropout, ``DataLoader`` shuffling) from one generator per device
(``d2s_runtime.ops.RNG``), so :func:`manual_seed` makes all of them repeatable.
"""
import numpy as np

from d2s_runtime.ops import RNG

from .ops.creation import manual_seed as _seed_every_generator

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "default_generator"]

_INITIAL = [None]  # the seed given last (manual_seed or seed), None until one is


class _DefaultGenerator:
    """The generator behind d2s's random ops (``d2s.default_generator``), as the object
    ``torch.manual_seed`` returns: ``manual_seed``, ``seed``, ``initial_seed``,
    ``get_state``/``set_state``."""

    device = "cpu"

    def manual_seed(self, seed):
        return manual_seed(seed)

    def seed(self):
        return seed()

    def initial_seed(self):
        return initial_seed()

    def get_state(self):
        return get_rng_state()

    def set_state(self, state):
        set_rng_state(state)
        return self

    def __repr__(self):
        return "<d2s default generator>"


default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seed every random source of d2s (eager and program random ops, CPU and GPU, ``nn.init``,
    dropout, data loader shuffling) with ``seed``; returns ``d2s.default_generator``.

    Args:
        seed: an int (PyTorch's range, up to 2**64 - 1; negative values wrap as in PyTorch).
    """
    s = int(seed)
    if s < -(2 ** 63) or s >= 2 ** 64:
        raise RuntimeError(f"manual_seed: seed {seed} is out of range [-2**63, 2**64 - 1]")
    s %= 2 ** 64
    _seed_every_generator(s)
    _INITIAL[0] = s
    return default_generator


def seed():
    """Seed every random source with a fresh non-deterministic seed; returns it."""
    s = int(np.random.SeedSequence().entropy % (2 ** 63))
    manual_seed(s)
    return s


def initial_seed():
    """The seed given last to :func:`manual_seed` or :func:`seed` (one is drawn, and used, if
    none was given yet)."""
    if _INITIAL[0] is None:
        seed()
    return _INITIAL[0]


def get_rng_state():
    """A snapshot of the random generators (for :func:`set_rng_state`)."""
    return RNG.state()


def set_rng_state(state):
    """Restore a snapshot of :func:`get_rng_state`: the same draws follow again."""
    RNG.set_state(state)
