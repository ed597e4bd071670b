"""A program whose every var name (global block, while blocks, cond branches) is Python code:
the backends that generate source must let none of it reach that source."""
from d2s_runtime.ir import Block, Op, Program
from d2s_runtime.ops import TensorType

PAYLOAD = "__import__('builtins').__setattr__('D2S_PWNED', 1)"


def hostile_program():
    """x, n -> while counter < n: x = cond(sum(x) > 0, x * 2, x + 1); returns (x, counter)."""
    names = iter(f"{PAYLOAD} or v{k}\n)]}}; {PAYLOAD}  # {k}" for k in range(100))
    t, s, i, b = (TensorType((3,), "float32"), TensorType((), "float32"), TensorType((), "int64"),
                  TensorType((), "bool"))
    p = Program()
    gb = p.block
    x, n, one, zero, cnt, lim = (next(names) for _ in range(6))
    for v, ty in ((x, t), (n, i), (one, i), (zero, i), (cnt, i)):
        gb.add_var(v, ty)
    cb = Block(parent=gb)
    ci, cv, cn, co, cl = (next(names) for _ in range(5))
    for v, ty in ((ci, i), (cv, t), (cn, i), (co, i), (cl, b)):
        cb.add_var(v, ty)
    cb.inputs, cb.ops, cb.outputs = [ci, cv, cn, co], [Op("lt", [ci, cn], [cl])], [cl]
    body = Block(parent=gb)
    bi, bv, bn, bo, bsum, bzero, bpred, bnext, bout = (next(names) for _ in range(9))
    for v, ty in ((bi, i), (bv, t), (bn, i), (bo, i), (bsum, s), (bzero, s), (bpred, b), (bnext, i), (bout, t)):
        body.add_var(v, ty)
    then, other = Block(parent=body), Block(parent=body)
    ta, tb, tc, ea, eb, ec = (next(names) for _ in range(6))
    for blk, (u, k, o), op in ((then, (ta, tb, tc), "mul"), (other, (ea, eb, ec), "add")):
        for v, ty in ((u, t), (k, s), (o, t)):
            blk.add_var(v, ty)
        blk.inputs, blk.outputs = [u, k], [o]
        blk.ops = [Op(op, [u, k], [o])]
    two = next(names)
    body.add_var(two, s)
    body.ops = [Op("reduce_sum", [bv], [bsum], {"axes": None, "keepdims": False}),
                Op("constant", [], [bzero], {"value": 0.0, "dtype": "float32", "shape": []}),
                Op("gt", [bsum, bzero], [bpred]),
                Op("constant", [], [two], {"value": 2.0, "dtype": "float32", "shape": []}),
                Op("cond", [bpred, bv, two], [bout], {}, {"then": then, "else": other}),
                Op("add", [bi, bo], [bnext])]
    body.inputs, body.outputs = [bi, bv, bn, bo], [bnext, bout]
    gb.ops = [Op("constant", [], [one], {"value": 1, "dtype": "int64", "shape": []}),
              Op("constant", [], [zero], {"value": 0, "dtype": "int64", "shape": []}),
              Op("while", [zero, x, n, one], [cnt, lim], {}, {"cond": cb, "body": body})]
    gb.add_var(lim, t)
    gb.inputs = p.inputs = [x, n]
    p.outputs = gb.outputs = [lim, cnt]
    return p
