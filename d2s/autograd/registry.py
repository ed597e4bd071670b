"""The gradient-rule registry: plain dicts filled by declarations next to each op.

Each op family module (``d2s/ops/*.py``) declares, beside the op's public wrapper, either its
rule (``@grad_rule("add")``) or why it has none (``non_differentiable("argmax", reason)``).
A rule is ``rule(ctx, *grads) -> tuple`` with one entry per op input (``None`` where no
gradient flows); ``ctx`` is the autograd node (``ctx.inputs``, ``ctx.outputs``, ``ctx.attrs``).
Rules are ordinary d2s code, so one rule serves eager backward, static backward (on symbolic
tensors) and higher-order derivatives (with ``create_graph``).
"""
GRAD_RULES = {}      # op name -> rule
NONDIFF = {}         # op name -> why its outputs carry no gradient
USES_OUTPUTS = set()  # ops whose rule reads the op's outputs (exp, tanh, ...)
SHAPE_ONLY = {}      # op name -> positions of inputs whose values its rule never reads
OUTPUTS_READ = {}    # op name -> positions of the outputs its rule reads (undeclared: all of them)
SAMPLES = {}         # op name -> (public wrapper, input shapes): an example call declared with the op
FLOAT_COTANGENTS_ONLY = set()  # ops whose rule takes None for a non-floating-point output's gradient


def _reads_outputs(fn, depth=3, seen=None):
    """Whether gradient rule ``fn`` reads ``ctx.outputs``, itself or through the module-level
    helpers it calls (``_reduction_operands(ctx, g)`` reads the reduction's output: max's
    rule compares the input with it, so ``m = x.max(); m += 1`` must fail backward, not give
    NaN)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    if "outputs" in code.co_names:
        return True
    if depth == 0:
        return False
    seen = set() if seen is None else seen
    g = getattr(fn, "__globals__", {})
    for name in code.co_names:
        helper = g.get(name)
        if callable(helper) and hasattr(helper, "__code__") and id(helper) not in seen:
            seen.add(id(helper))
            if _reads_outputs(helper, depth - 1, seen):
                return True
    return False


def grad_rule(*names):
    """Register the decorated function as the gradient rule of ops ``names``."""

    def deco(rule):
        for n in names:
            GRAD_RULES[n] = rule
            if _reads_outputs(rule):  # reads ctx.outputs: an in-place change spoils it
                USES_OUTPUTS.add(n)
        return rule

    return deco


def non_differentiable(*names, reason="its outputs are integers, bools or constants"):
    """Declare that ops ``names`` carry no gradient (autograd records no node for them)."""
    for n in names:
        NONDIFF[n] = reason


def float_cotangents_only(*names):
    """Declare that the gradient rules of ops ``names`` take None for the gradient of an output
    that is not floating point (a structured op's bool flags and counters), instead of zeros,
    which would be ops per replay."""
    FLOAT_COTANGENTS_ONLY.update(names)


def shape_only(name, *positions):
    """Declare that op ``name``'s gradient rule reads only the shape and dtype of these inputs,
    so writing to them in place after the op (``y[0] = y[0] * 3``) does not spoil backward."""
    SHAPE_ONLY[name] = frozenset(positions)


def reads_outputs(name, *positions):
    """Declare that op ``name``'s gradient rule reads only these of its outputs, so writing to the
    others in place after the op (``values.mul_(2)`` after ``values, idx = x.max(1)``) does not
    spoil backward, as in PyTorch, which saves only what the formula needs."""
    OUTPUTS_READ[name] = frozenset(positions)


def values_read_for(name, reads):
    """Declare which gradients of op ``name`` read each input's value: ``reads`` maps an input
    position to the positions whose gradient needs it (``mul``: ``{0: (1,), 1: (0,)}``, since
    d(a*b)/da = b). An input none of whose dependents needs a gradient may be written in place
    after the op (``y[0] = y[0] * 3`` with a constant 3), as PyTorch saves an operand only when
    the other one requires grad."""
    READ_FOR[name] = {i: frozenset(js) for i, js in reads.items()}


READ_FOR = {}  # op name -> {input position: positions whose gradient reads its value}
# the products and quotients every model computes (declared here rather than beside each op,
# since the version check they serve lives in this package)
values_read_for("mul", {0: (1,), 1: (0,)})
values_read_for("matmul", {0: (1,), 1: (0,)})
values_read_for("div", {0: (1,)})


def sample_call(name, wrapper, *shapes):
    """Declare an example call of op ``name``: ``wrapper`` on random float inputs of ``shapes``.
    The registry test gradchecks it in float64 and the ONNX test exports it, so an op declared
    with one needs no row in those tests' tables."""
    SAMPLES[name] = (wrapper, shapes)


# the names used before the registry had its own module (custom ops and control-flow rules)
defgrad = grad_rule
nondiff = non_differentiable
