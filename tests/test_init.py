"""``import d2s`` exposes exactly its public names: the API contract's, nothing internal."""
import pytest

import d2s


def test_internal_names_do_not_leak():
    for name in ("np", "STATE", "apply", "builtins", "get_xp", "as_dtype", "apply_kernel", "HOOKED_THREADS"):
        assert not hasattr(d2s, name), f"d2s.{name} leaks an internal name"


def test_every_name_in_all_resolves():
    assert len(d2s.__all__) == len(set(d2s.__all__))
    for name in d2s.__all__:
        assert getattr(d2s, name) is not None, name


def test_star_import_gives_the_public_names_only():
    ns = {}
    exec("from d2s import *", ns)
    names = set(ns) - {"__builtins__"}
    assert names == set(d2s.__all__)
    assert "np" not in names and "STATE" not in names and "apply" not in names


# every d2s.<name> of the API contract (its section 1 and the d2s.* names it mentions) and of
# the README's additions
CONTRACT = """tensor Tensor float32 float64 int32 int64 bool zeros ones full zeros_like ones_like full_like
arange linspace eye rand randn randint manual_seed add sub mul div neg exp log sqrt sin cos tanh sigmoid
relu abs pow clip maximum minimum where matmul sum mean max min prod argmax argmin reshape transpose permute
squeeze unsqueeze broadcast_to flatten concat stack split cast softmax log_softmax logsumexp cumsum gather
one_hot grad no_grad enable_grad is_grad_enabled set_grad_enabled cond while_loop scan to_static fori_loop
switch map lax pad unstack chunk cat add_n identity shape numel print nn optim data jit static passes func
utils viz onnx autograd""".split()


@pytest.mark.parametrize("name", CONTRACT)
def test_contract_name_resolves_and_is_public(name):
    assert name in d2s.__all__, f"d2s.{name} is public API but missing from d2s.__all__"
    assert getattr(d2s, name) is not None


def test_dir_lists_the_lazy_names_for_tab_completion():
    listed = set(dir(d2s))
    assert {"jit", "func", "lax", "nn", "cond", "while_loop", "to_static", "save", "load"} <= listed
    assert set(d2s.__all__) <= listed  # every public name, whether imported yet or not
    assert {"trace", "save", "load", "TraceGuardError"} <= set(dir(d2s.jit))
