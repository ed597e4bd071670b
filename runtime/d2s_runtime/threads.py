"""How many threads matrix products use: as many as the machine has free.

A BLAS splits a product into one share per thread, fixed when the product starts, and waits
for every share. On a machine whose cores other processes also use, a share handed to a thread
that is not running waits for the scheduler to give it a core (milliseconds), and threads
waiting for the next product spin on cores the other processes want. Measured on this
project's 2-core machine with one busy process beside it (issue 26): the native MLP training
step of ``benchmarks/bench_native.py`` went from 1.73 ms alone to 10.9-11.0 ms on 2 MKL
threads, 6.3 times slower for half the cores; ``jax.jit``, whose thread pool lets any free
thread take the next piece of work, went from 2.90 to 3.3-3.4 ms.

So before a native program that computes products runs, :func:`govern` looks at the machine
(at most every ``INTERVAL`` seconds, else it costs one clock read): the CPU time all processes
spent since its last look (``/proc/stat``) minus this process's own is what the other processes
used, in cores (after a pause of more than ``STALE`` seconds: the threads runnable at that
instant, ``procs_running``, this one aside); the products then run on
``floor(cores - others + SLACK)`` threads, at least
one and at most the count MKL had when first asked (``MKL_NUM_THREADS``/``OMP_NUM_THREADS``).
With one busy process beside it on 2 cores a step runs on one thread, which has a core to
itself, and slows by about the CPU share it lost; on an idle machine nothing changes.

MKL computes a product's elements alike on any number of threads (checked on the workloads'
shapes: ``tests/runtime/test_threads.py``). numpy's OpenBLAS does not for every shape, so the
products of eager code and of the Python backend (``blas.py``) take :func:`free`'s count only for
shapes checked to compute alike on it. ``enabled = False`` (or ``D2S_GOVERN_THREADS=0``) turns
the governor off; where ``/proc/stat`` cannot be read (not Linux) it does nothing.
"""
import os
import time

from . import forksafe

INTERVAL = 0.1   # seconds between two looks at the machine
STALE = 0.5      # seconds: after a longer pause the others are counted as the threads runnable now
SLACK = 0.5      # cores: a thread is added back once the others leave more than half a core free; less
                 # slack took a thread from a step whenever another process's idle BLAS threads had
                 # just spun (benchmarks/bench_models.py: ResNet-18 133 ms, 127 with this)
enabled = os.environ.get("D2S_GOVERN_THREADS", "1").strip() not in ("0", "false", "no", "off")

_lock = forksafe.Lock()
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_state = {"next": 0.0, "look": None, "others": None, "threads": None}
_setters = []  # (get_max, set) of the libraries governed: MKL's


def _machine_cpu():
    """Busy CPU seconds of the whole machine since boot (``/proc/stat``), or None."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu" or len(fields) < 5:
        return None
    ticks = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICK


def _running_now():
    """Threads of the whole machine runnable at this instant (``procs_running`` in ``/proc/stat``,
    the calling one included), or None."""
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"procs_running "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def cores():
    """The CPUs of the machine."""
    return os.cpu_count() or 1


def others_busy(previous, now):
    """Cores the other processes used between two looks ``(wall, machine busy, own CPU)``."""
    wall = now[0] - previous[0]
    if wall <= 0:
        return 0.0
    return max(0.0, ((now[1] - previous[1]) - (now[2] - previous[2])) / wall)


def choose(others, ceiling, ncpu=None):
    """Threads for the products when the other processes use ``others`` cores."""
    free = (ncpu or cores()) - others
    return max(1, min(ceiling, int(free + SLACK)))


def register(get_max, set_threads):
    """Govern a library's thread count: ``get_max()`` its count before any governing (the
    ceiling), ``set_threads(n)`` sets it."""
    with _lock:
        _setters.append([get_max, set_threads, None])


def _look():
    """Look at the machine if ``INTERVAL`` has passed since the last look: the cores the other
    processes used in between go to ``_state["others"]`` (None until two looks). Returns whether
    it looked."""
    now = time.monotonic()
    if now < _state["next"] or not enabled:
        return False
    with _lock:
        if now < _state["next"]:
            return False
        _state["next"] = now + INTERVAL
        busy = _machine_cpu()
        if busy is None:
            _state["next"] = float("inf")  # no /proc/stat here: never look again
            return False
        look = (now, busy, time.process_time())
        previous, _state["look"] = _state["look"], look
        if previous is not None and now - previous[0] > STALE:
            # after a pause, the average over it says what the others did while this process
            # waited (in bench_models.py: the other columns' steps), not what they do now: count
            # the threads runnable at this instant instead (this one aside)
            running = _running_now()
            _state["others"] = others_busy(previous, look) if running is None else max(0, running - 1)
        elif previous is not None:
            _state["others"] = others_busy(previous, look)
        return True


def free(ceiling):
    """Threads a library that has ``ceiling`` may use now: ``choose`` from the last look (at
    most ``INTERVAL`` seconds old), ``ceiling`` before the second look or when not ``enabled``."""
    _look()
    others = _state["others"]
    return ceiling if others is None or not enabled else choose(others, ceiling)


def govern():
    """Set the governed libraries' thread counts from what the machine has free (at most every
    ``INTERVAL`` seconds; see the module docstring). Returns the count chosen, or None."""
    if not _setters or not _look() or _state["others"] is None:
        return _state["threads"]
    with _lock:
        chosen = None
        for entry in _setters:
            if entry[2] is None:
                entry[2] = max(1, int(entry[0]()))
            n = choose(_state["others"], entry[2])
            entry[1](n)
            chosen = n
        _state["threads"] = chosen
        return chosen


def _reset_after_fork():
    # a forked child's libraries may run fewer threads (MKL: one, see native/mkl.py): the
    # ceilings are read again at the child's first look
    _state.update(next=0.0, look=None, others=None, threads=None)
    for entry in _setters:
        entry[2] = None


forksafe.after_fork(_reset_after_fork)
