"""d2s.convert.control_flow.probing(): the extent of a trial trace of a loop body, which lets a
branch leave a not-yet-defined loop variable undefined (nested trials count; errors unwind)."""
import pytest

from d2s.convert import control_flow as cf


def test_probing_nests_and_unwinds_on_error():
    assert cf._probing[0] == 0
    with cf.probing():
        assert cf._probing[0] == 1
        with pytest.raises(KeyError):
            with cf.probing():
                assert cf._probing[0] == 2
                raise KeyError("trial failed")
        assert cf._probing[0] == 1
    assert cf._probing[0] == 0


def test_loops_use_the_public_surface():
    import inspect

    from d2s.convert import loops
    src = inspect.getsource(loops)
    assert "_probing" not in src and src.count("cf.probing()") >= 2
