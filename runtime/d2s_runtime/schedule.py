"""Op scheduling: the order a block's ops run in, shared by the executor, the code generator
and the memory planner (which must plan buffers in the order the executor runs)."""
import heapq

from .ops import OPS


class FeedView:
    """A block seen with another list of inputs (the global block is fed inputs, params and
    constants, whatever order its ``inputs`` list has)."""

    __slots__ = ("ops", "inputs")

    def __init__(self, block, inputs):
        self.ops, self.inputs = block.ops, inputs


def topo_order(block):
    """Indices of ``block.ops`` in a topological order over data dependencies (Kahn), with the
    successor lists and predecessor counts of each op: ``(order, succ, n_preds)``.

    Ties keep program order, so an already ordered block keeps its order; effect ops keep their
    relative order. Raises ValueError on a cycle or a var read in this block but defined nowhere
    visible to it.
    """
    producer = {}
    for i, op in enumerate(block.ops):
        for o in op.outputs:
            producer[o] = i
    known = set(block.inputs)
    n = len(block.ops)
    succ = [[] for _ in range(n)]
    n_preds = [0] * n
    last_effect = None
    for i, op in enumerate(block.ops):
        preds = set()
        for name in op.inputs:
            p = producer.get(name)
            if p is not None:
                preds.add(p)
            elif name not in known:
                raise ValueError(f"op #{i} {op.type!r} reads var {name!r}, which is neither an input of its "
                                 "block nor defined in it (a sub-block reads outer values only through "
                                 "its inputs)")
        opdef = OPS.get(op.type)
        if opdef is not None and opdef.effect or op.type not in OPS and not op.blocks:
            if last_effect is not None:
                preds.add(last_effect)
            last_effect = i
        preds.discard(i)
        for p in preds:
            succ[p].append(i)
        n_preds[i] = len(preds)
    remaining = list(n_preds)
    heap = [i for i in range(n) if remaining[i] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        i = heapq.heappop(heap)
        order.append(i)
        for j in succ[i]:
            remaining[j] -= 1
            if remaining[j] == 0:
                heapq.heappush(heap, j)
    if len(order) != n:
        stuck = [block.ops[i].type for i in range(n) if remaining[i] > 0]
        raise ValueError(f"the block has a dependency cycle among ops {stuck}")
    return order, succ, n_preds
