# Names vulture reports as unused that are used: each line names one, with the reason.
# (vulture counts a name as used wherever it appears; this file is only parsed, never run.)
# tests/test_dead_code.py fails on any finding not here: delete dead code, or add it here
# with its reason. Decorator-registered functions are skipped in pyproject.toml.
_ = None

# Python calls these by name: protocols and module-level __getattr__ (PEP 562)
_.__getattr__  # lazy attributes of d2s, d2s.jit and d2s_runtime
_.__neg__  # operators installed as class attributes (Tensor, WeakNumber)
_.__pos__  # operator of Tensor
_.__abs__  # operator of Tensor and WeakNumber
_.__invert__  # operator of Tensor
_.__round__  # round() of a WeakNumber
_.__setitem__  # t[idx] = v
_._repr_svg_  # Jupyter shows a d2s.viz graph through it
_.visit_AnnAssign  # gast.NodeTransformer dispatches visit_<NodeType> by name

# Arguments that a signature must accept (PyTorch compatibility, Python protocols)
_.vectorize  # d2s.autograd.functional.jacobian/hessian(..., vectorize=False) as in PyTorch
_.foreach  # d2s.nn.utils.clip_grad_norm_/clip_grad_value_(..., foreach=None) as in PyTorch
_.owner  # StaticFunction.__get__(self, instance, owner): the descriptor protocol
_.protocol  # Module.__reduce_ex__(self, protocol): the pickle protocol

# Public API that users call (API.md, README, PyTorch / Paddle names); the tests use some
_.int32  # the dtype d2s.int32
_.rand  # d2s.rand
_.randn  # d2s.randn
_.div  # d2s.div
_.pow  # d2s.pow
_.neg  # d2s.neg
_.le  # d2s.le
_.logical_xor  # d2s.logical_xor
_.unstack  # d2s.unstack
_.add_n  # d2s.add_n
_.one_hot  # d2s.one_hot
_.double  # Tensor.double(), Module.double()
_.long  # Tensor.long()
_.expand  # Tensor.expand()
_.detach_  # Tensor.detach_()
_.retain_grad  # Tensor.retain_grad()
_.register_hook  # Tensor.register_hook(fn)
_.cpu  # Tensor.cpu()
_.gpu  # Tensor.gpu()
_.from_tensor  # InputSpec.from_tensor(t), as paddle.static.InputSpec.from_tensor
_.zeros_  # d2s.nn.init.zeros_
_.kaiming_normal_  # d2s.nn.init.kaiming_normal_
_.xavier_uniform_  # d2s.nn.init.xavier_uniform_
_.xavier_normal_  # d2s.nn.init.xavier_normal_
_.register_parameter  # nn.Module.register_parameter
_.register_buffer  # nn.Module.register_buffer
_.set_epoch  # DistributedSampler.set_epoch, as in PyTorch
_.is_static  # StaticFunction.is_static (README)
_.programs  # StaticFunction.programs (API.md)
_.clear_cache  # StaticFunction.clear_cache()
_.cache_info  # StaticFunction.cache_info() (docs)
_.trace_ok  # Comparison.trace_ok, the result of d2s.trace.compare
_.static_ok  # Comparison.static_ok, the result of d2s.trace.compare
_.render  # d2s.viz graph .render(path, format='svg') (API.md)
_.comm_seconds  # DistributedDataParallel.comm_seconds, read by the benchmarks
_.codegen_error  # Executor.codegen_error: why mode='auto' fell back to the interpreter

# native backend: helpers called by name from generated source (runtime/d2s_runtime/native/lower.py)
_.tanh32  # native/_lib.py: generated native code calls it (L.tanh32)
_.bdim  # native/_lib.py: generated native code calls it
_.check_dim  # native/_lib.py: generated native code calls it
_.stack_push0  # native/_lib.py: generated native code calls it (ragged stacks)
_.stack_from_py  # native/_lib.py: generated native code calls it (ragged stacks)
_.stack_buf_out  # native/_lib.py: generated native code calls it (ragged stacks)
_.stack_shapes_out  # native/_lib.py: generated native code calls it (ragged stacks)
_.stack_buf_view  # native/_lib.py: generated native code calls it (a stack's rows, read in place)
_.smatmul  # native/_lib.py: generated native code calls it (products through MKL, native/mkl.py)
_.dmatmul  # native/_lib.py: generated native code calls it (products through MKL, native/mkl.py)
_.blas_name  # native/mkl.py: which BLAS the native products call; benchmarks print it, tests assert it
_.TANH_MAX_ULP  # native/_lib.py: the documented accuracy, asserted by tests/runtime/native/test_native_math.py
_.dispatcher  # native.compile_lowered's fn.dispatcher: numba's dispatcher, read by tests (cache hit counters)
_.set_default_device  # public API (d2s.set_default_device, as torch.set_default_device); tests/conftest.py
_.register_device  # public runtime hook: tests/conftest.py registers the "strict" test device with it
_.unregister_device  # its inverse (tests/strict_device.py)
_.native_origin  # public Executor attribute: where the native code came from ("disk cache", "compiled"); tests/runtime/native/test_native_warm_cache.py

# d2s_runtime/blas.py
_.leave  # called by generated code, looked up by name (codegen.g_blas)
_.threads  # blas.threads(): numpy's BLAS thread count, for callers and tests checking it is restored

# PyTorch's signatures, accepted for model files (devices, grad modes, autograd.Function, TorchScript)
_.check_available  # torch.accelerator.current_accelerator(check_available=): accepted
_.volatile  # torch.autograd.Variable(volatile=): accepted and ignored, as in PyTorch >= 0.4
_.non_blocking  # Tensor.to / Module.to / Tensor.cuda (non_blocking=): accepted, copies are synchronous
_.memory_format  # Tensor.to / cpu / cuda (memory_format=): accepted, d2s has one layout
_.the_type  # torch.jit.annotate(the_type, the_value): the type is only a hint
_.mark_non_differentiable  # public API of a custom Function's ctx (PyTorch's)
_.set_materialize_grads  # public API of a custom Function's ctx (PyTorch's)
_.mark_dirty  # public API of a custom Function's ctx (PyTorch's)
_.is_cuda  # public Tensor attribute (PyTorch's)
_.get_device  # public Tensor method (PyTorch's)
_.is_inference  # public Tensor method (PyTorch's), tests/autograd/test_grad_mode.py
