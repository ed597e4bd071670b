"""Post-accumulate-grad hooks on leaves and callbacks queued on a backward pass (the engine
facilities data-parallel training starts and finishes its gradient reductions from)."""
import numpy as np
import pytest

import d2s
from d2s.autograd.engine import queue_callback


def test_post_accumulate_hook_sees_the_accumulated_grad():
    w = d2s.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (w * 3).sum().backward()
    (w * w).sum().backward()
    np.testing.assert_array_equal(seen[0], [3.0, 3.0])
    np.testing.assert_array_equal(seen[1], [3.0 + 2.0, 3.0 + 4.0])  # after accumulation
    handle.remove()
    (w * 3).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_hook_is_for_leaves_only():
    w = d2s.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensors"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="leaf tensors"):
        d2s.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None)


def test_queued_callbacks_run_once_after_every_grad_is_written():
    a = d2s.tensor([1.0], requires_grad=True)
    b = d2s.tensor([2.0], requires_grad=True)
    order = []

    def hook(t):
        order.append(("hook", float(t.grad)))
        if len(order) == 1:
            queue_callback(lambda: order.append(("done", float(a.grad), float(b.grad))))

    a.register_post_accumulate_grad_hook(hook)
    b.register_post_accumulate_grad_hook(hook)
    (a * b).sum().backward()
    assert [o[0] for o in order] == ["hook", "hook", "done"]
    assert order[-1][1:] == (2.0, 1.0)


def test_queue_callback_outside_backward_raises():
    with pytest.raises(RuntimeError, match="no backward pass is running"):
        queue_callback(lambda: None)


def test_post_accumulate_hooks_fire_for_to_static_modules():
    model = d2s.jit.to_static(d2s.nn.Linear(3, 2))
    fired = []
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda t: fired.append(t.shape))
    model(d2s.ones([4, 3])).sum().backward()
    assert sorted(fired) == sorted([(2, 3), (2,)])
