"""d2s.device and the device names model files touch at import (d2s/devices.py, d2s/cuda.py,
d2s/accelerator.py, d2s/backends): PyTorch's spellings over d2s's 'cpu'/'gpu'."""
import pickle

import numpy as np
import pytest

import d2s
from d2s import nn


def test_device_objects_as_torch_device():
    cpu, gpu = d2s.device("cpu"), d2s.device("cuda", 0)
    assert (cpu.type, cpu.index, str(cpu), repr(cpu)) == ("cpu", None, "cpu", "device(type='cpu')")
    assert (gpu.type, gpu.index, str(gpu), repr(gpu)) == ("cuda", 0, "cuda:0", "device(type='cuda', index=0)")
    assert gpu == "cuda" and gpu == "gpu" and gpu == "cuda:0" and gpu == d2s.device("cuda:0") and gpu != "cpu"
    assert d2s.device("cuda:1") != "cuda:0" and d2s.device(gpu) is gpu and d2s.device(0) == "cuda:0"
    assert pickle.loads(pickle.dumps(gpu)) == gpu
    for bad in ("tpu", "cuda:x", "cpu:1"):
        with pytest.raises(RuntimeError):
            d2s.device(bad)


def test_tensor_device_compares_with_every_spelling():
    x = d2s.ones(2)
    assert x.device == "cpu" and x.device == d2s.device("cpu") and x.device.type == "cpu"
    assert not x.is_cuda and x.get_device() == -1 and {x.device: 1}["cpu"] == 1


def test_to_takes_devices_dtypes_and_tensors():
    x = d2s.ones(2)
    assert x.to("cpu") is x and x.to(d2s.device("cpu")) is x and x.cpu() is x and x.to(x) is x
    assert x.to(d2s.float64).dtype == d2s.float64 and x.to("cpu", d2s.float64).dtype == d2s.float64
    assert x.to(dtype="float64").dtype == d2s.float64
    assert x.to(d2s.ones(1, dtype="float64")).dtype == d2s.float64
    assert x.to(copy=True) is not x
    with pytest.raises(TypeError, match="neither a device"):
        x.to([1])


@pytest.mark.skipif(d2s.cuda.is_available(), reason="checks the error without a GPU")
def test_asking_for_a_missing_gpu_names_what_is_missing():
    x = d2s.ones(2)
    for move in (x.cuda, lambda: x.to("cuda:0"), lambda: x.to(d2s.device("cuda")),
                 lambda: nn.Linear(2, 2).cuda(), lambda: d2s.zeros(2, device="cuda:0")):
        with pytest.raises(RuntimeError, match="cupy|GPU"):
            move()


def test_modules_move_and_cast_as_in_pytorch():
    m = nn.Linear(2, 2)
    w = m.weight
    assert m.to("cpu") is m and m.cpu() is m and m.to(d2s.device("cpu")) is m
    assert m.to(d2s.float64).weight.dtype == d2s.float64 and m.weight is w
    assert m.to("cpu", "float32").weight.dtype == d2s.float32
    assert m.to(d2s.ones(1, dtype="float64")).weight.dtype == d2s.float64


def test_cuda_accelerator_and_backends_queries():
    available = d2s.cuda.is_available()
    assert d2s.cuda.device_count() == (d2s.cuda.device_count() if available else 0)
    assert d2s.accelerator.is_available() == available
    assert (d2s.accelerator.current_accelerator() is None) == (not available)
    assert d2s.backends.mps.is_available() is False and d2s.cuda.current_device() == 0
    d2s.cuda.synchronize()
    d2s.cuda.empty_cache()
    before = (d2s.backends.cudnn.benchmark, d2s.backends.cudnn.deterministic)
    try:
        d2s.backends.cudnn.benchmark = True
        d2s.backends.cudnn.deterministic = True
        d2s.backends.cuda.matmul.allow_tf32 = True
        assert d2s.backends.cudnn.benchmark and d2s.backends.cudnn.deterministic
    finally:
        d2s.backends.cudnn.benchmark, d2s.backends.cudnn.deterministic = before


def test_default_device_takes_pytorch_spellings():
    prev = d2s.set_default_device(d2s.device("cpu"))
    try:
        assert d2s.get_default_device() == "cpu"
    finally:
        d2s.set_default_device(prev)


def test_set_printoptions():
    try:
        d2s.set_printoptions(precision=2)
        assert "1.23" in repr(d2s.tensor([1.23456])) and "1.2346" not in repr(d2s.tensor([1.23456]))
        d2s.set_printoptions(sci_mode=True)
        assert "e+00" in repr(d2s.tensor([1.5]))
    finally:
        d2s.set_printoptions(profile="default")
    np.testing.assert_equal(d2s.tensor([1.5]).numpy(), [1.5])


def test_cuda_reports_no_bfloat16():
    assert d2s.cuda.is_bf16_supported() is False  # (d2s has no bfloat16 arithmetic)
