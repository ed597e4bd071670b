"""The native backend's disk cache: where compiled machine code is kept between processes, and
the trust rule that keeps foreign code out of it.

numba's cache files (in ``__pycache__`` beside the generated module) are pickles, which run
code when loaded, and the generated module is imported. So:

- **Whose directory.** The cache directory must belong to this user, with no write access for
  anyone else, and so must every directory above it, unless that one is sticky (``/tmp``) and
  belongs to root or this user -- the rule ssh's StrictModes applies to ``~/.ssh``. Whoever
  can write a directory above the cache can swap the cache for their own. A directory that
  fails the rule is not used at all: the program is compiled in memory (no file is read or
  written), and the reason is warned once per directory.
- **One opened directory.** The directory is checked through the descriptor it is opened with
  (``O_DIRECTORY | O_NOFOLLOW``), and every file d2s reads or writes in it is reached
  relative to that descriptor (``dir_fd=``); numba is given ``/proc/self/fd/<fd>`` as the
  directory, so its own reads go through the same descriptor. A directory renamed or replaced
  after the check is never the one read.
- **Only what d2s wrote.** numba reads an entry only when every file of it has the SHA-256
  d2s recorded in the entry's manifest (JSON, never executed) when it compiled the entry. A
  torn, truncated, foreign or tampered entry is deleted and compiled again.
- **Keyed by everything the code runs.** The key covers the generated source, the feed
  signature, the numba/numpy/Python versions, the runtime's version and a hash of the
  runtime modules the generated code calls (``_lib.py``, ``mkl.py``): a fixed helper is never
  shadowed by machine code cached before the fix.
"""
import contextlib
import hashlib
import json
import os
import stat
import threading
import warnings

from .. import forksafe

try:
    import fcntl
except ImportError:  # not POSIX: no lock between processes (the in-process one remains)
    fcntl = None

MANIFEST_FORMAT = 2
PYCACHE = "__pycache__"
_PROC_FD = "/proc/self/fd"
_WARNED = set()
_WARN_LOCK = forksafe.Lock()


def default_cache_dir():
    base = os.environ.get("D2S_CACHE_DIR")
    if base:
        return os.path.join(base, "native")
    return os.path.join(os.path.expanduser("~"), ".cache", "d2s", "native")


# ------------------------------------------------------------------ the trust rule
def _private(st, path):
    """Why a directory with status ``st`` may not hold executable entries, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if st.st_mode & 0o022:
        return f"{path} is writable by other users"
    return None


def _unsafe_ancestor(path):
    """Why a directory above ``path`` lets another user replace ``path``, or None: each must
    belong to root or this user and be writable by no one else, unless sticky."""
    me = os.getuid()
    parent = os.path.dirname(os.path.realpath(path))
    while True:
        try:
            st = os.stat(parent)
        except OSError as e:
            return f"{parent} cannot be checked ({e.strerror})"
        if st.st_uid not in (0, me):
            return f"{parent} (above the cache) belongs to another user"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return f"{parent} (above the cache) is writable by other users"
        up = os.path.dirname(parent)
        if up == parent:
            return None
        parent = up


def _open_dir(name, dir_fd=None, create=True):
    """A descriptor of directory ``name`` (created private if missing and ``create``), never
    through a symbolic link."""
    if create:
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
        except FileExistsError:
            pass
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)


def warn_once(path, why):
    with _WARN_LOCK:
        if path in _WARNED:
            return
        _WARNED.add(path)
    warnings.warn(f"d2s native backend: the disk cache {path} is not used ({why}); programs are compiled in "
                  f"memory in each process. Set D2S_CACHE_DIR to a directory only you can write.",
                  RuntimeWarning, stacklevel=3)


class CacheDir:
    """The cache directory, opened and checked once: ``refusal`` says why it must not be used
    (None: trusted); ``numba_dir`` is the path numba is given (through the descriptor)."""

    def __init__(self, path, create=True):
        self.path = path
        self.fd = self.pycache_fd = None
        self.refusal = None
        if os.name != "posix":
            self.numba_dir = os.path.join(path, PYCACHE)
            return
        try:
            if create:
                parent = os.path.dirname(os.path.abspath(path))
                os.makedirs(parent, mode=0o700, exist_ok=True)
            self.refusal = _unsafe_ancestor(path)
            if self.refusal is None:
                self.fd = _open_dir(path, create=create)
                self.refusal = _private(os.fstat(self.fd), path)
            if self.refusal is None:
                self.pycache_fd = _open_dir(PYCACHE, dir_fd=self.fd, create=create)
                self.refusal = _private(os.fstat(self.pycache_fd), os.path.join(path, PYCACHE))
        except OSError as e:
            self.refusal = f"{path} cannot be opened safely ({e.strerror or e})"
        through = os.path.join(_PROC_FD, str(self.fd)) if self.fd is not None and os.path.isdir(_PROC_FD) else path
        self.numba_dir = os.path.join(through, PYCACHE)
        self.module_dir = through

    def close(self):
        for fd in (self.pycache_fd, self.fd):
            if fd is not None:
                os.close(fd)
        self.fd = self.pycache_fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ----------------------------------------------------------- files, relative to the descriptors
    def _dir(self, in_pycache):
        return self.pycache_fd if in_pycache else self.fd

    def read_text(self, name):
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self.fd)
        with os.fdopen(fd, encoding="utf-8") as f:
            return f.read()

    def write_atomic(self, name, text, exclusive=False):
        """Write ``text`` as ``name`` through a temporary file; with ``exclusive``, an existing
        ``name`` holding the same text is kept (its stamp is what numba's index records)."""
        tmp = f".tmp-{os.getpid()}-{threading.get_ident()}-{name}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            if exclusive:
                try:
                    os.link(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
                    return
                except FileExistsError:
                    try:
                        if self.read_text(name) == text:
                            return
                    except (OSError, ValueError):
                        pass
                except OSError:  # no hard links on this file system
                    pass
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            tmp = None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=self.fd)

    def numba_files(self, stem):
        """numba's files of module ``stem`` (its index ``.nbi`` and data ``.nbc`` files)."""
        try:
            names = os.listdir(self.pycache_fd)
        except OSError:
            return []
        return sorted(n for n in names if n.startswith(stem + ".") and n.endswith((".nbi", ".nbc")))

    def digest(self, name):
        """(size, SHA-256) of file ``name`` of ``__pycache__``."""
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self.pycache_fd)
        h = hashlib.sha256()
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return size, h.hexdigest()

    def size(self, name):
        return os.stat(name, dir_fd=self.pycache_fd, follow_symlinks=False).st_size

    def unlink(self, name, in_pycache=False):
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=self._dir(in_pycache))

    @contextlib.contextmanager
    def lock(self, key):
        """Other processes compiling the same program wait for this one (then load its entry)
        instead of compiling it too and rewriting the files under each other's manifests."""
        if fcntl is None:
            yield
            return
        fd = os.open(f"d2s_native_{key}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=self.fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # ----------------------------------------------------------- manifests
    def read_manifest(self, key):
        try:
            m = json.loads(self.read_text(f"d2s_native_{key}.json"))
            if m.get("format") != MANIFEST_FORMAT or not isinstance(m.get("files"), dict) or not m["files"]:
                return None
            return m
        except (OSError, ValueError, AttributeError):
            return None

    def write_manifest(self, key, stem):
        files = {n: self.digest(n) for n in self.numba_files(stem)}
        self.write_atomic(f"d2s_native_{key}.json", json.dumps({"format": MANIFEST_FORMAT, "files": files}))

    def entry_is_intact(self, key, stem):
        """Every numba file of the entry is listed in its manifest with its digest."""
        manifest = self.read_manifest(key)
        files = self.numba_files(stem)
        if manifest is None or not files or set(files) != set(manifest["files"]):
            return False
        try:
            return all(list(self.digest(n)) == list(manifest["files"][n]) for n in files)
        except (OSError, TypeError):
            return False

    def entry_is_listed(self, key, stem):
        """The cheap check (no hashing): the manifest lists files of the sizes on disk."""
        manifest = self.read_manifest(key)
        if manifest is None:
            return False
        try:
            return all(self.size(n) == entry[0] for n, entry in manifest["files"].items())
        except (OSError, TypeError, IndexError):
            return False

    def purge(self, key, stem):
        for name in self.numba_files(stem):
            self.unlink(name, in_pycache=True)
        self.unlink(f"d2s_native_{key}.json")


# ------------------------------------------------------------------ what the key covers
_HELPERS = ("_lib.py", "mkl.py")
_HELPERS_DIGEST = []


def helpers_digest():
    """SHA-256 of the runtime's version and of the modules generated code calls (read once per
    process): part of every cache key."""
    if not _HELPERS_DIGEST:
        from ..version import __version__
        h = hashlib.sha256(__version__.encode())
        here = os.path.dirname(os.path.abspath(__file__))
        for name in _HELPERS:
            with open(os.path.join(here, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
        _HELPERS_DIGEST.append(h.hexdigest()[:16])
    return _HELPERS_DIGEST[0]
