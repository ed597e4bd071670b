"""``nn.Module``'s PyTorch methods: registration rules, traversal order, state dicts (prefix,
keep_vars, non-persistent buffers, PyTorch checkpoints), lookups by dotted path, hooks (also in
converted code), modes, dtype moves and the printed tree — against PyTorch where it imports."""
from collections import OrderedDict

import numpy as np
import pytest

import d2s
from d2s import nn


def tree(lib):
    """A small nested model, written once for either library."""
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(4, 4)
            self.act = lib.nn.ReLU()
            self.register_buffer("scale", lib.ones(4))
            self.register_buffer("cache", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.act(self.fc(x)) * self.scale

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.nn.Embedding(10, 4, padding_idx=0)
            self.blocks = lib.nn.ModuleList([Block(), Block()])
            self.head = lib.nn.Sequential(OrderedDict(drop=lib.nn.Dropout(0.1), out=lib.nn.Linear(4, 2, bias=False)))
            self.shared = self.blocks[0].fc  # the same module twice: listed once

        def forward(self, ids):
            x = self.embed(ids)
            for b in self.blocks:
                x = b(x)
            return self.head(x)

    return Net()


NAMES = ["", "embed", "blocks", "blocks.0", "blocks.0.fc", "blocks.0.act", "blocks.1", "blocks.1.fc",
         "blocks.1.act", "head", "head.drop", "head.out"]
STATE = ["embed.weight", "blocks.0.scale", "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.1.scale",
         "blocks.1.fc.weight", "blocks.1.fc.bias", "head.out.weight", "shared.weight", "shared.bias"]


def test_traversal_order_is_pytorchs():
    m = tree(d2s)
    assert [n for n, _ in m.named_modules()] == NAMES
    # a module held twice is one child per name here (as in PyTorch), but listed once by named_modules
    assert [n for n, _ in m.named_children()] == ["embed", "blocks", "head", "shared"]
    assert [n for n, _ in m.named_buffers()] == ["blocks.0.scale", "blocks.0.cache", "blocks.1.scale",
                                                 "blocks.1.cache"]
    assert [n for n, _ in m.named_parameters()] == ["embed.weight", "blocks.0.fc.weight", "blocks.0.fc.bias",
                                                    "blocks.1.fc.weight", "blocks.1.fc.bias", "head.out.weight"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == NAMES + ["shared"]
    assert [n for n, _ in m.named_parameters(prefix="net", recurse=False)] == []


def test_state_dict_keys_prefix_and_keep_vars():
    m = tree(d2s)
    sd = m.state_dict()
    # the shared module's tensors under both names, as PyTorch saves them
    assert list(sd) == STATE and "blocks.0.cache" not in sd  # persistent=False
    assert list(m.state_dict(prefix="model.")) == ["model." + k for k in sd]
    kept = m.state_dict(keep_vars=True)
    assert kept["head.out.weight"] is m.head.out.weight
    assert sd["head.out.weight"] is not m.head.out.weight
    assert np.shares_memory(sd["head.out.weight"].numpy(), m.head.out.weight.numpy())


def test_pytorch_module_tree_matches_and_its_state_dict_loads():
    torch = pytest.importorskip("torch")
    ref, m = tree(torch), tree(d2s)
    assert [n for n, _ in m.named_modules()] == [n for n, _ in ref.named_modules()]
    assert list(m.state_dict()) == list(ref.state_dict())
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in ref.named_buffers()]
    result = m.load_state_dict(ref.state_dict())
    assert result == ([], [])
    ids = np.array([[1, 0, 3], [4, 5, 9]])
    with torch.no_grad():
        want = ref.eval()(torch.tensor(ids)).numpy()
    np.testing.assert_allclose(m.eval()(d2s.tensor(ids)).numpy(), want, rtol=1e-6, atol=1e-6)
    assert repr(m).replace("d2s.", "torch.") == repr(ref)


def test_load_state_dict_strict_false_returns_pytorchs_named_tuple():
    m = tree(d2s)
    sd = {k: v for k, v in m.state_dict().items() if k != "embed.weight"}
    sd["extra"] = d2s.zeros(1)
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["embed.weight"] and res.unexpected_keys == ["extra"]
    # PyTorch's type, and its repr when every key matched
    assert type(res).__name__ == "_IncompatibleKeys" and type(res).__mro__[1].__name__ == "IncompatibleKeys"
    assert repr(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "embed.weight"'):
        m.load_state_dict(sd)


def test_lookups_by_dotted_path():
    m = tree(d2s)
    assert m.get_submodule("blocks.1.fc") is m.blocks[1].fc
    assert m.get_submodule("") is m
    assert m.get_parameter("head.out.weight") is m.head.out.weight
    assert m.get_buffer("blocks.0.scale") is m.blocks[0].scale
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("blocks.nope")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        m.get_parameter("blocks.0.scale")


def test_registration_rules_are_pytorchs():
    m = tree(d2s)
    block = m.blocks[0]
    block.scale = block.scale * 2.0  # a tensor assigned to a buffer's name stays a buffer
    assert "scale" in dict(block.named_buffers()) and "blocks.0.scale" in m.state_dict()
    np.testing.assert_array_equal(m.state_dict()["blocks.0.scale"].numpy(), 2.0)
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'fc'"):
        block.fc = 3
    with pytest.raises(TypeError, match="cannot assign Tensor as parameter 'weight'"):
        block.fc.weight = d2s.zeros(4, 4)
    block.fc.bias = None  # a parameter slot may hold None
    assert "bias" not in dict(block.fc.named_parameters()) and block.fc.bias is None
    block.register_parameter("extra", nn.Parameter(d2s.ones(1)))
    block.register_module("more", nn.Tanh())
    assert "extra" in dict(block.named_parameters()) and block.more is block._modules["more"]
    with pytest.raises(KeyError, match="attribute 'fc' already exists"):
        block.register_buffer("fc", d2s.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        block.register_buffer("a.b", d2s.zeros(1))
    with pytest.raises(TypeError, match="cannot assign 'list' object to buffer"):
        block.register_buffer("c", [1.0])
    block.register_buffer("none_yet", None)
    assert block.none_yet is None and "none_yet" not in block.state_dict()
    block.none_yet = d2s.ones(2)
    assert "none_yet" in block.state_dict()


def test_forward_hooks_eager_and_converted():
    m = nn.Linear(3, 2)
    calls = []
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2.0,))
    post = m.register_forward_hook(lambda mod, args, out: calls.append(tuple(out.shape)) or out + 1.0)
    x = d2s.ones(4, 3)
    want = nn.functional.linear(x * 2.0, m.weight, m.bias) + 1.0
    np.testing.assert_allclose(m(x).numpy(), want.numpy(), rtol=1e-6)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = m

        def forward(self, x):
            return self.inner(x) * 3.0

    outer = Outer()
    static = d2s.jit.to_static(outer)
    np.testing.assert_allclose(static(x).numpy(), want.numpy() * 3.0, rtol=1e-6)
    assert calls and calls[0] == (4, 2)
    pre.remove()
    with post:
        pass  # leaving the handle's context removes it
    np.testing.assert_allclose(m(x).numpy(), nn.functional.linear(x, m.weight, m.bias).numpy(), rtol=1e-6)
    kw = m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 0.0,), kwargs), with_kwargs=True)
    np.testing.assert_allclose(m(x).numpy(), np.broadcast_to(m.bias.numpy(), (4, 2)), rtol=1e-6)
    kw.remove()


def test_modes_grads_and_dtypes():
    m = tree(d2s)
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "Net" and seen[0] == "Embedding"  # children first
    m.eval()
    assert not any(mod.training for mod in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    out = m(d2s.tensor([[1, 2]])).sum()
    out.backward()
    g = m.head.out.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.head.out.weight.grad is g and not g.numpy().any()
    m.zero_grad()
    assert m.head.out.weight.grad is None
    w = m.head.out.weight
    m.to(d2s.float64)
    assert m.head.out.weight is w and w.dtype == "float64" and m.blocks[0].scale.dtype == "float64"
    m.float()
    assert w.dtype == "float32"
    m.to(d2s.zeros(1, dtype="float64"))
    assert w.dtype == "float64"
    m.half()
    assert w.dtype == "float16"
    with pytest.raises(TypeError, match="no bfloat16"):
        m.bfloat16()


def test_repr_is_the_nested_tree():
    assert repr(tree(d2s)) == """Net(
  (embed): Embedding(10, 4, padding_idx=0)
  (blocks): ModuleList(
    (0-1): 2 x Block(
      (fc): Linear(in_features=4, out_features=4, bias=True)
      (act): ReLU()
    )
  )
  (head): Sequential(
    (drop): Dropout(p=0.1, inplace=False)
    (out): Linear(in_features=4, out_features=2, bias=False)
  )
  (shared): Linear(in_features=4, out_features=4, bias=True)
)"""

    class WithExtra(nn.Module):
        def extra_repr(self):
            return "k=3"

    assert repr(WithExtra()) == "WithExtra(k=3)"


def test_deepcopy_of_a_module_with_buffers_copies_them():
    import copy
    m = d2s.nn.BatchNorm1d(3)
    m2 = copy.deepcopy(m)  # raised: Buffer.__new__() missing 1 required positional argument
    assert type(m2.running_mean) is type(m.running_mean) and m2.running_mean is not m.running_mean
    m2.running_mean.add_(1.0)
    assert m.running_mean.numpy().tolist() == [0.0, 0.0, 0.0]
    assert list(dict(m2.named_buffers())) == list(dict(m.named_buffers()))


def test_layers_make_their_parameters_in_the_default_dtype():
    # PyTorch's layers follow set_default_dtype(torch.float64); d2s's stayed float32 (their
    # outputs were float32, or promoted from float32 weights: silently less precise)
    makers = [lambda: nn.Linear(2, 3), lambda: nn.Conv2d(2, 2, 3), lambda: nn.ConvTranspose1d(2, 2, 3),
              lambda: nn.BatchNorm1d(3), lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
              lambda: nn.LayerNorm(3), lambda: nn.GroupNorm(1, 3), lambda: nn.RMSNorm(3), lambda: nn.PReLU(),
              lambda: nn.Embedding(4, 2), lambda: nn.MultiheadAttention(4, 2, kdim=3), lambda: nn.Bilinear(2, 2, 2),
              lambda: nn.LSTM(2, 2)]
    d2s.set_default_dtype(d2s.float64)
    try:
        for make in makers:
            m = make()
            dtypes = {k: str(v.dtype) for k, v in m.state_dict().items()}
            assert all(d == "float64" for k, d in dtypes.items() if not k.endswith("num_batches_tracked")), dtypes
        assert str(nn.Parameter().dtype) == "float64"
        assert str(nn.Transformer.generate_square_subsequent_mask(3).dtype) == "float64"
        assert str(nn.Linear(2, 2, dtype=d2s.float32).weight.dtype) == "float32"  # an explicit dtype wins
    finally:
        d2s.set_default_dtype(d2s.float32)
    assert str(nn.Linear(2, 3).weight.dtype) == "float32"
