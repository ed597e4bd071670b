"""A saved model's directory replaced as a whole, and read as a whole.

**Replacing.** A save writes the new model into a hidden sibling directory
(``.<name>.d2s-save-<pid>-<token>``), flushes it, and then exchanges it with the directory at
``path`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``): at every instant ``path`` holds one
complete model, the old or the new, whatever kills the process (``kill -9``, the OOM killer).
The old model, now under the sibling's name, is removed. Where the exchange is not available
(another system, a file system without it), the old directory is first renamed aside
(``.<name>.d2s-old-<pid>-<token>``) and the new one renamed into place: a process killed
between those two renames leaves nothing at ``path``, and a load that finds nothing there puts
back the copy the dead process moved aside. Siblings left by a save whose process is gone are
removed by the next save of the same path.

**Reading.** :func:`read_whole` opens the directory once and reads every file through that
descriptor (``/proc/self/fd/<fd>``), so a save that lands meanwhile cannot mix its files with
the old model's; if the directory at ``path`` changed while it was read (the old one is
deleted after the exchange, so files may vanish under the reader), the read starts again.
"""
import contextlib
import ctypes
import itertools
import os
import re
import secrets
import shutil
import time

from .errors import FormatError

_PROC_FD = "/proc/self/fd"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_PATIENCE = 10.0  # seconds a load keeps trying while saves keep replacing the directory


# ------------------------------------------------------------------ siblings
def sibling(target, what):
    """A new, empty hidden directory next to ``target`` for ``what`` ('save' or 'old'), named
    after this process (so a later save can tell a dead process's leftovers). Made with the
    user's umask (a saved model gets the permissions a plain mkdir gives)."""
    parent, base = os.path.split(os.path.abspath(target))
    while True:
        path = os.path.join(parent, f".{base}.d2s-{what}-{os.getpid()}-{secrets.token_hex(6)}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue


def _siblings(target, what):
    parent, base = os.path.split(os.path.abspath(target))
    pattern = re.compile(rf"\.{re.escape(base)}\.d2s-({what})-(\d+)-[0-9a-f]+\Z")
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return [(os.path.join(parent, n), int(m.group(2))) for n in names for m in [pattern.match(n)] if m]


def _alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def remove_leftovers(target):
    """Remove the siblings of ``target`` left by saves whose process is gone."""
    for path, pid in _siblings(target, "save|old"):
        if not _alive(pid):
            shutil.rmtree(path, ignore_errors=True)


def recover(target):
    """Where nothing is at ``target`` but a dead process moved the old model aside and did not
    get to put the new one in place, put the old one back. Whether something is at ``target``."""
    if os.path.lexists(target):
        return True
    for path, pid in _siblings(target, "old"):
        if not _alive(pid) and os.path.isfile(os.path.join(path, "program.json")):
            with contextlib.suppress(OSError):
                os.rename(path, target)
                return True
    return os.path.lexists(target)


# ------------------------------------------------------------------ the exchange
def _libc_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _libc_renameat2() if os.name == "posix" else None


def exchange(a, b):
    """Swap directories ``a`` and ``b`` atomically; False where the system cannot."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not on this kernel or file system
        return False
    raise OSError(err, os.strerror(err), b)


def replace(new, target):
    """Put directory ``new`` at ``target`` as a whole (see the module docstring); an earlier
    directory there is removed afterwards. Returns a directory that could not be removed, or
    None."""
    if not os.path.lexists(target):
        try:
            os.rename(new, target)
            return None
        except OSError:
            if not os.path.lexists(target):
                raise
    if exchange(new, target):
        old = new  # the exchange left the old model under the new one's name
    else:
        old = sibling(target, "old")
        os.rmdir(old)  # only a free name is wanted
        os.rename(target, old)
        try:
            os.rename(new, target)
        except BaseException:
            os.rename(old, target)
            raise
    for _ in range(2):  # the new model is in place; a failure here only leaves litter behind
        shutil.rmtree(old, ignore_errors=True)
        if not os.path.lexists(old):
            return None
    return old


def fsync_tree(root):
    """Flush every file and directory under ``root`` to disk."""
    for d, _, files in os.walk(root):
        for f in files:
            fd = os.open(os.path.join(d, f), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(d)


def fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ------------------------------------------------------------------ reading one whole save
def _unchanged(fd, path):
    """Whether the directory open as ``fd`` is still the one at ``path`` and not deleted."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return here.st_nlink > 0 and (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def read_whole(path, read):
    """``read(root)`` of the directory at ``path``, where ``root`` reaches the directory opened
    once (every file ``read`` opens under ``root`` belongs to that one directory). Retried while
    a save replaced the directory during the read; errors of an unchanged directory are raised
    as they are."""
    if not os.path.isdir(path):
        recover(path)
    deadline = time.monotonic() + _PATIENCE
    for attempt in itertools.count():
        if attempt:  # a save got in the way: wait a little (longer each time) and read again
            if time.monotonic() > deadline:
                raise FormatError(f"{path}: the model was replaced during every attempt to read it for "
                                  f"{_PATIENCE:.0f} s (is it being saved in a tight loop?)")
            time.sleep(min(0.0005 * 2 ** attempt, 0.02))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if recover(path):
                continue
            if _siblings(path, "old"):  # a live save between its two renames: the new model comes
                continue
            raise FormatError(f"{path}: not a directory holding a saved d2s program") from None
        except NotADirectoryError:
            raise FormatError(f"{path}: not a directory holding a saved d2s program") from None
        try:
            root = os.path.join(_PROC_FD, str(fd)) if os.path.isdir(_PROC_FD) else path
            try:
                result = read(root)
            except (FormatError, OSError):
                if _unchanged(fd, path):
                    raise
                continue
            if _unchanged(fd, path):
                return result
        finally:
            os.close(fd)

