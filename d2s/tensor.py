"""Tensor: concrete (holds a numpy/cupy array) or symbolic (names a Var in a program Block).

Every operator and method routes through :func:`d2s.dispatch.apply`, which computes now for
concrete inputs, appends an op while a program is being built, and records autograd nodes
in both cases. Where each operator and method comes from is said at the end of this file.
"""
import operator

import numpy as np

from d2s_runtime.device import device_of, get_xp, to_host, xp_of
from d2s_runtime.dtypes import DTYPES, checked_values, result_type
from d2s_runtime.ops import OPS

from . import devices as _devices
from ._state import STATE
from .devices import device_named
from .dtypes import as_dtype, default_float
from .user_errors import symbolic_value_error


_DTYPE_CACHE = {}  # numpy dtype or dtype name -> d2s dtype
PRINT_OPTIONS = {}  # np.array2string keywords set by d2s.set_printoptions

# The device of tensors created without ``device=`` (see set_default_device)
_DEFAULT_DEVICE = ["cpu"]


def set_default_device(device):
    """Make tensors, creation ops and new parameters go to ``device`` when no ``device=`` is
    given ('cpu', 'gpu', or a device added with ``d2s_runtime.device.register_device``), as
    ``torch.set_default_device``. Returns the previous default."""
    device = _devices.as_device_name(device) or "cpu"
    get_xp(device)  # a clear error when the device is unknown or unavailable
    prev = _DEFAULT_DEVICE[0]
    _DEFAULT_DEVICE[0] = device
    return prev


def get_default_device():
    """The device of tensors created without ``device=`` ('cpu' unless changed)."""
    return _DEFAULT_DEVICE[0]


# d2s.static.weak_index's ``weak`` (it builds on Tensor, so it hands it here when it loads)
WEAK_DIM = [None]

class Tensor:
    """A multi-dimensional array with PyTorch-style autograd.

    Build one with :func:`d2s.tensor`; ``Tensor(data, requires_grad=False)`` works too.
    """

    __slots__ = ("_data", "_var", "requires_grad", "grad", "grad_fn", "_out_idx", "_hooks",
                 "_version", "_accum", "_base", "_view", "_inference", "__weakref__")
    # _base: the tensor whose elements this one shares (what detach() or a view op came from),
    # for version counting; _view: the d2s.views.ViewInfo of a view (None otherwise)

    # Python scalars on the left of an operator (2 * t) must reach our reflected methods.
    __array_priority__ = 1000

    def __init__(self, *data, requires_grad=False, device=None):
        # PyTorch's legacy constructor: Tensor(sizes...) is uninitialized memory of those sizes
        # (zeros here), Tensor(data) a copy of data in the default float dtype; a tensor
        # argument is kept with its own dtype
        if not data or all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in data):
            t = tensor(np.zeros(tuple(int(d) for d in data) or (0,), dtype=default_float()), device=device)
        elif len(data) == 1 and isinstance(data[0], Tensor):
            t = data[0]
        elif len(data) == 1:
            t = tensor(data[0], dtype=default_float(), device=device)
        else:
            raise TypeError(f"d2s.Tensor(): expected sizes (ints) or one data argument, got {len(data)} arguments "
                            "of types " + ", ".join(type(d).__name__ for d in data))
        if requires_grad:
            t = tensor(t)
            t.requires_grad_(True)
        self._data, self._var = t._data, None
        self.requires_grad, self.grad, self.grad_fn = t.requires_grad, None, None
        self._out_idx, self._hooks, self._version, self._accum = 0, None, 0, None
        self._view = None

    @classmethod
    def _make(cls, data, var=None):
        t = object.__new__(cls)
        t._data = data
        t._var = var
        t.requires_grad = False
        t.grad = None
        t.grad_fn = None
        t._out_idx = 0
        t._hooks = None
        t._version = 0
        t._accum = None
        t._view = None
        return t

    # ----------------------------------------------------------------- attributes
    @property
    def array(self):
        """The array holding this tensor's values (numpy, or the device's), shared, not
        copied; None for a symbolic tensor (one naming a value of a program being built).
        For d2s's own packages and extensions: reading it records nothing (no autograd node,
        no trace decision), and assigning it (``t.array = a``, an array of the same shape and
        dtype) rebinds the values as PyTorch's ``t.data = ...`` does, unseen by autograd."""
        return self._data

    @array.setter
    def array(self, value):
        self._data = value

    @property
    def is_symbolic(self):
        return self._data is None

    @property
    def shape(self):
        if self._data is not None:
            if STATE.tracer is not None:  # a data-dependent size baked into a trace needs a guard
                STATE.tracer.on_value(self, "shape")
            return self._data.shape
        shape = self._var.type.shape
        if None not in shape:
            return shape
        # Unknown dims read as 0-d int64 tensors computed in the program, so code such as
        # ``x.shape[0] > 3`` or ``reshape(x, [x.shape[0], -1])`` keeps working symbolically;
        # weak ones (d2s.static.weak_index), standing for the Python ints eager code reads, so a
        # dim the function returns comes back as an int
        weak = WEAK_DIM[0] or (lambda d: d)
        return tuple(d if d is not None else weak(_dispatch.apply("dim", self, axis=i)) for i, d in enumerate(shape))

    @property
    def dtype(self):
        raw = self._data.dtype if self._data is not None else self._var.type.dtype
        # read on hot paths (rules, engine): a dict hit instead of normalising the name each time
        d = _DTYPE_CACHE.get(raw)
        if d is None:
            d = _DTYPE_CACHE[raw] = as_dtype(raw)
        return d

    @property
    def ndim(self):
        return self._data.ndim if self._data is not None else len(self._var.type.shape)

    @property
    def device(self):
        """The device holding the data: a ``d2s.device`` (equal to ``'cpu'``/``'gpu'``/``'cuda'``)."""
        if self._data is None:
            return device_named("cpu" if STATE.builder is None else STATE.builder.device)
        return device_named(device_of(self._data))

    @property
    def is_cuda(self):
        return self.device == "gpu"

    def get_device(self):
        """The GPU index of the data, or -1 on the CPU (as PyTorch)."""
        return -1 if self.device == "cpu" else 0

    @property
    def is_leaf(self):
        return self.grad_fn is None

    def is_inference(self):
        """Whether this tensor was made inside ``d2s.inference_mode()``."""
        return getattr(self, "_inference", False)

    @property
    def T(self):
        return self.transpose()

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    # ------------------------------------------------------- values back to Python
    def _concrete(self, what):
        """The array behind a concrete tensor; symbolic tensors cannot become Python values."""
        if self._data is None:
            raise symbolic_value_error(self, what)
        if STATE.tracer is not None:
            STATE.tracer.on_value(self, what)
        return self._data

    def numpy(self):
        data = self._concrete(".numpy()")
        if self.requires_grad and STATE.tracer is None:
            pass  # PyTorch refuses here; d2s returns a copy-free view, which is harmless for numpy users
        return data if isinstance(data, np.ndarray) else to_host(data)

    def item(self):
        data = self._concrete(".item()")
        if data.size != 1:
            raise ValueError(f".item() needs a tensor with one element, this one has shape {tuple(data.shape)}")
        return data.item()

    def tolist(self):
        return self.numpy().tolist() if self._data is None else _host(self._concrete(".tolist()")).tolist()

    def __bool__(self):
        data = self._concrete("bool()")
        if data.size != 1:
            raise ValueError(f"the truth value of a tensor with shape {tuple(data.shape)} is ambiguous: "
                             "use .any() or .all()")
        return bool(data.item())

    def __int__(self):
        return int(_host(self._concrete("int()")).item())

    def __float__(self):
        return float(_host(self._concrete("float()")).item())

    def __index__(self):
        data = self._concrete("an index")
        if data.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {data.dtype}")
        return int(data.item())

    def __len__(self):
        if self._data is None:
            d = self._var.type.shape[0] if self._var.type.shape else None
            if d is None:
                raise symbolic_value_error(self, "len()")
            return d
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        if STATE.tracer is not None:
            STATE.tracer.on_value(self, "len()")
        return self._data.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(len(self)):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        data = self.numpy()
        return data if dtype is None else data.astype(dtype)

    def __hash__(self):
        return id(self)

    def __str__(self):
        if self._data is None and _formatted_by_user():
            raise _format_error(self, "str()")
        return self.__repr__()

    def __format__(self, spec):
        """``f"{t}"``; ``f"{t:.2f}"`` formats a one-element tensor's value (as PyTorch's does)."""
        if self._data is None:
            if _formatted_by_user():
                raise _format_error(self, "format()")
            return object.__format__(self, spec)
        if spec and self.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec) if spec else self.__repr__()

    def __repr__(self):
        if self._data is None:
            return f"Tensor(symbolic {self._var.name}: {self._var.type})"
        extra = ""
        if self.grad_fn is not None:
            extra = f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            extra = ", requires_grad=True"
        if self.device != "cpu":
            extra += f", device='{self.device}'"
        body = np.array2string(_host(self._data), separator=", ", prefix="tensor(", **PRINT_OPTIONS)
        return f"tensor({body}, dtype={self.dtype}{extra})"

    # ----------------------------------------------------------------- autograd
    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf:
            raise RuntimeError("requires_grad_() can only change leaf tensors; use .detach() first")
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(f"only floating point tensors can require gradients, this one is {self.dtype}")
        self.requires_grad = requires_grad
        return self

    def detach(self):
        """A tensor sharing this one's data, cut from the autograd graph; an in-place change
        through it bumps this tensor's version too, so autograd notices it (PyTorch's detach)."""
        if self._data is None or STATE.builder is not None:
            # in a program (a module buffer too), a view: a write through it must reach this
            # tensor as eagerly, where the two share one array
            with no_grad():
                return _views.detached(self, _dispatch.apply("stop_gradient", self))
        out = Tensor._make(self._data)
        out._base = self
        return out

    def detach_(self):
        self.grad_fn = None
        self.requires_grad = False
        return self

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self.grad_fn is None:
            return
        self.grad_fn.retain(self._out_idx, self)

    def register_hook(self, fn):
        """Call ``fn(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that does not require grad")
        b = STATE.builder
        if self._data is None and b is not None and b.forward_only:
            # the build records the values' history (so requires_grad reads as eagerly), but its
            # backward program is derived from the program, not from these nodes: the hook would never run
            from .user_errors import at_user_line
            raise at_user_line("register_hook() on a tensor inside a function being converted by to_static: a "
                               "program's backward does not call Python hooks. Register the hook on a tensor "
                               "outside the converted function (an input or an output), or run this part "
                               "eagerly (@d2s.jit.not_to_static)", RuntimeError)
        if self.grad_fn is not None:
            return self.grad_fn.add_pre_hook(self._out_idx, fn)
        if self._hooks is None:
            self._hooks = []
        return _HookHandle(self._hooks, fn)

    def register_post_accumulate_grad_hook(self, fn):
        """Call ``fn(self)`` after each backward pass accumulates into this leaf's ``.grad``
        (PyTorch's hook of the same name; data-parallel training starts reductions from it)."""
        if not self.requires_grad or self.grad_fn is not None:
            raise RuntimeError("post-accumulate-grad hooks are for leaf tensors that require grad")
        node = _node.grad_node(self)
        if node.post_hooks is None:
            node.post_hooks = []
        return _HookHandle(node.post_hooks, fn)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of the leaves it comes from."""
        _engine.backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs)

    @property
    def data(self):
        """A tensor sharing this one's array, cut from autograd and from its version counter
        (PyTorch's ``.data``: changes through it are not seen by autograd's checks)."""
        if self._data is None or STATE.builder is not None:
            return self.detach()  # (in a program: a view writing through to this tensor, see detach)
        return Tensor._make(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"t.data must be assigned a tensor, got {type(value).__name__}")
        if getattr(value, "_base", None) is self and value._view is not None:
            # t.data = <t.data after an in-place update> (how converted code states t.data.mul_(2)):
            # the update already reached t through the view
            return
        if self._data is None or value._data is None:
            raise RuntimeError("t.data = ... cannot be used on symbolic tensors (inside a program)")
        self._data = value._data

    # ----------------------------------------------------------------- devices
    def to(self, *args, device=None, dtype=None, non_blocking=False, copy=False, memory_format=None):
        """Move and/or cast, as ``torch.Tensor.to``: ``t.to(device)`` ('cpu', 'cuda', 'cuda:0',
        'gpu', a ``d2s.device``), ``t.to(dtype)``, ``t.to(device, dtype)``, ``t.to(other)`` (other's
        device and dtype), or keywords. Returns ``t`` itself when nothing changes (unless
        ``copy=True``); ``non_blocking`` is accepted (copies are synchronous)."""
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif a is None:
                continue
            elif _devices.is_device(a):
                device = a
            else:
                try:
                    dtype = as_dtype(a)
                except TypeError:
                    if "bfloat16" in str(a):
                        raise  # (numpy has no bfloat16: as_dtype says so)
                    if isinstance(a, str):
                        _devices.as_device_name(a)  # the unknown device's error, naming what d2s has
                    raise TypeError(f"Tensor.to: {a!r} is neither a device ('cpu', 'cuda', 'cuda:0') nor a "
                                    "dtype") from None
        out = self
        if dtype is not None and as_dtype(dtype) != self.dtype:
            out = out.cast(dtype)
        name = _devices.as_device_name(device)
        if name is not None and name != out.device:
            get_xp(name)  # a clear error when the device is unavailable (cupy or a GPU missing)
            out = _dispatch.apply("to_device", out, device=name)
        if copy and out is self:
            out = out.clone()
        return out

    def cpu(self, memory_format=None):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        """On the GPU (cupy); ``device`` an index or a device, as in PyTorch."""
        return self.to("gpu" if device is None else _devices.device("cuda", device) if isinstance(device, int)
                       else device)

    def gpu(self):
        return self.to("gpu")

    # ----------------------------------------------------------------- dtype shorthands
    # (PyTorch returns the tensor itself when it has the dtype already: an in-place update of
    # ``x.float()`` then writes x, as eagerly here)
    def float(self):
        return self if self.dtype == "float32" else self.cast("float32")

    def double(self):
        return self if self.dtype == "float64" else self.cast("float64")

    def long(self):
        return self if self.dtype == "int64" else self.cast("int64")

    def int(self):
        return self if self.dtype == "int32" else self.cast("int32")

    def bool(self):
        return self if self.dtype == "bool" else self.cast("bool")

    # ----------------------------------------------------------------- unary operators
    def __neg__(self):
        return _dispatch.apply("neg", self)

    def __pos__(self):
        return self

    def __invert__(self):
        return _dispatch.apply("logical_not", self)

    def __abs__(self):
        return _dispatch.apply("abs", self)


class _HookHandle:
    def __init__(self, hooks, fn):
        self._hooks, self._fn = hooks, fn
        hooks.append(fn)

    def remove(self):
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


# ``array_of(t)`` is ``t.array`` as a C-level getter, for per-call paths mapping it over many tensors
array_of = operator.attrgetter("_data")


def _host(data):
    return data if isinstance(data, (np.ndarray, np.generic)) else to_host(data)


def tensor(data, dtype=None, requires_grad=False, device=None):
    """Create a tensor from a Python number, nested list, numpy/cupy array or tensor.

    Python floats give float32, ints int64, bools bool; numpy arrays keep their dtype. The
    data is always copied (as ``torch.tensor`` does), so the tensor never aliases the input.
    """
    if isinstance(data, (list, tuple)) and any(isinstance(a, Tensor) for a in _flat(data)):
        if any(a._data is None for a in _flat(data) if isinstance(a, Tensor)):
            return _pack_symbolic(data, dtype)
        data, dtype = _scalars_of(data, dtype)
    if device is not None:
        device = _devices.as_device_name(device)
    if device is None and _DEFAULT_DEVICE[0] != "cpu" and not _on_device(data):
        device = _DEFAULT_DEVICE[0]
    xp = get_xp(device)
    if isinstance(data, Tensor):
        arr = data._concrete("d2s.tensor()") if data._data is not None else None
        if arr is None:
            # a copy without history, as eagerly (and a plain tensor: d2s.tensor(i) of a loop
            # counter standing for a Python int is an int64 tensor, which promotes as one)
            out = data.detach()
            dtype = dtype if dtype is not None else number_dtype(data)  # float(t) -> float32, as eagerly
            return out if dtype is None or as_dtype(dtype) == out.dtype else out.cast(dtype)
    else:
        arr = data
    if not isinstance(arr, np.ndarray) and hasattr(arr, "dtype") and not isinstance(arr, np.generic):
        src_xp = xp_of(arr)
        if device is None:
            xp = src_xp  # a device array stays on its device
        elif src_xp is not xp:
            arr = to_host(arr)  # another device: through the host, the one explicit copy
    src = arr
    if dtype is not None:
        dt = str(as_dtype(dtype))
        if isinstance(arr, (list, tuple, int, float)) and not isinstance(arr, bool):
            # Python numbers for a small integer dtype: PyTorch's conversion (uint8's -1 is 255,
            # 127.5 for int8 raises) where NumPy would raise or silently wrap
            checked = checked_values(arr, dt)
            arr = checked if checked is not None else arr
        arr = xp.asarray(_to_xp_input(arr, xp), dtype=dt)
    else:
        arr = _default_array(arr, xp)
    if arr is src:
        # d2s.tensor copies, as torch.tensor does: writing into the tensor (t[i] = v, an
        # optimizer step) must not change the caller's array, nor the other way round
        arr = arr.copy()
    if device is None and not isinstance(arr, np.ndarray):
        pass  # a cupy array stays on the GPU
    elif device is not None:
        arr = xp.asarray(arr)
    check_dtype(arr, "d2s.tensor")
    t = Tensor._make(arr)
    if requires_grad:
        t.requires_grad_(True)
    if _INFERENCE_THREADS[0]:
        _mark_inference((t,))
    return t


_PACKAGE_DIR = __file__.rsplit("/", 1)[0] + "/"


def _formatted_by_user():
    """Whether a symbolic tensor is being turned into text by the user's code while a program is
    built (``str(x.item())``, ``f"{v}"``): that text would be the placeholder's, not the value
    eager code formats. d2s's own messages (and ``print``, converted to a print op) may."""
    if STATE.builder is None:
        return False
    import sys
    frame = sys._getframe(2)
    if frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        return False
    # an error message (`assert c, f"bad {v}"`, `raise ValueError(f"... {v}")`): a program raises
    # it with the text it had when built, as before; the value cannot be shown, but no result differs
    caller = frame.f_back
    if caller is not None and caller.f_code.co_name == "convert_assert":
        return False
    return not _raised_next(frame)


_NEXT_OPS = {}


def _raised_next(frame):
    """Whether the instructions after the frame's current one raise before storing or returning."""
    import dis
    code = frame.f_code
    ins = _NEXT_OPS.get(code)
    if ins is None:
        if len(_NEXT_OPS) > 4096:
            _NEXT_OPS.clear()
        ins = _NEXT_OPS[code] = [(i.offset, i.opname) for i in dis.get_instructions(code)]
    for offset, op in ins:
        if offset <= frame.f_lasti:
            continue
        if op == "RAISE_VARARGS":
            return True
        if op.startswith(("STORE_", "RETURN_", "POP_TOP", "JUMP", "POP_JUMP", "YIELD")):
            return False
    return False


def _format_error(t, what):
    err = symbolic_value_error(t, what)
    err.args = (err.args[0].split("\nInside")[0] + "\nA string made from it while the program is built would "
                "hold a placeholder, not the value: return the value and format it after the call (print() "
                "prints at every call)",)
    return err


def check_dtype(arr, where):
    """Refuse, at the door, arrays of a dtype d2s does not compute with (uint32, complex, ...)."""
    if arr.dtype.name not in DTYPES:
        raise TypeError(f"{where}: arrays of dtype {arr.dtype.name} are not supported; d2s supports "
                        f"{', '.join(DTYPES)}: convert the array first (e.g. .astype('int64'))")


def number_dtype(a):
    """The dtype of the Python number that tensor ``a`` stands for in a program (a stand-in made
    by ``float(t)``, ``t.item()`` or a loop counter: ``d2s.static.weak_index``), as a
    tensor made from that number gets it (floats the default float dtype, ints int64); None
    where ``a`` is no stand-in."""
    if not getattr(type(a), "_d2s_stands_for_number", False):
        return None
    if str(a.dtype) == "bool":
        return "bool"
    return default_float() if a.dtype.is_floating_point else "int64"


def _leaf_dtype(a):
    if isinstance(a, Tensor):
        return number_dtype(a) or str(a.dtype)
    if isinstance(a, (bool, np.bool_)):
        return "bool"
    if isinstance(a, (int, np.integer)):
        return "int64" if isinstance(a, int) else np.dtype(type(a)).name
    if isinstance(a, float):
        return default_float()
    return np.asarray(a).dtype.name


def _scalars_of(data, dtype):
    """``d2s.tensor([t0, t1, 2.0])`` as ``torch.tensor``: each tensor element holds one value
    and counts as that number; the dtype is inferred over the elements (a float64 element
    gives float64, Python floats the default float dtype)."""
    leaves = list(_flat(data))
    for a in leaves:
        if isinstance(a, Tensor) and a.numel() != 1:
            raise ValueError(f"d2s.tensor: only one element tensors can be converted to Python scalars (an element "
                             f"of the list has shape {tuple(a.shape)}); use d2s.stack to join tensors")
    if dtype is None and leaves:
        dtype = result_type(*(_leaf_dtype(a) for a in leaves))

    def scalars(x):
        if isinstance(x, (list, tuple)):
            return [scalars(e) for e in x]
        return x._concrete("d2s.tensor()").reshape(()).item() if isinstance(x, Tensor) else x

    return scalars(data), dtype


def _pack_symbolic(data, dtype):
    """``d2s.tensor([a, b])`` where some element is a symbolic tensor (inside a program): the
    elements stacked (nested lists stack level by level), with the dtype eager code would give
    (float32 if any element is floating, else int64, or bool if all are bools) and, as eager
    code copies values, no gradient."""
    leaves = list(_flat(data))
    for a in leaves:
        shape = (a._var.type.shape if a._data is None else a._data.shape) if isinstance(a, Tensor) else ()
        if None in shape or int(np.prod(shape)) != 1:
            raise ValueError(f"d2s.tensor: only one element tensors can be converted to Python scalars (an element "
                             f"of the list has shape {a._var.type if a._data is None else tuple(a.shape)}); use "
                             "d2s.stack to join tensors")
    dt = str(as_dtype(dtype)) if dtype is not None else result_type(*(_leaf_dtype(a) for a in leaves))

    def pack(x):
        if isinstance(x, (list, tuple)):
            if not x:
                raise ValueError("d2s.tensor: an empty list among symbolic tensors has no shape to stack with")
            return _dispatch.apply("stack", *[pack(e) for e in x], axis=0)
        if isinstance(x, Tensor):
            x = x.detach()
            if x.ndim:
                x = _dispatch.apply("reshape", x, shape=[])
            return x if str(x.dtype) == dt else x.cast(dt)
        return tensor(x, dtype=dt)

    return pack(data)


def _to_xp_input(arr, xp):
    if xp is not np and isinstance(arr, np.ndarray):
        return xp.asarray(arr)
    if isinstance(arr, (list, tuple)) and any(isinstance(a, Tensor) for a in _flat(arr)):
        return np.asarray([_to_xp_input(a, np).tolist() if isinstance(a, Tensor) else a for a in arr])
    if isinstance(arr, Tensor):
        return arr._data
    return arr


def _flat(seq):
    for a in seq:
        if isinstance(a, (list, tuple)):
            yield from _flat(a)
        else:
            yield a


def _on_device(data):
    """Whether ``data`` is already a device's array (cupy, a registered device) or a tensor."""
    return isinstance(data, Tensor) or (not isinstance(data, (np.ndarray, np.generic)) and hasattr(data, "dtype")
                                        and xp_of(data) is not np)


def _default_array(data, xp):
    """Python data with d2s defaults: floats as float32, ints as int64."""
    if isinstance(data, np.ndarray):
        return data if xp is np else xp.asarray(data)
    if not isinstance(data, np.generic) and hasattr(data, "dtype") and xp_of(data) is not np:
        return data  # a device array (cupy, a registered device)
    if isinstance(data, np.generic):
        return xp.asarray(data)
    if isinstance(data, (list, tuple)) and any(isinstance(a, Tensor) for a in _flat(data)):
        data = [a.tolist() if isinstance(a, Tensor) else a for a in data]
    arr = np.asarray(data)
    if arr.dtype == np.float64:
        arr = arr.astype(default_float())
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "fb":
        raise TypeError(f"cannot make a tensor from {type(data).__name__} data of dtype {arr.dtype}")
    return arr if xp is np else xp.asarray(arr)


# ------------------------------------------------------------------ operators and methods
# Tensor is the bottom of the eager core; the code behind its operators and methods lives in
# the layers above it. Where each comes from:
#   * binary operators (+ - * / // % == != < <= > >= and their reflected forms): one per op of
#     the runtime registry with an ``infix`` trait, plus _MORE_OPERATORS; each is built by
#     d2s.dispatch.operator, whose eager fast path calls the kernel on plain arrays;
#   * unary operators and dtype shorthands: in the class above;
#   * the other methods (t.sum(), t.reshape(), x[i], x[i] = v, ...): the public wrappers of
#     d2s.ops (d2s/ops/*.py) declared with ``@tensor_method``, bound when d2s.ops is imported;
#   * in-place methods (add_, +=, zero_, ...): d2s.inplace, declared the same way.
def tensor_method(*names):
    """Decorator: the function (``fn(tensor, *args)``) is also a Tensor method, under its own
    name or under ``names``."""

    def deco(fn):
        for name in names or (fn.__name__,):
            setattr(Tensor, name, fn)
        return fn

    return deco


_DUNDERS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod",
            "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
# operators of ops the code generator does not write infix (``**`` stays np.power there)
_MORE_OPERATORS = {"__pow__": "pow", "__matmul__": "matmul", "__and__": "bitwise_and",
                   "__or__": "bitwise_or", "__xor__": "bitwise_xor",
                   "__lshift__": "bitwise_left_shift", "__rshift__": "bitwise_right_shift",
                   # no infix trait: their kernels check integer division by zero (ops/elementwise.py)
                   "__floordiv__": "floordiv", "__mod__": "mod"}


def _none_aware(method, result):
    """``t == None`` is False and ``t != None`` True (as in PyTorch), so ``t in [None, ...]``
    and comparisons against optional arguments work."""
    def compare(self, other):
        if other is None:
            return result
        return method(self, other)
    compare.__name__ = method.__name__
    return compare


def _bind_operators():
    ops = {f"__{_DUNDERS[op.infix]}__": op for op in OPS.values() if op.infix}
    ops.update((dunder, OPS[name]) for dunder, name in _MORE_OPERATORS.items())
    for dunder, op in ops.items():
        method = _dispatch.operator(op.name)
        method.__name__ = dunder
        if op.comparison:  # Python reflects comparisons by swapping them (a < b is b > a)
            if dunder in ("__eq__", "__ne__"):
                method = _none_aware(method, dunder == "__ne__")
            setattr(Tensor, dunder, method)
            continue
        setattr(Tensor, dunder, method)
        reflected = _dispatch.operator(op.name, reflected=True)
        reflected.__name__ = "__r" + dunder[2:]
        setattr(Tensor, reflected.__name__, reflected)
    Tensor.__hash__ = object.__hash__  # tensors hash by identity (dict keys, sets); == is element-wise


from . import dispatch as _dispatch  # noqa: E402 - dispatch builds on Tensor, defined above
from .autograd import engine as _engine, node as _node  # noqa: E402 - the autograd core builds on Tensor too
from .autograd.grad_mode import INFERENCE_THREADS as _INFERENCE_THREADS, mark_inference as _mark_inference, no_grad  # noqa: E402,E501
from . import views as _views  # noqa: E402 - views build on Tensor and dispatch

_bind_operators()
