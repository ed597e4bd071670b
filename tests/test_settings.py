"""PyTorch's global switches (d2s/settings.py): each is accepted and read back as PyTorch reads it,
wrong values are refused as PyTorch refuses them, and anomaly detection's state follows
``d2s.autograd.detect_anomaly``."""
import pytest

import d2s


@pytest.fixture
def restored():
    saved = dict(d2s.settings._SETTINGS)
    yield
    d2s.settings._SETTINGS.update(saved)


def test_threads_read_back(restored):
    assert d2s.get_num_threads() >= 1 and d2s.get_num_interop_threads() >= 1
    d2s.set_num_threads(3)
    d2s.set_num_interop_threads(2)
    assert (d2s.get_num_threads(), d2s.get_num_interop_threads()) == (3, 2)
    with pytest.raises(RuntimeError, match="positive"):
        d2s.set_num_threads(0)


def test_matmul_precision(restored):
    assert d2s.get_float32_matmul_precision() == "highest"
    for p in ("high", "medium", "highest"):
        d2s.set_float32_matmul_precision(p)
        assert d2s.get_float32_matmul_precision() == p
    with pytest.raises(RuntimeError, match="Invalid precision"):
        d2s.set_float32_matmul_precision("low")


def test_deterministic_algorithms(restored):
    assert d2s.are_deterministic_algorithms_enabled() is False
    d2s.use_deterministic_algorithms(True, warn_only=True)
    assert d2s.are_deterministic_algorithms_enabled() is True
    assert d2s.is_deterministic_algorithms_warn_only_enabled() is True
    d2s.use_deterministic_algorithms(False)
    assert not d2s.are_deterministic_algorithms_enabled() and not d2s.is_deterministic_algorithms_warn_only_enabled()


def test_anomaly_state_follows_detect_anomaly():
    assert d2s.is_anomaly_enabled() is False and d2s.is_anomaly_check_nan_enabled() is False
    with d2s.autograd.detect_anomaly():
        assert d2s.is_anomaly_enabled() and d2s.is_anomaly_check_nan_enabled()
    with d2s.autograd.detect_anomaly(check_nan=False):
        assert d2s.is_anomaly_enabled() and not d2s.is_anomaly_check_nan_enabled()
    assert d2s.is_anomaly_enabled() is False


def test_same_answers_as_torch():
    torch = pytest.importorskip("torch")
    assert torch.get_float32_matmul_precision() == d2s.get_float32_matmul_precision()
    assert torch.are_deterministic_algorithms_enabled() == d2s.are_deterministic_algorithms_enabled()
    assert torch.is_anomaly_enabled() == d2s.is_anomaly_enabled()
    assert torch.get_deterministic_debug_mode() == d2s.get_deterministic_debug_mode()
    assert torch.is_warn_always_enabled() == d2s.is_warn_always_enabled()
    assert torch.is_vulkan_available() == d2s.is_vulkan_available()


def test_debug_mode_follows_deterministic_algorithms(restored):
    assert d2s.get_deterministic_debug_mode() == 0
    d2s.set_deterministic_debug_mode("warn")
    assert d2s.get_deterministic_debug_mode() == 1 and d2s.is_deterministic_algorithms_warn_only_enabled()
    d2s.set_deterministic_debug_mode(2)
    assert d2s.get_deterministic_debug_mode() == 2 and d2s.are_deterministic_algorithms_enabled()
    d2s.use_deterministic_algorithms(False)
    assert d2s.get_deterministic_debug_mode() == 0
    with pytest.raises(RuntimeError, match="debug_mode"):
        d2s.set_deterministic_debug_mode("loud")


def test_fixed_answers():
    d2s.init_num_threads()
    assert d2s.is_warn_always_enabled() is False and d2s.is_vulkan_available() is False
    assert d2s.is_distributed(d2s.ones(2)) is False
