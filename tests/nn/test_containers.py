"""Containers as PyTorch's: Sequential indexing, slicing (names kept), editing (renumbered),
ModuleList's compressed repr, ParameterList and ParameterDict registering their tensors."""
from collections import OrderedDict

import numpy as np
import pytest

import d2s
from d2s import nn


def test_sequential_indexing_slicing_and_editing():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(seq[-1], nn.Linear) and seq[-1] is seq[2]
    sub = seq[1:]
    assert list(sub._modules) == ["1", "2"] and sub[0] is seq[1]  # slices keep the names
    named = nn.Sequential(OrderedDict(a=nn.ReLU(), b=nn.Tanh()))
    assert list(named[1:]._modules) == ["b"]
    seq.append(nn.Sigmoid())
    seq.insert(-1, nn.Tanh())  # before the last, as PyTorch
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear", "Tanh", "Sigmoid"]
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2", "3"] and type(seq[1]).__name__ == "Linear"
    popped = seq.pop(2)
    assert type(popped).__name__ == "Tanh" and len(seq) == 3
    seq[2] = nn.Identity()
    assert type(seq[2]).__name__ == "Identity"
    seq.extend([nn.ReLU()])
    both = seq + nn.Sequential(nn.Tanh())
    assert len(both) == 5
    with pytest.raises(IndexError):
        seq[7]
    x = d2s.ones(4, 2)
    np.testing.assert_allclose(seq(x).numpy(), nn.functional.relu(seq[1](seq[0](x))).numpy())


def test_module_list_repr_compresses_repeats_as_pytorch():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.ReLU()])
    assert repr(ml) == """ModuleList(
  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)
  (3-4): 2 x ReLU()
)"""
    assert repr(nn.ModuleList()) == "ModuleList()"
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    assert isinstance(ml[1:], nn.ModuleList) and len(ml[1:]) == 3


def test_parameter_list_and_dict():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([nn.Parameter(d2s.ones(2)), d2s.zeros(3)])
            self.pd = nn.ParameterDict({"a": nn.Parameter(d2s.ones(1)), "b": d2s.zeros(2, 2)})

    m = M()
    assert list(m.state_dict()) == ["ps.0", "ps.1", "pd.a", "pd.b"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert len(list(m.parameters())) == 4
    m.ps.append(d2s.ones(1))
    m.pd["c"] = d2s.ones(1)
    assert "ps.2" in m.state_dict() and "pd.c" in m.state_dict() and "c" in m.pd and len(m.pd) == 3
    assert list(m.pd.keys()) == ["a", "b", "c"] and m.ps[-1] is list(m.ps)[-1]
    assert repr(m.ps) == """ParameterList(
    (0): Parameter containing: [d2s.float32 of size 2]
    (1): Parameter containing: [d2s.float32 of size 3]
    (2): Parameter containing: [d2s.float32 of size 1]
)"""


def test_parameter_dict_orders_a_plain_dict_by_key_as_pytorch():
    from collections import OrderedDict
    p = lambda: nn.Parameter(d2s.zeros(1))  # noqa: E731
    assert list(nn.ParameterDict({"b": p(), "a": p()}).keys()) == ["a", "b"]
    assert list(nn.ParameterDict(OrderedDict([("b", p()), ("a", p())])).keys()) == ["b", "a"]
    assert list(nn.ParameterDict([("b", p()), ("a", p())]).keys()) == ["b", "a"]
    d = nn.ParameterDict()
    d["z"] = p()
    d.update({"b": p(), "a": p()})
    assert list(d.keys()) == ["z", "a", "b"]
    assert list(nn.ModuleDict({"b": nn.ReLU(), "a": nn.ReLU()}).keys()) == ["b", "a"]  # ModuleDict keeps its order


def test_pytorch_state_dict_of_containers_loads():
    torch = pytest.importorskip("torch")

    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 2))
                self.ps = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2))])
                self.md = lib.nn.ModuleDict({"x": lib.nn.Linear(2, 2)})
        return M()

    ref, m = build(torch), build(d2s)
    assert list(m.state_dict()) == list(ref.state_dict())
    m.load_state_dict(ref.state_dict())
    np.testing.assert_allclose(m.seq[2].weight.numpy(), ref.seq[2].weight.detach().numpy())
