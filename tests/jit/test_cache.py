"""The program cache: one program per input signature; InputSpec dynamic dims share one."""
import numpy as np

import d2s
from d2s.jit import InputSpec, to_static


def _counting(builds):
    """A function that records each time it runs as Python (i.e. each program build). It records
    through the list's bound ``append``: a converted function that changed a list it reaches
    itself would be refused (a program would change it once, eager code at every call)."""
    record = builds.append

    def f(x, k=1):
        record(tuple(x.shape))
        return x * k + 1.0

    return f


def test_same_signature_reuses_the_program():
    builds = []
    sf = to_static(_counting(builds))
    for _ in range(3):
        out = sf(d2s.ones(4))
    np.testing.assert_allclose(out.numpy(), np.full(4, 2.0))
    assert builds == [(4,)]
    assert len(sf.programs) == 1


def test_new_shape_dtype_or_python_value_builds_a_new_program():
    builds = []
    sf = to_static(_counting(builds))
    sf(d2s.ones(4))
    sf(d2s.ones(5))
    sf(d2s.ones(4, dtype="float64"))
    sf(d2s.ones(4), 3)
    sf(d2s.ones(4), 3.0)  # 3 and 3.0 are different Python values for the signature
    sf(d2s.ones(5))
    assert len(sf.programs) == 5 and len(builds) == 5
    np.testing.assert_allclose(sf(d2s.ones(4), 3).numpy(), np.full(4, 4.0))
    assert sf(d2s.ones(4, dtype="float64")).dtype == d2s.float64


def test_values_are_recomputed_each_call():
    def f(x):
        return x * x

    sf = to_static(f)
    for v in (1.0, 2.0, -3.0):
        np.testing.assert_allclose(sf(d2s.full([2], v)).numpy(), [v * v] * 2)


def test_input_spec_dynamic_batch_shares_one_program():
    builds = []
    sf = to_static(_counting(builds), input_spec=[InputSpec([None, 3])])
    for n in (1, 2, 7, 2):
        x = d2s.randn(n, 3)
        np.testing.assert_allclose(sf(x).numpy(), x.numpy() + 1.0, rtol=1e-6)
    assert len(sf.programs) == 1 and len(builds) == 1
    prog = sf.programs[0]
    assert prog.block.lookup(prog.inputs[0]).type.shape == (None, 3)


def test_input_spec_minus_one_and_reductions_over_dynamic_dim():
    def mean_rows(x):
        return x.sum(axis=0) / x.shape[0]

    sf = to_static(mean_rows, input_spec=[InputSpec([-1, 2])])
    for n in (2, 5):
        x = d2s.randn(n, 2)
        np.testing.assert_allclose(sf(x).numpy(), x.numpy().mean(0), rtol=1e-5, atol=1e-6)
    assert len(sf.programs) == 1


def test_input_that_does_not_fit_the_spec_gets_its_own_program():
    sf = to_static(_counting([]), input_spec=[InputSpec([None, 3])])
    sf(d2s.ones(2, 3))
    out = sf(d2s.ones(2, 4))  # another inner dim: specialised program, still correct
    np.testing.assert_allclose(out.numpy(), np.full((2, 4), 2.0))
    shapes = sorted(str(p.block.lookup(p.inputs[0]).type.shape) for p in sf.programs)
    assert shapes == ["(2, 4)", "(None, 3)"]


def test_get_program_shares_the_cache_with_calls():
    sf = to_static(_counting([]))
    p = sf.get_program(d2s.ones(3))
    sf(d2s.ones(3))
    assert sf.programs == [p]
    q = sf.get_program(InputSpec([None]))
    assert q is not p and len(sf.programs) == 2


def test_nested_container_arguments_are_part_of_the_signature():
    def f(pair, opts):
        a, b = pair
        return a * opts["k"] + b

    sf = to_static(f)
    x, y = d2s.ones(2), d2s.full([2], 3.0)
    np.testing.assert_allclose(sf((x, y), {"k": 2.0}).numpy(), [5.0, 5.0])
    np.testing.assert_allclose(sf([x, y], {"k": 2.0}).numpy(), [5.0, 5.0])
    np.testing.assert_allclose(sf((x, y), {"k": -1.0}).numpy(), [2.0, 2.0])
    assert len(sf.programs) == 3


def test_clear_cache():
    sf = to_static(_counting([]))
    sf(d2s.ones(2))
    sf.clear_cache()
    assert sf.programs == []
    sf(d2s.ones(2))
    assert len(sf.programs) == 1


def _const_chain(x):
    return x * 2.0 * 3.0 + 0.0


def test_program_is_optimized_from_its_second_call():
    sf = to_static(_const_chain)
    x = d2s.tensor([1.0, -2.0])
    first = sf(x).numpy()
    built = sf.concrete_programs[0].raw_program
    second = sf(x).numpy()
    np.testing.assert_allclose(first, second)
    np.testing.assert_allclose(second, [6.0, -12.0])
    assert len(sf.programs[0].block.ops) <= len(built.block.ops)
    sf.programs[0].verify()


def test_a_failing_optimization_pass_keeps_the_built_program(monkeypatch):
    import warnings

    from d2s.jit import tiering

    def broken(program, passes=None):
        raise RuntimeError("pass exploded")

    monkeypatch.setattr(tiering, "optimize", broken)
    sf = to_static(_const_chain)
    x = d2s.tensor([1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [sf(x).numpy() for _ in range(3)]
    assert any("pass exploded" in str(w.message) for w in caught)
    for o in outs:
        np.testing.assert_allclose(o, [6.0, 12.0])
    assert sf.programs[0] is sf.concrete_programs[0].raw_program


def test_nested_input_specs_serve_every_batch_size_with_one_program():
    # regression: specs inside a list or dict argument were ignored (a program per batch size)
    @to_static(input_spec=[[InputSpec([None, 3]), InputSpec([None])], {"k": InputSpec([None, 3])}, 2.0])
    def f(pair, d, s):
        a, b = pair
        return a.sum(axis=1) * b * s + d["k"].sum(axis=1)

    rng = np.random.default_rng(0)
    for n in (1, 2, 5):
        a, b, k = (rng.standard_normal(s).astype(np.float32) for s in ((n, 3), (n,), (n, 3)))
        out = f([d2s.tensor(a), d2s.tensor(b)], {"k": d2s.tensor(k)}, 2.0)
        np.testing.assert_allclose(out.numpy(), a.sum(1) * b * 2.0 + k.sum(1), rtol=1e-5)
    assert len(f.programs) == 1
    assert f.get_program().block.lookup(f.get_program().inputs[0]).type.shape[0] is None
