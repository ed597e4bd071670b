"""The "strict" test device (tests/strict_device.py) refuses what cupy refuses and counts what
makes cupy wait, and d2s moves data between it and the host only where asked to."""
import numpy as np
import pytest

import d2s
import strict_device as sd
from d2s import nn
from d2s_runtime.device import get_xp, known_devices, register_device, to_host
from strict_device import StrictArray, xp

RNG = np.random.default_rng(0)


def _s(a):
    return xp.asarray(np.asarray(a))


# ------------------------------------------------------------------ the array type, as cupy
def test_implicit_conversion_to_numpy_raises_like_cupy():
    s = _s([1.0, 2.0])
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(s)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.array([s, s])


def test_numpy_functions_refuse_strict_arrays():
    s = _s([1.0, 2.0])
    with pytest.raises(TypeError, match="numpy.sum was called on a strict"):
        np.sum(s)
    with pytest.raises(TypeError, match="concatenate"):
        np.concatenate([s, s])
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.add(s, s)
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.exp(s)


def test_host_arrays_are_refused_as_operands_like_cupy():
    s, h = _s([1.0, 2.0]), np.array([1.0, 2.0])
    for bad in (lambda: s + h, lambda: h + s, lambda: s * h, lambda: xp.add(s, h), lambda: xp.where(s > 1, s, h)):
        with pytest.raises(TypeError, match="Unsupported type"):
            bad()
    # numpy and Python scalars are fine on either side, and give strict arrays
    for ok in (np.float32(2) * s, s * np.float64(2), 2 * s, s + 1.5, np.int64(1) + s):
        assert type(ok) is StrictArray


def test_reductions_and_scalar_indexing_give_0d_arrays():
    s = _s([[1.0, 2.0], [3.0, 4.0]])
    for r in (s.sum(), xp.sum(s), s.max(), xp.mean(s), s[0, 1], s[0][0], xp.dot(s[0], s[1])):
        assert type(r) is StrictArray and r.ndim == 0
    assert type(xp.float32(1.5)) is np.float32  # dtypes are numpy's, as in cupy


def test_promotion_follows_nep50():
    f32 = _s(np.ones(3, "float32"))
    assert (f32 + 1.5).dtype == np.float32  # a Python scalar is weak
    assert (f32 + _s(np.float64(1.5))).dtype == np.float64  # a 0-d array is not
    assert (_s(np.arange(3)) + 2.5).dtype == np.float64
    assert (_s(np.arange(3, dtype="int32")) + 2).dtype == np.int32


def test_host_synchronizations_are_counted():
    s = _s(3.0)
    with sd.counting() as c:
        float(s), int(s), bool(s), s.item(), s.tolist(), repr(s), f"{s:.2f}"
        assert c.syncs == 7 and c.to_host == 0
    with sd.counting() as c:
        s + s, s.sum(), s.shape, s.ndim, s.dtype, xp.exp(s), len(_s([1.0]))
        assert c.syncs == 0
    with sd.counting() as c:
        m = _s([1.0, -1.0, 2.0])
        m[m > 0], xp.nonzero(m)  # the output size depends on the data: cupy syncs
        assert c.sync_kinds == ["boolean-mask index", "nonzero"]


def test_asnumpy_is_the_explicit_copy_and_asarray_the_upload():
    h = np.arange(4.0)
    with sd.counting() as c:
        s = xp.asarray(h)
        assert c.to_device == 1
        back = sd.asnumpy(s)
        assert type(back) is np.ndarray and c.to_host == 1 and c.syncs == 1
        s.get()
        assert c.to_host == 2
        s[1:] = np.zeros(3)  # a host value written into a device array is uploaded
        assert c.to_device == 2 and s.get()[1] == 0.0
    np.testing.assert_array_equal(back, h)
    s[...] = xp.asarray(h)
    back[0] = 9.0  # a copy: the device array does not change
    assert sd.asnumpy(s)[0] == 0.0


def test_iteration_yields_device_arrays_without_syncs():
    s = _s([[1.0, 2.0], [3.0, 4.0]])
    with sd.counting() as c:
        rows = list(s)
        assert c.syncs == 0
    assert all(type(r) is StrictArray and r.shape == (2,) for r in rows)
    with pytest.raises(TypeError, match="0-d"):
        iter(s.sum()).__next__()


# ------------------------------------------------------------------ registration
def test_registered_only_by_the_tests():
    assert "strict" in known_devices() and get_xp("strict") is xp
    with pytest.raises(ValueError, match="built-in"):
        register_device("gpu", xp, asnumpy=sd.asnumpy)
    with pytest.raises(ValueError, match="unknown device 'tpu'.*'strict'"):
        get_xp("tpu")
    src = open(d2s.__file__.replace("__init__.py", "") + "../runtime/d2s_runtime/device.py").read()
    assert "strict" not in src  # the runtime has the hook, not the device


# ------------------------------------------------------------------ d2s on the strict device
def test_tensors_move_only_when_asked():
    a = RNG.standard_normal((2, 3)).astype("float32")
    t = d2s.tensor(a, device="strict")
    assert t.device == "strict" and type(t._data) is StrictArray
    with sd.counting() as c:
        u = (t * 2).exp().sum(1)
        assert c.syncs == 0 and u.device == "strict"
        host = u.numpy()
        assert c.to_host == 1 and type(host) is np.ndarray
    np.testing.assert_allclose(host, np.exp(a * 2).sum(1), rtol=1e-6)
    back = t.to("cpu")
    assert back.device == "cpu" and back.to("strict").device == "strict"
    np.testing.assert_array_equal(back.numpy(), a)


def test_mixing_a_host_array_with_a_device_tensor_is_a_clear_error():
    t = d2s.tensor(np.ones(3, "float32"), device="strict")
    with pytest.raises(RuntimeError, match=r"different devices \(cpu and strict\).*\.to\('strict'\)"):
        t + np.ones(3, "float32")
    # Python data has no device: it goes to the tensor's, as scalars do
    assert (d2s.where([True, False, True], t, [0.0, 1.0, 2.0])).device == "strict"
    assert (t + np.float32(1)).device == "strict"


def test_module_to_and_state_dict_across_devices():
    d2s.manual_seed(0)
    m = nn.Linear(3, 2)
    x = d2s.randn(4, 3)
    want = m(x).numpy()
    m.to("strict")
    assert all(p.device == "strict" for p in m.parameters())
    np.testing.assert_allclose(m(x.to("strict")).numpy(), want, rtol=1e-6)
    cpu = nn.Linear(3, 2)
    cpu.load_state_dict(m.state_dict())  # strict arrays into cpu parameters
    np.testing.assert_allclose(cpu(x).numpy(), want, rtol=1e-6)
    m.to("cpu")
    assert all(type(p._data) is np.ndarray for p in m.parameters())


def test_default_device_places_new_tensors_and_parameters():
    prev = d2s.set_default_device("strict")
    try:
        assert d2s.get_default_device() == "strict"
        assert d2s.tensor([1.0]).device == d2s.zeros(2).device == d2s.randn(2).device == "strict"
        assert nn.Linear(2, 2).weight.device == "strict"
        assert d2s.tensor([1.0], device="cpu").device == "cpu"
    finally:
        d2s.set_default_device(prev)
    assert d2s.tensor([1.0]).device == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        d2s.set_default_device("tpu")


def test_loaded_model_on_another_device_is_a_clear_error(tmp_path):
    f = d2s.jit.to_static(lambda x: x * 2.0)
    x = d2s.tensor(np.ones((2, 3), "float32"))
    f(x)
    d2s.jit.save(f, str(tmp_path / "m"))
    on_cpu = d2s.jit.load(str(tmp_path / "m"), device="cpu")
    with pytest.raises(RuntimeError, match="input .* is on device 'strict' but the model was loaded on 'cpu'"):
        on_cpu(x.to("strict"))
    on_strict = d2s.jit.load(str(tmp_path / "m"), device="strict")
    out = on_strict(np.ones((2, 3), "float32"))  # host data is uploaded, as Executor.run does
    assert out.device == "strict"
    np.testing.assert_array_equal(to_host(out._data), 2 * np.ones((2, 3)))


def test_gradients_flow_back_across_devices():
    x = d2s.tensor([1.0, 2.0], requires_grad=True)
    (x.to("strict") ** 2).sum().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    z = d2s.tensor([1.0, 2.0], device="strict", requires_grad=True)
    (z.to("cpu") * 3.0).sum().backward()
    assert z.grad.device == "strict"
    np.testing.assert_array_equal(z.grad.numpy(), [3.0, 3.0])


def _dropout_twice(x):
    y = d2s.nn.functional.dropout(x, 0.5, training=True)
    if y.sum() > 0:  # random draws under control flow: a create_graph backward replays them
        y = y * 3.0
    return y


@pytest.mark.parametrize("create_graph", [False, True])
def test_random_ops_under_grad_on_a_generator_without_readable_state(create_graph):
    # cupy's RandomState (cuRAND) has no get_state/set_state; a converted function with random
    # draws under grad snapshots the generator anyway, and a replay draws the same values
    f = d2s.jit.to_static(_dropout_twice)
    x = d2s.tensor(np.linspace(1.0, 2.0, 40, dtype="float32").reshape(5, 8), device="strict", requires_grad=True)
    d2s.manual_seed(3)
    out = f(x)
    (g,) = d2s.grad(out.sum(), x, create_graph=create_graph)
    kept = to_host(out._data) != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(to_host(g._data), kept * 6.0, rtol=1e-6)


def test_flags_are_cupys_no_read_only_arrays():
    s = _s(np.ones((2, 3)))
    assert s.flags.c_contiguous and s.flags["OWNDATA"] and not s.T.flags.c_contiguous
    assert not hasattr(s.flags, "writeable")
    assert not hasattr(xp.random.RandomState(0), "get_state")  # cuRAND state is not readable


def test_checkpoint_recomputes_the_same_device_dropout_mask():
    from d2s.utils.checkpoint import checkpoint
    x = d2s.tensor(np.linspace(1.0, 2.0, 40, dtype="float32").reshape(5, 8), device="strict", requires_grad=True)
    d2s.manual_seed(1)
    out = checkpoint(lambda t: d2s.nn.functional.dropout(t, 0.5, True) * 3.0, x)
    out.sum().backward()
    kept = to_host(out._data) != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(to_host(x.grad._data), kept * 6.0, rtol=1e-6)
