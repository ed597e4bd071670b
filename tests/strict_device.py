"""A test-only device, "strict": numpy arrays behind an array type that behaves like cupy's.

No GPU was ever available while building d2s, so the GPU path would break silently on a
numpy-only call in a kernel, an implicit device-to-host copy or a Python ``float()`` inside a
program. This device runs on the CPU but refuses what cupy refuses, and counts what makes cupy
wait for the GPU:

* Implicit conversion to numpy raises ``TypeError`` (``__array__``, as cupy's "Implicit
  conversion to a NumPy array is not allowed"), and numpy functions refuse strict arrays
  (``__array_function__`` raises, ``__array_ufunc__ = None`` makes ``np.add(s, s)`` raise).
  This is stricter than cupy, which dispatches ``np.<ufunc>`` and NEP-18 functions to itself:
  d2s's kernels must call ``xp.<fn>``, and code that does reaches cupy's own functions.
  Python operators with a numpy scalar on the left (``np.float32(2) * s``) work, as in cupy.
* A numpy array operand of a strict function or operator raises ``TypeError``, as cupy's
  "Unsupported type <class 'numpy.ndarray'>"; numpy and Python scalars are accepted.
  ``xp.asarray``/``xp.array`` of host data is the host-to-device copy (counted), and a numpy
  index array in ``s[idx]`` or value in ``s[idx] = v`` is copied the same way (cupy accepts them).
* Host synchronizations are counted (``COUNTS.syncs``): ``float()``, ``int()``, ``bool()``,
  ``complex()``, ``operator.index``, ``.item()``, ``.tolist()``, ``repr``/``str``/``format``,
  and the ops whose output shape depends on the data (a boolean-mask index, ``nonzero``,
  ``unique``, ``argwhere``, ``flatnonzero``), which cupy must sync to size their output.
  ``asnumpy(s)`` and ``s.get()`` are the explicit device-to-host copies (``COUNTS.to_host``;
  a copy waits for the device, so each is a sync too).
* ``concatenate``/``stack`` take strict arrays only (a numpy or Python scalar in the sequence
  raises ``TypeError``, as in cupy).
* Reductions and scalar indexing return 0-d arrays, never numpy scalars (cupy has no scalars
  on the device); element-wise promotion follows numpy 2 (NEP 50: Python scalars are weak,
  0-d arrays and numpy scalars are not), which is what cupy 14 follows.

* A fake graph capture (``tests/strict_graph.py``, the graph backend of this device): while
  :data:`CAPTURE` is set, every host synchronization, every host-to-device copy (Python
  scalars included) and every library call cupy refuses inside a stream capture (cuBLAS's
  matrix products, ``linalg``, cuRAND's draws) raises :class:`CaptureViolation`, as cupy
  raises ``cudaErrorStreamCaptureUnsupported``.

Not mirrored (they would make eager strict results differ from cpu ones, which the tests compare):
float-to-int cast of out-of-range values, wrap-around of out-of-bounds integer indices,
the unspecified winner among duplicate indices in ``a[idx] = v``, cupy's random streams
(strict draws are numpy's, from a ``RandomState``).
"""
import contextlib
import functools
import threading

import numpy as np

NAME = "strict"

_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. "
             "Please use `.get()` to construct a NumPy array explicitly.")


class CaptureViolation(RuntimeError):
    """Something a CUDA stream capture refuses happened while the fake capture ran."""


# while a fake graph capture runs: what captures (else None); see strict_graph.py
CAPTURE = [None]

# what cupy cannot capture: cuBLAS (matrix products), cuSOLVER (linalg), cuRAND (random)
_LIBRARY = frozenset({"matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron"})


def refuse_in_capture(what):
    """Raise CaptureViolation if a fake capture is running (``what``: the refused call)."""
    if CAPTURE[0] is not None:
        raise CaptureViolation(f"{what} is not allowed during a CUDA graph capture ({CAPTURE[0]})")


class Counts:
    """Host synchronizations and copies seen since the last :meth:`reset`."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.syncs, self.to_host, self.to_device = 0, 0, 0
        self.sync_kinds = []

    def sync(self, kind):
        refuse_in_capture(f"a host synchronization ({kind})")
        with self.lock:
            self.syncs += 1
            self.sync_kinds.append(kind)


COUNTS = Counts()


@contextlib.contextmanager
def counting():
    """``with counting() as c:`` ... ``c.syncs``: the counts of what runs within."""
    COUNTS.reset()
    yield COUNTS


# ------------------------------------------------------------------ wrapping
def _unwrap(x, where):
    """numpy data of a strict argument; numpy arrays refused (cupy: "Unsupported type")."""
    t = type(x)
    if t is StrictArray:
        return x._a
    if t is np.ndarray:
        raise TypeError(f"{where}: Unsupported type <class 'numpy.ndarray'> (a host array on device "
                        f"'strict'; copy it with xp.asarray first)")
    if t is list or t is tuple:
        return t(_unwrap(e, where) for e in x)
    return x


def _wrap(x):
    t = type(x)
    if t is np.ndarray:
        return StrictArray(x)
    if isinstance(x, np.generic):
        return StrictArray(np.asarray(x))  # cupy returns 0-d arrays, not scalars
    if t is tuple or t is list:
        return t(_wrap(e) for e in x)
    return x


def _host_to_device(x):
    """Host data (numpy arrays, scalars, nested lists that may hold strict arrays) as numpy."""
    t = type(x)
    if t is StrictArray:
        return x._a
    if t is list or t is tuple:
        return [_host_to_device(e) for e in x]
    if t is np.ndarray:
        refuse_in_capture("a host-to-device copy")
        COUNTS.to_device += 1
    return x


def _unwrap_index(key):
    t = type(key)
    if t is StrictArray:
        if key._a.dtype == bool and key._a.ndim > 0:
            COUNTS.sync("boolean-mask index")  # cupy counts the mask's trues on the host
        return key._a
    if t is np.ndarray:
        refuse_in_capture("a host-to-device copy of an index")
        COUNTS.to_device += 1  # cupy copies a host index array to the device
        if key.dtype == bool and key.ndim > 0:
            COUNTS.sync("boolean-mask index")
        return key
    if t is tuple:
        return tuple(_unwrap_index(k) for k in key)
    if t is list:
        return [_unwrap_index(k) for k in key]
    return key


def _binary(name, reflected=False):
    op = getattr(np.ndarray, name)

    library = "matmul" in name

    def method(self, other):
        if library:
            refuse_in_capture(f"a cuBLAS call ({name})")
        if isinstance(other, StrictArray):
            other = other._a
        elif type(other) is np.ndarray:
            raise TypeError(f"operand type {name}: Unsupported type <class 'numpy.ndarray'> "
                            f"(a host array mixed with a strict array)")
        elif not isinstance(other, (int, float, complex, bool, np.generic)):
            return NotImplemented
        return _wrap(op(self._a, other))

    method.__name__ = name
    return method


class _Flags:
    """cupy's ndarray.flags: contiguity and ownership only (no ``writeable``: device arrays
    cannot be made read-only)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, flags):
        self.c_contiguous, self.f_contiguous, self.owndata = flags.c_contiguous, flags.f_contiguous, flags.owndata

    def __getitem__(self, name):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "OWNDATA": "owndata"}[name])


class StrictArray:
    """A numpy array on the "strict" device (see the module docstring)."""

    __slots__ = ("_a", "__weakref__")
    __array_ufunc__ = None  # np.<ufunc>(strict) raises; numpy scalars' operators defer to ours
    __hash__ = None

    def __init__(self, a):
        self._a = a

    # -- refusals
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError(f"numpy.{func.__name__} was called on a strict (device) array: use the device's "
                        f"namespace (xp.{func.__name__}), not numpy's")

    # -- host synchronizations
    def __bool__(self):
        COUNTS.sync("bool")
        return bool(self._a)

    def __float__(self):
        COUNTS.sync("float")
        return float(self._a)

    def __int__(self):
        COUNTS.sync("int")
        return int(self._a)

    def __complex__(self):
        COUNTS.sync("complex")
        return complex(self._a)

    def __index__(self):
        COUNTS.sync("index")
        return self._a.__index__()

    def item(self, *args):
        COUNTS.sync("item")
        return self._a.item(*args)

    def tolist(self):
        COUNTS.sync("tolist")
        return self._a.tolist()

    def __repr__(self):
        COUNTS.sync("repr")
        return "strict_" + repr(self._a)

    def __str__(self):
        COUNTS.sync("str")
        return str(self._a)

    def __format__(self, spec):
        COUNTS.sync("format")
        return format(self._a, spec) if self._a.ndim == 0 else format(str(self._a), spec)

    # -- the explicit copy
    def get(self):
        """The device-to-host copy (cupy's ``ndarray.get``)."""
        COUNTS.to_host += 1
        COUNTS.sync("get")
        return self._a.copy()

    # -- metadata (on the host in cupy too: no sync)
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    @property
    def dtype(self):
        return self._a.dtype

    @property
    def ndim(self):
        return self._a.ndim

    @property
    def size(self):
        return self._a.size

    @property
    def itemsize(self):
        return self._a.itemsize

    @property
    def nbytes(self):
        return self._a.nbytes

    @property
    def strides(self):
        return self._a.strides

    @property
    def flags(self):
        return _Flags(self._a.flags)

    @property
    def base(self):
        return None if self._a.base is None else StrictArray(self._a.base)

    @property
    def T(self):
        return StrictArray(self._a.T)

    @property
    def real(self):
        return StrictArray(self._a.real)

    @property
    def imag(self):
        return StrictArray(self._a.imag)

    @property
    def device(self):
        return NAME

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        # cupy yields device sub-arrays (no copy); a 0-d array is not iterable
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._a.shape[0]):
            yield StrictArray(self._a[i, ...])

    # -- indexing
    def __getitem__(self, key):
        return _wrap(self._a[_unwrap_index(key)])

    def __setitem__(self, key, value):
        if type(value) is np.ndarray:
            refuse_in_capture("a host-to-device copy")
            COUNTS.to_device += 1  # cupy uploads a host value written into a device array
        else:
            value = _unwrap(value, "__setitem__")
        self._a[_unwrap_index(key)] = value

    # -- copies (copy.deepcopy of a model; pickling as cupy allows)
    def __copy__(self):
        return StrictArray(self._a.copy())

    def __deepcopy__(self, memo):
        return StrictArray(self._a.copy())

    def __reduce__(self):
        return StrictArray, (self._a.copy(),)

    # -- every other method of ndarray: arguments unwrapped, results wrapped
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr)

        @functools.wraps(attr)
        def method(*args, **kwargs):
            args = _unwrap(args, f"ndarray.{name}")
            kwargs = {k: _unwrap(v, f"ndarray.{name}") for k, v in kwargs.items()}
            return _wrap(attr(*args, **kwargs))

        return method

    def __neg__(self):
        return StrictArray(-self._a)

    def __pos__(self):
        return StrictArray(+self._a)

    def __abs__(self):
        return StrictArray(abs(self._a))

    def __invert__(self):
        return StrictArray(~self._a)


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift", "divmod"):
    for _fmt in ("__{}__", "__r{}__", "__i{}__"):
        _n = _fmt.format(_name)
        if hasattr(np.ndarray, _n):
            setattr(StrictArray, _n, _binary(_n))
for _n in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(StrictArray, _n, _binary(_n))
del _name, _fmt, _n


# ------------------------------------------------------------------ the namespace
def asnumpy(x):
    """The explicit device-to-host copy (cupy.asnumpy); host data is returned as numpy."""
    if type(x) is StrictArray:
        COUNTS.to_host += 1
        COUNTS.sync("asnumpy")
        return x._a.copy()
    return np.asarray(x)


def _asarray(x, dtype=None, order=None, copy=None):
    if type(x) is StrictArray:
        a = x._a if dtype is None else x._a.astype(dtype, copy=False)
        return StrictArray(a.copy() if copy else a)
    refuse_in_capture("a host-to-device copy (xp.asarray of host data)")
    a = np.array(_host_to_device(x), dtype=dtype, order=order or "K", copy=True)
    return StrictArray(a)


def _array(x, dtype=None, copy=True, order="K", ndmin=0):
    out = _asarray(x, dtype=dtype, copy=copy)
    a = out._a
    if ndmin > a.ndim:
        a = a.reshape((1,) * (ndmin - a.ndim) + a.shape)
    return StrictArray(a)


def _data_dependent(fn, kind):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        COUNTS.sync(kind)
        return _call(fn, args, kwargs)

    return run


def _call(fn, args, kwargs):
    name = getattr(fn, "__name__", "function")
    args = _unwrap(args, name)
    kwargs = {k: _unwrap(v, name) for k, v in kwargs.items()}
    return _wrap(fn(*args, **kwargs))


class _Ufunc:
    """A ufunc over strict arrays, with cupy's ufunc methods (``at``, ``reduce``, ...)."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = self.name = ufunc.__name__
        self.nin, self.nout, self.nargs = ufunc.nin, ufunc.nout, ufunc.nargs

    def __call__(self, *args, **kwargs):
        return _call(self._ufunc, args, kwargs)

    def at(self, a, indices, b=None):
        args = (a._a, _unwrap_index(indices)) + (() if b is None else (_unwrap(b, f"{self.name}.at"),))
        self._ufunc.at(*args)

    def reduce(self, *args, **kwargs):
        return _call(self._ufunc.reduce, args, kwargs)

    def accumulate(self, *args, **kwargs):
        return _call(self._ufunc.accumulate, args, kwargs)

    def outer(self, *args, **kwargs):
        return _call(self._ufunc.outer, args, kwargs)


class _Namespace:
    """numpy's API over strict arrays: each function unwraps, calls numpy, wraps (0-d, never
    a scalar); classes (dtypes), constants and submodules come through as sub-namespaces."""

    def __init__(self, module, name):
        self._module = module
        self.__name__ = name

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if isinstance(attr, type) or not callable(attr):
            if type(attr).__name__ == "module":
                sub = _Namespace(attr, f"{self.__name__}.{name}")
                setattr(self, name, sub)
                return sub
            return attr

        if name in _LIBRARY or self.__name__.endswith(".linalg"):
            what = f"a cuBLAS/cuSOLVER call ({self.__name__}.{name})"

            @functools.wraps(attr)
            def fn(*args, **kwargs):
                refuse_in_capture(what)
                return _call(attr, args, kwargs)
        elif isinstance(attr, np.ufunc):
            fn = _Ufunc(attr)
        else:
            @functools.wraps(attr)
            def fn(*args, **kwargs):
                return _call(attr, args, kwargs)

        setattr(self, name, fn)
        return fn

    def __repr__(self):
        return f"<array namespace {self.__name__!r} over {self._module.__name__}>"


class _Random:
    """``xp.random``: cupy's ``RandomState`` (numpy's draws, on the device)."""

    __name__ = "strict.random"

    class RandomState:
        """cupy's RandomState (cuRAND underneath) has no ``get_state``/``set_state``: its
        state cannot be read or restored, only seeded."""

        _DRAWS = ("random_sample", "standard_normal", "randint", "uniform", "normal", "seed")

        def __init__(self, seed=None):
            self._rs = np.random.RandomState(seed)

        def __getattr__(self, name):
            if name not in self._DRAWS:
                raise AttributeError(f"'RandomState' object has no attribute {name!r}")
            attr = getattr(self._rs, name)

            def draw(*args, **kwargs):
                refuse_in_capture(f"a cuRAND draw (RandomState.{name})")
                return _wrap(np.asarray(attr(*args, **kwargs)))

            return draw


def _joining(fn):
    """cupy's concatenate and stack take device arrays only: a numpy or Python scalar in the
    sequence is refused, where numpy would make it an array."""
    @functools.wraps(fn)
    def run(arrays, *args, **kwargs):
        for a in arrays:
            if type(a) is not StrictArray:
                raise TypeError(f"Argument 'a' has incorrect type (expected cupy._core.core._ndarray_base, "
                                f"got {type(a).__module__}.{type(a).__name__})")
        return _call(fn, (arrays,) + args, kwargs)

    return run


xp = _Namespace(np, NAME)
xp.ndarray = StrictArray
xp.asarray = _asarray
xp.array = _array
xp.ascontiguousarray = lambda x, dtype=None: _asarray(x, dtype=dtype)
xp.asnumpy = asnumpy
xp.random = _Random()
for _fn_name in ("nonzero", "unique", "argwhere", "flatnonzero"):
    setattr(xp, _fn_name, _data_dependent(getattr(np, _fn_name), _fn_name))
for _fn_name in ("concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"):
    setattr(xp, _fn_name, _joining(getattr(np, _fn_name)))
del _fn_name


def register():
    """Register device "strict" with d2s_runtime, and its fake graph backend (the tests'
    fixture calls this)."""
    from d2s_runtime.device import register_device
    from d2s_runtime.gpu import register_graph_backend

    import strict_graph
    register_device(NAME, xp, asnumpy=asnumpy, array_type=StrictArray)
    register_graph_backend(NAME, strict_graph.StrictGraphs)


def unregister():
    from d2s_runtime.device import unregister_device
    from d2s_runtime.gpu import unregister_graph_backend
    unregister_device(NAME)
    unregister_graph_backend(NAME)
