"""State made new in a child process after ``os.fork``.

A fork copies only the thread that called it. A lock that another thread held at that moment
stays held in the child forever, and a worker thread is gone while its queue and the jobs
promised to callers remain: the child's first program build, or its first native compile,
waited forever. Forks are common: multiprocessing's default start method on Linux, pre-fork
servers, data-loader workers. So every lock of d2s that threads share is a :func:`Lock` or
:func:`RLock` from here, renewed (free) in the child, and module-level state that a fork
breaks registers a reset with :func:`after_fork`.
"""
import os
import threading
import weakref

_LOCKS = weakref.WeakSet()
_RESETS = []


class _Renewable:
    """A lock (``threading.Lock`` or ``RLock``) that a forked child gets fresh and free."""

    __slots__ = ("_factory", "_lock", "__weakref__")

    def __init__(self, factory):
        self._factory = factory
        self._lock = factory()
        _LOCKS.add(self)

    def acquire(self, blocking=True, timeout=-1):
        return self._lock.acquire(blocking, timeout)

    def release(self):
        self._lock.release()

    def __enter__(self):
        return self._lock.__enter__()

    def __exit__(self, *exc):
        return self._lock.__exit__(*exc)

    def renew(self):
        self._lock = self._factory()


def Lock():
    """A ``threading.Lock`` that is free again in a forked child."""
    return _Renewable(threading.Lock)


def RLock():
    """A ``threading.RLock`` that is free again in a forked child."""
    return _Renewable(threading.RLock)


def after_fork(fn):
    """Register ``fn()`` to run in every child forked from now on, after the locks are renewed
    (a decorator; returns ``fn``)."""
    _RESETS.append(fn)
    return fn


def _in_child():
    for lock in list(_LOCKS):
        lock.renew()
    for fn in _RESETS:
        fn()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_child)
