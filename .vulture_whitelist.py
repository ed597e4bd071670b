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
_.__pow__  # Tensor.__pow__, set in d2s/ops/elementwise.py (PyTorch's special exponents)
_.__rtruediv__  # Tensor.__rtruediv__ and __rdiv__, set in d2s/ops/elementwise.py (number / tensor)
_.__rdiv__  # (the same)
_.__round__  # round() of a WeakNumber
_.__divmod__  # divmod(n, k) of a WeakNumber or NumberOrTensor (d2s.static.weak_index)
_.__rdivmod__  # divmod(k, n) of a WeakNumber or NumberOrTensor
_.__setitem__  # t[idx] = v
_._repr_svg_  # Jupyter shows a d2s.viz graph through it
_.visit_AnnAssign  # gast.NodeTransformer dispatches visit_<NodeType> by name

# Arguments that a signature must accept (PyTorch compatibility, Python protocols)
_.vectorize  # d2s.autograd.functional.jacobian/hessian(..., vectorize=False) as in PyTorch
_.foreach  # d2s.nn.utils.clip_grad_norm_/clip_grad_value_(..., foreach=None) as in PyTorch
_.owner  # StaticFunction.__get__(self, instance, owner): the descriptor protocol
_.protocol  # Module.__reduce_ex__(self, protocol): the pickle protocol

# torch.* names d2s re-exports (d2s.ops.__all__, d2s's lazy names): PyTorch's public API
_.broadcast_tensors  # d2s.broadcast_tensors (torch.broadcast_tensors)
_.block_diag  # d2s.block_diag
_.cartesian_prod  # d2s.cartesian_prod
_.hann_window  # d2s.hann_window and the other windows
_.hamming_window  # d2s.hamming_window (torch.hamming_window)
_.blackman_window  # d2s.blackman_window (torch.blackman_window)
_.bartlett_window  # d2s.bartlett_window (torch.bartlett_window)
_.kaiser_window  # d2s.kaiser_window (torch.kaiser_window)
_.logspace  # d2s.logspace
_.trapz  # d2s.trapz (torch.trapz)
_.cumulative_trapezoid  # d2s.cumulative_trapezoid (torch.cumulative_trapezoid)
_.promote_types  # d2s.promote_types (torch.promote_types)
_.scalar_tensor  # d2s.scalar_tensor (torch.scalar_tensor)
_.rsub  # d2s.rsub (torch.rsub)
_.frobenius_norm  # d2s.frobenius_norm (torch.frobenius_norm)
_.norm_except_dim  # d2s.norm_except_dim (torch.norm_except_dim)
_.constant_pad_nd  # d2s.constant_pad_nd (torch.constant_pad_nd)
_.set_deterministic_debug_mode  # d2s.set_deterministic_debug_mode (torch's)
_.get_deterministic_debug_mode  # d2s.get_deterministic_debug_mode (torch's)
_.init_num_threads  # d2s.init_num_threads (torch's)
_.is_warn_always_enabled  # d2s.is_warn_always_enabled (torch's)
_.is_vulkan_available  # d2s.is_vulkan_available (torch's)
_.is_distributed  # d2s.is_distributed (torch's)
_.chain_matmul  # d2s.chain_matmul (torch.chain_matmul), a lazy name
_.get_num_threads  # d2s.get_num_threads and PyTorch's other global switches (d2s/settings.py)
_.set_num_threads  # d2s.set_num_threads (torch.set_num_threads)
_.get_num_interop_threads  # d2s.get_num_interop_threads (torch.get_num_interop_threads)
_.set_num_interop_threads  # d2s.set_num_interop_threads (torch.set_num_interop_threads)
_.get_float32_matmul_precision  # d2s.get_float32_matmul_precision (torch.get_float32_matmul_precision)
_.set_float32_matmul_precision  # d2s.set_float32_matmul_precision (torch.set_float32_matmul_precision)
_.use_deterministic_algorithms  # d2s.use_deterministic_algorithms (torch.use_deterministic_algorithms)
_.are_deterministic_algorithms_enabled  # d2s.are_deterministic_algorithms_enabled (torch.are_deterministic_algorithms_enabled)
_.is_deterministic_algorithms_warn_only_enabled  # d2s.is_deterministic_algorithms_warn_only_enabled (torch.is_deterministic_algorithms_warn_only_enabled)
_.is_anomaly_enabled  # d2s.is_anomaly_enabled (torch.is_anomaly_enabled)
_.is_anomaly_check_nan_enabled  # d2s.is_anomaly_check_nan_enabled (torch.is_anomaly_check_nan_enabled)

# Public API that users call (API.md, README, PyTorch / Paddle names); the tests use some
_.int32  # the dtype d2s.int32
_.rand  # d2s.rand
_.randn  # d2s.randn
_.div  # d2s.div
_.pow  # d2s.pow
_.neg  # d2s.neg
_.le  # d2s.le
_.logical_xor  # d2s.logical_xor
_.subtract  # d2s.subtract, PyTorch's alias of sub (also a Tensor method)
_.multiply  # d2s.multiply, PyTorch's alias of mul
_.divide  # d2s.divide, PyTorch's alias of div
_.absolute  # d2s.absolute, PyTorch's alias of abs
_.vdot  # d2s.vdot (real tensors: dot)
_.ger  # d2s.ger, PyTorch's old name of outer
_.arcsin  # d2s.arcsin and the other NumPy-style aliases PyTorch has (arccos, arctan, arcsinh, ...)
_.arccos  # d2s.arccos
_.arctan  # d2s.arctan
_.arcsinh  # d2s.arcsinh
_.arccosh  # d2s.arccosh
_.arctanh  # d2s.arctanh
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
_.erf32  # native/_lib.py: generated native code calls it (L.erf32)
_.erfc32  # native/_lib.py: generated native code calls it (L.erfc32)
_.bdim  # native/_lib.py: generated native code calls it
_.check_dim  # native/_lib.py: generated native code calls it
_.stack_push0  # native/_lib.py: generated native code calls it (ragged stacks)
_.stack_from_py  # native/_lib.py: generated native code calls it (ragged stacks)
_.stack_buf_out  # native/_lib.py: generated native code calls it (ragged stacks)
_.stack_shapes_out  # native/_lib.py: generated native code calls it (ragged stacks)
_.stack_buf_view  # native/_lib.py: generated native code calls it (a stack's rows, read in place)
_.smatmul  # native/_lib.py: generated native code calls it (products through MKL, native/mkl.py)
_.dmatmul  # native/_lib.py: generated native code calls it (products through MKL, native/mkl.py)
_.multinomial_rows  # native/_lib.py: generated native code calls it (sampling, ops/random.py's lowering)
_.smatmul_into  # native/_lib.py: generated native code calls it (batched products, one gemm per slice)
_.dmatmul_into  # native/_lib.py: generated native code calls it (batched products, one gemm per slice)
_.fmin  # native/_lib.py: generated native code calls it (ops/pointwise.py's lowering)
_.floordiv_int  # native/_lib.py: generated native code calls it (integer //, raising on zero)
_.mod_int  # native/_lib.py: generated native code calls it (integer %, raising on zero)
_.fmod_int  # native/_lib.py: generated native code calls it (integer fmod, raising on zero)
_.truncdiv_int  # native/_lib.py: generated native code calls it (div(rounding_mode='trunc'))
_.nan_to_num  # native/_lib.py: generated native code calls it
_.blas_name  # native/mkl.py: which BLAS the native products call; benchmarks print it, tests assert it
_.TANH_MAX_ULP  # native/_lib.py: the documented accuracy, asserted by tests/runtime/native/test_native_math.py
_.ERF_MAX_ULP  # native/_lib.py: the documented accuracy, asserted by tests/runtime/native/test_native_math.py
_.dispatcher  # native.compile_lowered's fn.dispatcher: numba's dispatcher, read by tests (cache hit counters)
_.set_default_device  # public API (d2s.set_default_device, as torch.set_default_device); tests/conftest.py
_.register_device  # public runtime hook: tests/conftest.py registers the "strict" test device with it
_.unregister_device  # its inverse (tests/strict_device.py)
_.native_origin  # public Executor attribute: where the native code came from ("disk cache", "compiled"); tests/runtime/native/test_native_warm_cache.py

# d2s_runtime/blas.py
_.threads  # blas.threads(): numpy's BLAS thread count, for callers and tests checking it is restored

# d2s/serialization.py, d2s_runtime/serialize.py
_.weights_only  # d2s.load(..., weights_only=True): PyTorch's keyword, accepted (d2s only ever loads data)
_.load_program  # public runtime API (d2s_runtime.serialize.load_program): one saved program, read as one save

# PyTorch's creation, shape, indexing, random and dtype surface (d2s.ops.creation, shape, rearrange,
# selection, random, types; d2s.dtypes): public names users call, each tested in tests/ops and tests/test_dtypes.py
_.memory_format  # accepted as PyTorch's (d2s tensors have one layout): zeros_like(..., memory_format=), contiguous()
_.pin_memory  # accepted as PyTorch's (no pinned memory on numpy): empty(..., pin_memory=), new_zeros, randperm
_.sparse_grad  # gather(..., sparse_grad=False) as in PyTorch (d2s's gradients are dense)
_.output_size  # repeat_interleave(..., output_size=) as in PyTorch (the size is computed anyway)
_.non_blocking  # Tensor.type(dtype, non_blocking=False) as in PyTorch
_.smallest_normal  # d2s.finfo(...).smallest_normal, as torch.finfo
_.is_complex  # d2s.is_complex(t), Tensor.is_complex(), dtype.is_complex (always False)
_.is_signed  # d2s dtype .is_signed, as torch.dtype
_.set_default_dtype  # d2s.set_default_dtype, as torch.set_default_dtype
_.bfloat16  # d2s.bfloat16: exists so model files import; refused on use
_.half  # d2s.half, Tensor.half()
_.short  # d2s.short, Tensor.short()
_.int8  # the dtype d2s.int8
_.from_numpy  # d2s.from_numpy
_.get_rng_state  # d2s.get_rng_state
_.set_rng_state  # d2s.set_rng_state
_.rand_like  # d2s.rand_like
_.randn_like  # d2s.randn_like
_.randint_like  # d2s.randint_like
_.randperm  # d2s.randperm
_.hstack  # d2s.hstack
_.dstack  # d2s.dstack
_.column_stack  # d2s.column_stack
_.row_stack  # d2s.row_stack (= vstack)
_.bucketize  # d2s.bucketize
_.mH  # Tensor.mH (= mT: d2s has no complex dtypes)
_.moveaxis  # d2s.moveaxis (= movedim)
_.swapdims  # d2s.swapdims (= swapaxes)
_.is_tensor  # d2s.is_tensor
_.FloatTensor  # d2s.FloatTensor(...): PyTorch's legacy constructor (and the ones below)
_.DoubleTensor  # d2s.DoubleTensor(...)
_.HalfTensor  # d2s.HalfTensor(...)
_.LongTensor  # d2s.LongTensor(...)
_.IntTensor  # d2s.IntTensor(...)
_.ShortTensor  # d2s.ShortTensor(...)
_.CharTensor  # d2s.CharTensor(...)
_.ByteTensor  # d2s.ByteTensor(...)
_.BoolTensor  # d2s.BoolTensor(...)

# d2s/nn: PyTorch's public names, called by user code (tests/nn/test_*.py check them against PyTorch)
_.batch_norm  # F.batch_norm, PyTorch's functional form (the layers call batch_norm_train/eval directly)
_.instance_norm  # F.instance_norm, PyTorch's functional form
_.upsample  # F.upsample, PyTorch's older name of F.interpolate
_.upsample_nearest  # F.upsample_nearest, PyTorch's alias
_.upsample_bilinear  # F.upsample_bilinear, PyTorch's alias
_.transposed  # Conv layers' attribute, as PyTorch's (user code reads it)

# PyTorch's public names that model code calls and d2s itself does not (each tested against PyTorch in tests/nn,
# tests/distributions and tests/ops)
_.support  # Distribution.support, as torch.distributions
_.stddev  # Distribution.stddev
_.icdf  # Distribution.icdf
_.has_enumerate_support  # Distribution.has_enumerate_support
_.param_shape  # Categorical/Bernoulli.param_shape
_.enumerate_support  # Distribution.enumerate_support
_.set_default_validate_args  # Distribution.set_default_validate_args
_.sample_n  # Distribution.sample_n (deprecated in PyTorch, still called)
_.perplexity  # Distribution.perplexity
_._kl_normal_normal  # registered with @register_kl (found through the KL table)
_._kl_bernoulli_bernoulli  # registered with @register_kl
_._kl_categorical_categorical  # registered with @register_kl
_._kl_uniform_uniform  # registered with @register_kl
_._kl_independent_independent  # registered with @register_kl
_.relu_  # F.relu_ and the other in-place spellings below
_.relu6  # F.relu6
_.elu_  # F.elu_
_.leaky_relu_  # F.leaky_relu_
_.hardtanh_  # F.hardtanh_
_.threshold_  # F.threshold_
_.selu_  # F.selu_ (torch.selu_)
_.celu_  # F.celu_ (torch.celu_)
_.rnn_cell  # F.rnn_cell (torch.rnn_tanh_cell's functional form; the cells call it through F)
_.gru_cell  # F.gru_cell
_.lstm_cell  # F.lstm_cell
_.dirac  # nn.init.dirac and the other deprecated init aliases PyTorch keeps
_.xavier_uniform  # nn.init.xavier_uniform
_.xavier_normal  # nn.init.xavier_normal
_.kaiming_uniform  # nn.init.kaiming_uniform
_.kaiming_normal  # nn.init.kaiming_normal
_.orthogonal  # nn.init.orthogonal
_.register_module  # Module.register_module
_.get_parameter  # Module.get_parameter
_.get_buffer  # Module.get_buffer
_.register_forward_pre_hook  # Module.register_forward_pre_hook
_.register_forward_hook  # Module.register_forward_hook
_.always_call  # register_forward_hook(..., always_call=False), PyTorch's keyword
_._flat_weights  # RNN._flat_weights, read by model code as in PyTorch
_.flatten_parameters  # RNN.flatten_parameters (a no-op, as on the CPU)
_.from_pretrained  # Embedding.from_pretrained, EmbeddingBag.from_pretrained
_.use_nested_tensor  # TransformerEncoder.use_nested_tensor, PyTorch's attribute
_.generate_square_subsequent_mask  # Transformer.generate_square_subsequent_mask
_.is_cuda  # PackedSequence.is_cuda
_.var_mean  # d2s.var_mean
_.std_mean  # d2s.std_mean
_.stable  # sort(..., stable=False), argsort(..., stable=False): d2s's sorts are always stable

# d2s/optim, d2s/data
_.register_step_pre_hook  # public API (torch.optim.Optimizer's); tests/optim/test_optimizers.py
_.register_step_post_hook  # public API (torch.optim.Optimizer's); tests/optim/test_optimizers.py
_.worker_pids  # public attribute of a DataLoader iterator with workers; tests/data/test_workers.py reads it
_._on_queue_feeder_error  # called by multiprocessing's queue feeder thread when a batch cannot be pickled

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
_.__class_getitem__  # d2s.jit.Final[int]: Python calls it for the subscript
_.greater_equal  # d2s.greater_equal and the other PyTorch spellings of the comparisons (d2s/ops/elementwise.py)
_.less  # d2s.less
_.less_equal  # d2s.less_equal
_.not_equal  # d2s.not_equal
_.cdist  # d2s.cdist, as torch.cdist (tests/ops/test_linalg.py)
_.register_graph_backend  # d2s_runtime.gpu: a device's graph backend (tests/strict_device.py registers the fake one)
_.unregister_graph_backend  # its inverse (tests/strict_device.py)
_.lower_kernels  # d2s_runtime.gpu.cuda_lower's entry (tests/runtime/gpu/test_cuda_lower.py; not wired into capture yet)
_.SOURCES  # d2s_runtime.gpu.kernels: every own kernel source, compiled by the NVRTC test
_.recaptures  # GraphTier.recaptures: captures after the first, for callers and benchmarks

# d2s/jit/static_function.py
_.py_state_keep  # holds the argument objects object_guards follows, so an id-keyed signature cannot be reused by a new object

# d2s/ops/counting.py
_.isin  # torch.isin: d2s.isin, exported with the ops family's public names

# d2s/amp.py
_.get_growth_factor  # GradScaler.get_growth_factor: PyTorch's public method, called by training scripts
_.set_growth_factor  # GradScaler.set_growth_factor: PyTorch's public method, called by training scripts
_.get_backoff_factor  # GradScaler.get_backoff_factor: PyTorch's public method, called by training scripts
_.set_backoff_factor  # GradScaler.set_backoff_factor: PyTorch's public method, called by training scripts
_.get_growth_interval  # GradScaler.get_growth_interval: PyTorch's public method, called by training scripts
_.set_growth_interval  # GradScaler.set_growth_interval: PyTorch's public method, called by training scripts
_.is_enabled  # GradScaler.is_enabled: PyTorch's public method, called by training scripts
_.get_autocast_cpu_dtype  # torch's autocast queries, exported by name (d2s.amp's lazy table): PyTorch scripts call them
_.get_autocast_gpu_dtype  # (same)
_.get_autocast_xla_dtype  # (same)
_.is_autocast_cpu_enabled  # (same)
_.is_autocast_xla_enabled  # (same)
_.is_autocast_cache_enabled  # (same)
_.clear_autocast_cache  # (same)
_.autocast_increment_nesting  # (same)
_.autocast_decrement_nesting  # (same)

# public torch.nn.functional names reached through the lazy name tables (d2s.nn.functional, d2s.*)
_.rrelu_  # F.rrelu_
_.gumbel_softmax  # F.gumbel_softmax
_.grid_sample  # F.grid_sample
_.affine_grid  # F.affine_grid
_.lp_pool3d  # F.lp_pool3d
_.pdist  # torch.pdist / F.pdist

# runtime/d2s_runtime/blas.py
_.enter_loop  # called by generated code around a loop of small products, looked up by name (codegen.g_blas)
