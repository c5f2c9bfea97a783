"""Body comparison: two bodies of one template compared literal by literal (the specialised values that
changed, labelled with the aten parameter they came from), two bodies of different templates aligned node by
node (``align_nodes``, which the compare window uses too)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import onnx
from onnx import AttributeProto

from inspector.core.bodies.body import Body, walk_body
from inspector.core.bodies.fingerprint import Fingerprints, fingerprint
from inspector.core.bodies.literals import Literal, attribute_value, body_literals, tensor_value
from inspector.core.diff.arguments import CallContext, arguments_text, name_arguments
from inspector.core.diff.model import ArgChange, EditOp, NodeEdit
from inspector.core.diff.values import changed_text, show_value, tensor_type, unwrap, value_difference
from inspector.core.model.keys import FunctionKey
from inspector.core.model.walk import subgraphs


@dataclass(slots=True)
class Delta:
    """A value change inside a body pair: slot label, values, keys."""

    label: str
    old: Any
    new: Any
    old_key: str
    new_key: str
    arguments: tuple[ArgChange, ...] = ()
    difference: str = ""  # where two tensors too large to show whole differ (``values.value_difference``)

    @property
    def detail(self) -> str:
        """``dim1 (Transpose.perm): [0, 2, 1, 3] -> [0, 3, 2, 1]; dim1: 2 -> 3``; an argument that changed as the
        value did is named in the label alone (``size (Reshape.shape): [1, 8, -1, 24] -> [1, 8, -1, 48]``, not that
        again after ``; size:``)."""
        old, new = show_value(self.old), show_value(self.new)
        return (f"{self.label}: {changed_text(self.old, self.new, self.difference)}"
                f"{arguments_text(self.arguments, (old, new))}")


def key_of(node: onnx.NodeProto) -> FunctionKey:
    return FunctionKey(node.domain, node.op_type, node.overload)


def op_label(node: onnx.NodeProto) -> str:
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
    return f"{op}:{node.overload}" if node.overload else op



def constants_by_use(body: Body) -> Body | None:
    """The body with its Constant nodes moved to just before their first reader, or None when that changes
    nothing. Two exports of one lowering may emit its Constant nodes in another order (a shuffled body reported
    ``+15 (Constant x15) -15 (Constant x15)`` for identical content); comparing both bodies in this order matches
    Constant tensors by what they hold and where they are read, not by their position."""
    consts: dict[str, int] = {}
    for i, node in enumerate(body.nodes):
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and not node.input and len(node.output) == 1:
            consts[node.output[0]] = i
    if not consts:
        return None
    placed: set[int] = set()
    order: list[int] = []
    for i, node in enumerate(body.nodes):
        if i in consts.values():
            continue
        for _path, inner in walk_body([node]):
            for name in inner.input:
                j = consts.get(name)
                if j is not None and j not in placed:
                    placed.add(j)
                    order.append(j)
        order.append(i)
    order.extend(j for j in sorted(consts.values()) if j not in placed)
    if order == list(range(len(body.nodes))):
        return None
    paths = [body.node_paths[i] for i in order] if len(body.node_paths) == len(body.nodes) else body.node_paths
    nodes = [body.nodes[i] for i in order]
    # a group's outputs are listed in node order, so a Constant read outside the call moves with its node
    rank = {name: k for k, node in enumerate(nodes) for name in node.output}
    outputs = sorted(body.outputs, key=lambda name: rank.get(name, -1))
    return Body(body.label, nodes, body.inputs, outputs, body.constants, paths, body.canonical_inputs)


def in_use_order(body: Body) -> Body:
    """The body as the diff compares it: Constant nodes just before their first reader (``constants_by_use``)."""
    return constants_by_use(body) or body


def order_fingerprint(body: Body) -> Fingerprints:
    """The fingerprint of ``in_use_order(body)``: blind to the order in which a lowering emitted its Constants."""
    return fingerprint(in_use_order(body))


def value_deltas(ba: Body, bb: Body, ctx_a: CallContext | None, ctx_b: CallContext | None) -> list[Delta]:
    """Literals of two same-template bodies aligned slot by slot; the ones whose values differ, labelled with the
    aten arguments they came from (``inspector.core.diff.arguments``)."""
    la, lb = body_literals(ba), body_literals(bb)
    slots_b: dict[tuple[Any, int], Literal] = {}
    seen: dict[Any, int] = defaultdict(int)
    for lit in lb:
        slots_b[(lit.slot, seen[lit.slot])] = lit
        seen[lit.slot] += 1
    seen.clear()
    out: list[Delta] = []
    for lit in la:
        other = slots_b.get((lit.slot, seen[lit.slot]))
        seen[lit.slot] += 1
        if other is None or other.key == lit.key:
            continue
        label, arguments = name_arguments(_literal_where(ba, lit), lit, ctx_a, other, ctx_b)
        ta, tb = ba.constants.get(lit.name), bb.constants.get(other.name)
        differ = value_difference(ta, tb) if lit.kind == "initializer" and ta is not None and tb is not None else ""
        out.append(Delta(label, unwrap(lit.value), unwrap(other.value), lit.key, other.key, arguments, differ))
    return out


def _literal_where(body: Body, lit: Literal) -> str:
    """Where a literal sits: ``Transpose.perm``, or for constants the input they feed, ``Reshape.shape``."""
    if lit.kind == "attribute":
        return f"{lit.op_type}.{lit.name}"
    if lit.kind == "parametric":
        return f"{lit.op_type}.{lit.name}=@{lit.ref}"
    reads = lit.name if lit.kind == "initializer" else _constant_output(body, lit)
    where = _reader_slot(body, reads) if reads else ""
    return where or (f"{lit.op_type}.{lit.name}" if lit.kind == "constant" else "constant")


def reader(nodes: Sequence[onnx.NodeProto], name: str) -> tuple[str, int]:
    """The first input slot reading ``name`` (``Mul.B``) and how many inputs read it."""
    slot, uses = "", 0
    for node in nodes:
        for k, inp in enumerate(node.input):
            if inp == name:
                uses += 1
                if not slot:
                    slot = f"{node.op_type}.{_input_name(node.domain, node.op_type, k)}"
    return slot or "constant", uses


def _constant_output(body: Body, lit: Literal) -> str:
    node: onnx.NodeProto | None = None
    for path, n in walk_body(body.nodes):
        if path == lit.path:
            node = n
            break
    return node.output[0] if node is not None and node.output else ""


def _reader_slot(body: Body, name: str) -> str:
    for _path, node in walk_body(body.nodes):
        for k, inp in enumerate(node.input):
            if inp == name:
                return f"{node.op_type}.{_input_name(node.domain, node.op_type, k)}"
    return ""


@lru_cache(maxsize=1024)
def _input_name(domain: str, op_type: str, k: int) -> str:
    import onnx.defs  # when a constant's reader is named: its first schema builds onnx's registry (17-30 ms)

    try:
        schema = onnx.defs.get_schema(op_type, domain)
        inputs = schema.inputs
        if k < len(inputs):
            return str(inputs[k].name)
        if inputs and inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
            return f"{inputs[-1].name}[{k - len(inputs) + 1}]"
    except Exception:
        pass
    return f"input{k}"


def align_nodes(na: Sequence[onnx.NodeProto], nb: Sequence[onnx.NodeProto]
                ) -> list[tuple[EditOp, int | None, int | None]]:
    """The node-by-node alignment of two bodies (nodes in walk order) by (domain, op_type, overload) sequence:
    ``("changed", i, j)`` for aligned nodes whose literal attributes differ (graph attributes are not compared:
    the walk lists the nodes inside them), ``("removed", i, None)`` and ``("added", None, j)`` for the rest."""
    out: list[tuple[EditOp, int | None, int | None]] = []
    import difflib  # (here: bodies to align; with heapq 3 million instructions of start-up)

    sm = difflib.SequenceMatcher(None, [key_of(n) for n in na], [key_of(n) for n in nb], autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out.extend(("changed", i, j) for i, j in zip(range(i1, i2), range(j1, j2))
                       if attribute_keys(na[i], graphs=False) != attribute_keys(nb[j], graphs=False))
            continue
        out.extend(("removed", i, None) for i in range(i1, i2))
        out.extend(("added", None, j) for j in range(j1, j2))
    return out


def node_edits(ba: Body, bb: Body) -> list[NodeEdit]:
    """Node-level alignment of two bodies (``align_nodes``), with the attribute changes of aligned nodes and the
    constants that differ."""
    na = [n for _p, n in walk_body(ba.nodes)]
    nb = [n for _p, n in walk_body(bb.nodes)]
    edits: list[NodeEdit] = []
    for op, i, j in align_nodes(na, nb):
        if op == "changed":
            assert i is not None and j is not None
            detail = attribute_detail(attribute_keys(na[i], graphs=False), attribute_keys(nb[j], graphs=False))
            edits.append(NodeEdit("changed", op_label(na[i]), i, j, detail))
        elif op == "removed":
            assert i is not None
            edits.append(NodeEdit("removed", op_label(na[i]), i, None))
        else:
            assert j is not None
            edits.append(NodeEdit("added", op_label(nb[j]), None, j))
    ca = [(tensor_type(t), tensor_value(t)[1]) for t in ba.constants.values()]
    cb = [(tensor_type(t), tensor_value(t)[1]) for t in bb.constants.values()]
    if ca != cb:
        import difflib

        cm = difflib.SequenceMatcher(None, [k for _t, k in ca], [k for _t, k in cb], autojunk=False)
        for tag, i1, i2, j1, j2 in cm.get_opcodes():
            if tag != "equal":
                edits.extend(NodeEdit("removed", f"constant {ca[i][0]}", None, None) for i in range(i1, i2))
                edits.extend(NodeEdit("added", f"constant {cb[j][0]}", None, None) for j in range(j1, j2))
    if not edits:
        edits.append(NodeEdit("changed", "wiring", None, None, "same operators, wired differently"))
    return edits


def subgraph_edits(na: onnx.NodeProto, nb: onnx.NodeProto, attrs_a: dict[str, tuple[Any, str]],
                    attrs_b: dict[str, tuple[Any, str]]) -> list[NodeEdit]:
    """Node edits inside the graph attributes (If/Loop/Scan bodies, any depth) that differ."""
    graphs_b = {step: g for step, g in subgraphs(nb)}
    edits: list[NodeEdit] = []
    for step, ga in subgraphs(na):
        gb = graphs_b.get(step)
        name = step.split("[", 1)[0]
        if gb is None or (name in attrs_a and name in attrs_b and attrs_a[name][1] == attrs_b[name][1]):
            continue
        body_a = Body(step, list(ga.node), [v.name for v in ga.input], [v.name for v in ga.output])
        body_b = Body(step, list(gb.node), [v.name for v in gb.input], [v.name for v in gb.output])
        for e in node_edits(body_a, body_b):
            edits.append(NodeEdit(e.op, f"{step}: {e.node}", e.index_a, e.index_b, e.detail))
    return edits


def edits_summary(edits: Sequence[NodeEdit], limit: int = 8) -> str:
    parts = []
    for op, sign in (("added", "+"), ("removed", "-"), ("changed", "~")):
        names = [e.node for e in edits if e.op == op]
        if not names:
            continue
        counted: dict[str, int] = {}
        for n in names:
            counted[n] = counted.get(n, 0) + 1
        shown = [f"{n}" + (f" x{c}" if c > 1 else "") for n, c in list(counted.items())[:limit]]
        more = f", … {len(counted) - limit} more" if len(counted) > limit else ""
        parts.append(f"{sign}{len(names)} ({', '.join(shown)}{more})")
    return " ".join(parts)


def count_nodes(body: Body) -> int:
    return sum(1 for _ in walk_body(body.nodes)) + len(body.constants)


def attribute_keys(node: onnx.NodeProto, graphs: bool = True) -> dict[str, tuple[Any, str]]:
    """Attribute name -> (JSON value, comparable key); graph attributes by fingerprint of the subgraph (or left out
    when ``graphs`` is false)."""
    out: dict[str, tuple[Any, str]] = {}
    for attr in node.attribute:
        if not graphs and attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
            continue
        if attr.ref_attr_name:
            out[attr.name] = (f"@{attr.ref_attr_name}", f"@{attr.ref_attr_name}")
        elif attr.type == AttributeProto.GRAPH:
            fp = _graph_fp(attr.g)
            out[attr.name] = (f"graph {fp[:8]}", f"g:{fp}")
        elif attr.type == AttributeProto.GRAPHS:
            fps = [_graph_fp(g) for g in attr.graphs]
            out[attr.name] = ([f"graph {x[:8]}" for x in fps], "gs:" + ",".join(fps))
        else:
            value, key = attribute_value(attr)
            out[attr.name] = (unwrap(value) if attr.type == AttributeProto.TENSOR else value, key)
    return out


def _graph_fp(g: onnx.GraphProto) -> str:
    inputs = [v.name for v in g.input]
    return fingerprint(Body(g.name, list(g.node), inputs, [v.name for v in g.output], {}, [], inputs)).full


def attribute_detail(a: dict[str, tuple[Any, str]], b: dict[str, tuple[Any, str]]) -> str:
    parts = []
    for name in sorted(set(a) | set(b)):
        va, vb = a.get(name), b.get(name)
        if va is not None and vb is not None and va[1] == vb[1]:
            continue
        if va is None:
            assert vb is not None
            parts.append(f"+{name}={show_value(vb[0])}")
        elif vb is None:
            parts.append(f"-{name}={show_value(va[0])}")
        else:
            parts.append(f"{name} {show_value(va[0])} -> {show_value(vb[0])}")
    return "; ".join(parts)


def function_signature(f: onnx.FunctionProto) -> dict[str, Any]:
    defaults = {}
    for a in f.attribute_proto:
        value, _key = attribute_value(a)
        defaults[a.name] = value
    return {"inputs": len(f.input), "outputs": len(f.output), "attributes": sorted(f.attribute),
            "attribute_defaults": defaults}


def signature_detail(a: dict[str, Any], b: dict[str, Any]) -> str:
    parts = []
    for k in ("inputs", "outputs"):
        if a[k] != b[k]:
            parts.append(f"{k} {a[k]} -> {b[k]}")
    if a["attributes"] != b["attributes"]:
        parts.append(f"attributes {a['attributes']} -> {b['attributes']}")
    if a["attribute_defaults"] != b["attribute_defaults"]:
        parts.append(f"attribute defaults {show_value(a['attribute_defaults'])} -> "
                     f"{show_value(b['attribute_defaults'])}")
    return "; ".join(parts)

