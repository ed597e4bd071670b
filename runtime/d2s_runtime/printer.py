"""The text form of a Program, read like a jaxpr, and its Graphviz DOT drawing.

Grammar (``str(program)`` prints one equation per line; ``format_program(p, multiline=False)``
prints them on one line, separated by ``;``, sub-blocks inline after their equation)::

    program   ::= '{' 'lambda' binders [ ';' params ] [ ';;' constants ] '.'
                  'let' equations 'in' '(' names ')' '}'
    block     ::= '{' 'lambda' binders '.' 'let' equations 'in' '(' names ')' '}'
    equations ::= [ equation ( sep equation )* ]     -- sep: a newline, or ';' on one line
    binders   ::= ( name ':' type )*
    params    ::= ( name ':' type )*          -- fed from module parameters at each call
    constants ::= ( name ':' type )*          -- arrays held by the program
    equation  ::= outs '=' optype [ '[' attr ( ' ' attr )* ']' ] name*  subblocks
    outs      ::= name ':' type ( ' ' name ':' type )*
    attr      ::= key '=' value               -- value: None, True, a number, a string or
                                              -- a [list], as JSON-like plain data
    subblocks ::= ( key '=' block )*          -- indented below the equation (cond, while, scan)
    type      ::= dtype '[' dims ']'          -- f32 f64 i32 i64 bool; dims comma-separated,
                                              -- '?' for an unknown dim; '[]' for a scalar

Example, for ``f(x, y) = x*y + x.sum()``::

    { lambda a:f32[2] b:f32[2] . let
        c:f32[2] = mul a b
        d:f32[] = reduce_sum[axes=None keepdims=False] a
        e:f32[2] = add c d
      in ( e ) }

A ``constant`` op prints its value only (its dtype and shape are in the output type).
"""


def format_type(t):
    return repr(t)


def format_attr_value(v):
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return v if v and all(c.isalnum() or c in "_.-" for c in v) else repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(format_attr_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{format_attr_value(x)}" for k, x in v.items()) + "}"
    return repr(v)


def _attrs_text(op):
    attrs = op.attrs
    if op.type == "constant":
        attrs = {"value": attrs.get("value")}
    if not attrs:
        return ""
    return "[" + " ".join(f"{k}={format_attr_value(v)}" for k, v in attrs.items()) + "]"


def _binders(block, names):
    return " ".join(f"{n}:{format_type(block.lookup(n).type)}" for n in names)


def _block_lines(block, head, indent, multiline):
    """Lines of ``{ lambda ... }`` for ``block``; ``head`` holds the binder text."""
    pad = " " * indent
    lines = [f"{{ lambda {head} . let"]
    for op in block.ops:
        outs = " ".join(f"{n}:{format_type(block.lookup(n).type)}" for n in op.outputs)
        args = " ".join(op.inputs)
        eq = f"{outs} = {op.type}{_attrs_text(op)}" + (f" {args}" if args else "")
        lines.append(pad + "    " + eq)
        for key, sub in op.blocks.items():
            sub_lines = _block_lines(sub, _binders(sub, sub.inputs), indent + 6, multiline)
            sub_lines[0] = pad + "      " + f"{key} = " + sub_lines[0]
            lines.extend(sub_lines)
    lines.append(pad + f"  in ( {' '.join(block.outputs)} ) }}")
    return lines


def _block_inline(block, head):
    """The one-line form: equations separated by ';', sub-blocks inline after their equation."""
    eqs = []
    for op in block.ops:
        outs = " ".join(f"{n}:{format_type(block.lookup(n).type)}" for n in op.outputs)
        args = " ".join(op.inputs)
        eq = f"{outs} = {op.type}{_attrs_text(op)}" + (f" {args}" if args else "")
        for key, sub in op.blocks.items():
            eq += f" {key}=" + _block_inline(sub, _binders(sub, sub.inputs))
        eqs.append(eq)
    return f"{{ lambda {head} . let {'; '.join(eqs)} in ( {' '.join(block.outputs)} ) }}"


def format_program(program, multiline=True):
    """The text form of ``program`` (grammar in the module docstring)."""
    gb = program.block
    head = _binders(gb, program.inputs)
    if program.params or program.constants:
        head += " ; " + _binders(gb, program.params)
    if program.constants:
        head += " ;; " + _binders(gb, list(program.constants))
    saved = gb.outputs
    gb.outputs = list(program.outputs)  # the program's outputs are what the caller gets
    try:
        if not multiline:
            return _block_inline(gb, head.strip())
        return "\n".join(_block_lines(gb, head.strip(), 0, multiline))
    finally:
        gb.outputs = saved


# ---------------------------------------------------------------- Graphviz
def _q(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(program):
    """Graphviz DOT source: ops as boxes, inputs/params/constants as ellipses, edges labelled
    with the var they carry; each sub-block is a cluster, its inputs entering from its op."""
    lines = ["digraph program {", "  rankdir=TB;", '  node [fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=9];']
    counter = [0]

    def fresh(prefix):
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def emit_block(block, feeds, indent, kinds=None):
        """Nodes and edges of ``block``; ``feeds`` maps its input names to node ids."""
        pad = " " * indent
        producer = dict(feeds)
        for op in block.ops:
            node = fresh("op")
            label = op.type + _attrs_text(op)
            lines.append(f"{pad}{node} [shape=box, label={_q(label)}];")
            for name in op.inputs:
                src = producer.get(name)
                if src is not None:
                    lines.append(f"{pad}{src} -> {node} [label={_q(name + ':' + format_type(block.lookup(name).type))}];")
            for key, sub in op.blocks.items():
                cluster = fresh("cluster_")
                lines.append(f"{pad}subgraph {cluster} {{")
                lines.append(f"{pad}  label={_q(op.type + ' ' + key)}; style=dashed;")
                sub_feeds = {}
                for n in sub.inputs:
                    nid = fresh("in")
                    sub_feeds[n] = nid
                    lines.append(f"{pad}  {nid} [shape=ellipse, label={_q(n + ':' + format_type(sub.lookup(n).type))}];")
                emit_block(sub, sub_feeds, indent + 2)
                lines.append(f"{pad}}}")
                for n in sub.inputs[:1]:
                    lines.append(f"{pad}{sub_feeds[n]} -> {node} [style=dotted, arrowhead=none];")
            for name in op.outputs:
                producer[name] = node
        out = fresh("out")
        lines.append(f"{pad}{out} [shape=plaintext, label={_q('out: ' + ' '.join(block.outputs))}];")
        for name in block.outputs:
            if name in producer:
                lines.append(f"{pad}{producer[name]} -> {out} [label={_q(name)}];")

    gb = program.block
    feeds = {}
    for kind, names, style in (("input", program.inputs, "ellipse"), ("param", program.params, "ellipse"),
                               ("const", list(program.constants), "note")):
        for n in names:
            nid = fresh(kind)
            feeds[n] = nid
            lines.append(f"  {nid} [shape={style}, label={_q(f'{kind} {n}:' + format_type(gb.lookup(n).type))}];")
    saved = gb.outputs
    gb.outputs = list(program.outputs)
    try:
        emit_block(gb, feeds, 2)
    finally:
        gb.outputs = saved
    lines.append("}")
    return "\n".join(lines) + "\n"
