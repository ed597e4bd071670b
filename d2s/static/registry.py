"""The rules a structured op's family module declares beside its builder, by op name, as the
gradient rule (``d2s.autograd.registry.grad_rule``) and the ONNX form
(``d2s.onnx.registry.onnx_structured``) are declared beside every op.

* ``replay_rule(name)``: ``rule(op, args) -> outputs`` rebuilds the op from its IR (its blocks
  replayed as the functions the builder takes): eagerly on concrete values, appended again on
  symbolic ones (``d2s.static.replay``);
* ``reach_rule(name)``: ``rule(block, op, outs, flow, namer)`` passes reachability through the
  op (``d2s.static.reach``: which inputs reached which outputs on this call's path).

The family modules (``conditionals``, ``while_loops``, ``scans``) fill these when imported
(``d2s.static`` imports them); the consumers look them up and know no op by name.
"""
REPLAY_RULES = {}  # op name -> rule(op, args) -> list of outputs
REACH_RULES = {}   # op name -> rule(block, op, outs, flow, namer)


def replay_rule(name):
    """Register the decorated function as how replay rebuilds structured op ``name``."""

    def deco(rule):
        REPLAY_RULES[name] = rule
        return rule

    return deco


def reach_rule(name):
    """Register the decorated function as how reach flags pass through structured op ``name``."""

    def deco(rule):
        REACH_RULES[name] = rule
        return rule

    return deco
