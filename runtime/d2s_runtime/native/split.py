"""Native lowering of ``split`` (``ops/shape_ops.py``): each piece a view of the input, as
numpy's ``split`` gives (a piece along the leading dim of a contiguous input is contiguous;
other pieces are strided views, which fused loops and MKL's gemm read in place)."""
from .values import _int


def lower_split(e, x, sections, axis=0):
    l = e._l
    if x.ndim == 0 or not isinstance(sections, (list, tuple)) or not sections:
        e.unsupported("split of a 0-d tensor or without sections")
    sizes = [_int(s, "section") for s in sections]
    a = _int(axis, "axis")
    if not -x.ndim <= a < x.ndim or min(sizes) < 0:
        e.unsupported("bad axis or section")
    a %= x.ndim
    x = l.array(x)
    # the shape rule checked the total where the dim is known; the kernel checks it at run time
    l.emit(l.indent, f"if {x.name}.shape[{a}] != {sum(sizes)}: raise ValueError('native program: split sizes')")
    l.pin(x)
    outs, start = [], 0
    for size, t in zip(sizes, e.out_types):
        name = l.fresh()
        l.emit(l.indent, f"{name} = {x.name}[{', '.join([':'] * a + [f'{start}:{start + size}'])}]")
        outs.append(l.new_array(name, x.dtype, tuple(t.shape), layout="C" if a == 0 and x.layout == "C" else "A",
                                fresh=False))
        start += size
    return tuple(outs)
