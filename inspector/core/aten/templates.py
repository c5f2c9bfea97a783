"""The body template catalogue: for each torchlib overload, the ONNX body its one-op export lowers to (op types,
wiring, attributes and constant operands), with the literal slots that moved with an argument (or an input
dimension) masked and named by what moved them.

``resources/aten_templates.txt`` is learned, not written: ``scripts/gen_templates.py`` reads the exports that
``scripts/gen_evidence.py`` makes (a base call and variants that change one argument at a time) and keeps, per
overload, each distinct body structure; a slot whose value differed between a variant and the base is masked with
the parameter the variant changed. ``inspector.core.model.recognise`` matches the templates against nodes that carry
no fx metadata. The file is package data, read once on first use; a line that is not a well-formed template is
skipped rather than trusted. Canonical literal values (``canonical_attribute``, ``canonical_tensor``) live here so
that the generator and the matcher compare literals in one form.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

import onnx
from onnx import AttributeProto

from inspector.core.aten.resources import read_resource_lines
from inspector.core.util.floats import float32
from inspector.core.util.plain_tensors import plain_tensor

CATALOGUE_FILE = "aten_templates.txt"
SMALL_TENSOR = 64  # constants with more elements are compared by type and shape only (weights, tables)
SHAPE_PARAMETER = "#shape"  # the slot moved with an input dimension (shape-specialised), not with an argument
_LENGTH = re.compile(r"(.+)\[([1-9][0-9]{0,3})\]")  # a list template at another length (``with_list_length``)

RefKind = Literal["n", "x", "c", "-"]  # a node's output, an outside tensor, a constant operand, an absent operand


@dataclass(frozen=True, slots=True)
class Ref:
    """Where a template node's operand comes from: output ``b`` of template node ``a`` (``n``), the ``a``-th
    outside tensor (``x``), the ``a``-th constant operand (``c``: an initializer or a Constant node), or nothing
    (``-``: an optional operand left out)."""

    kind: RefKind
    a: int = 0
    b: int = 0


@dataclass(frozen=True, slots=True)
class Slot:
    """A literal of a template: fixed (``value``), or masked with the parameters that moved it and, where the
    evidence catalogue explains it, the relation that maps the argument to the literal; a masked constant keeps
    its element type and rank as ``value`` (``{"t": 1, "n": 0}``: a float scalar)."""

    value: Any = None
    moves_with: tuple[str, ...] = ()
    relation: str | None = None

    @property
    def masked(self) -> bool:
        return bool(self.moves_with)


@dataclass(frozen=True, slots=True)
class TemplateNode:
    """One node of a body template: its operator, where its operands come from, its attributes' slots."""

    domain: str
    op_type: str
    inputs: tuple[Ref, ...]
    attributes: tuple[tuple[str, Slot], ...]
    outputs: int


@dataclass(frozen=True, slots=True)
class Template:
    """One body of one overload; ``name`` (``aten::transpose.int#0``) is how a recognised call cites it."""

    name: str
    target: str
    nodes: tuple[TemplateNode, ...]
    constants: tuple[Slot, ...]
    outputs: tuple[tuple[int, int], ...]  # (node, output) pairs the body hands out, in order
    # the aten parameter each outside tensor (``x`` operand) was passed as in the one-op export ("" where not known):
    # what a recognised call binds its tensors to (``aten::add.Tensor(self=mean, other=...)``)
    tensors: tuple[str, ...] = ()
    # "fused": the body the optimizer makes of this call and one before it (a view of a view: one Reshape, no
    # ``allowzero``), not a lone call's lowering: no evidence that a longer body is lone calls (``chain_of_calls``)
    form: str = ""
    # the name FX gave the body's output in its export where it is not the op's (a batch norm fused into a Conv makes
    # ``getitem``, its first result's): what the name of a graph's value says of this body (``recognise_names``)
    named: str = ""
    # the optimizer's rewrite rules that made a fused body (its export's ``pkg.onnxscript.rewriter.rule_name``): a call
    # recognised by it carries them, as a call with its metadata does, so its values are not said to be torchlib's
    rules: tuple[str, ...] = ()

    @property
    def sink(self) -> int:
        """The node the matcher anchors on: the last one (the nodes are in topological order)."""
        return len(self.nodes) - 1


def canonical_float(v: float) -> float | str:
    """``v`` rounded to float32 (without numpy), an infinity or NaN as its text."""
    f = float32(v)
    return f if math.isfinite(f) else repr(f)


def canonical_tensor(t: onnx.TensorProto) -> Any:
    """``{"t": dtype, "s": shape, "v": values}``; ``v`` only for small tensors with their data in the file."""
    out: dict[str, Any] = {"t": int(t.data_type), "s": [int(d) for d in t.dims]}
    count = math.prod(out["s"]) if out["s"] else 1
    if count > SMALL_TENSOR or t.data_location == onnx.TensorProto.EXTERNAL:
        return out
    plain = plain_tensor(t)  # without numpy, and the rest of onnx, for the plain numeric types (start-up)
    if plain is not None:
        values, kind = plain.first(plain.count), "f" if plain.code in "fd" else "i"
    else:
        from onnx import numpy_helper  # (the rest of onnx only where a tensor is read: core/util/onnxpkg.py)

        try:
            arr = numpy_helper.to_array(t).reshape(-1)
        except (ValueError, TypeError, AttributeError):
            return out
        values, kind = arr.tolist(), arr.dtype.kind
    if kind == "f":
        out["v"] = [canonical_float(x) for x in values]
    elif kind in "iub":
        out["v"] = [int(x) for x in values]
    else:
        out["v"] = [str(x) for x in values]
    return out


def canonical_attribute(a: onnx.AttributeProto) -> Any:
    """An attribute's value in the catalogue's form (JSON-able, floats as float32 values)."""
    t = a.type
    if t == AttributeProto.INT:
        return int(a.i)
    if t == AttributeProto.FLOAT:
        return canonical_float(a.f)
    if t == AttributeProto.STRING:
        return a.s.decode("utf-8", "replace")
    if t == AttributeProto.INTS:
        return [int(x) for x in a.ints]
    if t == AttributeProto.FLOATS:
        return [canonical_float(x) for x in a.floats]
    if t == AttributeProto.STRINGS:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if t == AttributeProto.TENSOR:
        return canonical_tensor(a.t)
    return f"<{AttributeProto.AttributeType.Name(t).lower()}>"


def constant_node_value(node: onnx.NodeProto) -> Any:
    """A Constant node's value in the catalogue's form (``value`` as a tensor, else its one ``value_*``)."""
    for a in node.attribute:
        if a.name == "value":
            return canonical_tensor(a.t)
    return canonical_attribute(node.attribute[0]) if node.attribute else None


def _slot(raw: Any) -> Slot:
    if isinstance(raw, dict) and "p" in raw:
        rel, kind = raw.get("r"), raw.get("k")
        return Slot(kind if isinstance(kind, dict) else None, tuple(str(p) for p in raw["p"]),
                    rel if isinstance(rel, str) else None)
    if isinstance(raw, dict) and "v" in raw:
        return Slot(raw["v"])
    raise ValueError("not a slot")


def slot_json(slot: Slot) -> dict[str, Any]:
    if slot.masked:
        return {"p": list(slot.moves_with), **({"r": slot.relation} if slot.relation else {}),
                **({"k": slot.value} if slot.value is not None else {})}
    return {"v": slot.value}


def parse_template(line: str) -> Template:
    """One catalogue line; ``ValueError`` (or ``KeyError``/``TypeError``) when it is not a template."""
    raw = json.loads(line)
    nodes = []
    for domain, op, inputs, attrs, nout in raw["nodes"]:
        refs = tuple(Ref(str(k), int(a), int(b)) for k, a, b in inputs)  # type: ignore[arg-type]
        if any(r.kind not in ("n", "x", "c", "-") for r in refs):
            raise ValueError("bad operand")
        nodes.append(TemplateNode(str(domain), str(op), refs,
                                  tuple((str(k), _slot(v)) for k, v in sorted(attrs.items())), int(nout)))
    for j, node in enumerate(nodes):
        if any(r.kind == "n" and not 0 <= r.a < j for r in node.inputs):
            raise ValueError("not in topological order")
    tensors = raw.get("xp", [])
    if not isinstance(tensors, list) or not all(isinstance(p, str) for p in tensors):
        raise ValueError("bad tensor parameters")
    form, named, rules = raw.get("form", ""), raw.get("named", ""), raw.get("rules", [])
    if not isinstance(form, str) or not isinstance(named, str) or not isinstance(rules, list) \
            or not all(isinstance(r, str) for r in rules):
        raise ValueError("bad form, name or rules")
    return Template(str(raw["name"]), str(raw["target"]), tuple(nodes),
                    tuple(_slot(c) for c in raw["consts"]), tuple((int(j), int(o)) for j, o in raw["outputs"]),
                    tuple(tensors), form, named, tuple(rules))


def template_json(t: Template) -> str:
    nodes = [[n.domain, n.op_type, [[r.kind, r.a, r.b] for r in n.inputs],
              {k: slot_json(s) for k, s in n.attributes}, n.outputs] for n in t.nodes]
    return json.dumps({"name": t.name, "target": t.target, "nodes": nodes,
                       "consts": [slot_json(c) for c in t.constants], "outputs": [list(o) for o in t.outputs],
                       **({"xp": list(t.tensors)} if any(t.tensors) else {}), **({"form": t.form} if t.form else {}),
                       **({"named": t.named} if t.named else {}), **({"rules": list(t.rules)} if t.rules else {})},
                      sort_keys=True, separators=(",", ":"))


def template_named(name: str) -> Template | None:
    """The shipped template called ``name`` (``aten::add.Tensor#2``; ``aten::cat#0[4]``: ``with_list_length``), None
    if there is none."""
    got = _by_name().get(name)
    if got is None and (m := _LENGTH.fullmatch(name)) is not None:
        base = _by_name().get(m.group(1))
        if base is not None and list_template(base):
            return with_list_length(base, int(m.group(2)))
    return got


def list_template(t: Template) -> bool:
    """Whether ``t`` reads each tensor of one list parameter once, in order, so that a model's call may pass any
    number of them where the one-op export passed two: one node reading them all (cat's Concat, einsum's Einsum;
    swin's cat of four slices), or one node per tensor, alike, whose outputs one last node reads in order (stack's
    Unsqueeze of each tensor and their Concat: Mamba's scan stacks one state per step, eight of them)."""
    if len(t.tensors) < 2 or len(set(t.tensors)) != 1 or not t.tensors[0]:
        return False
    if len(t.nodes) == 1:
        if [(r.kind, r.a) for r in t.nodes[0].inputs] != [("x", k) for k in range(len(t.tensors))]:
            return False
    elif _elements(t) is None:
        return False
    from inspector.core.aten.schemas import SchemaCatalogue  # (the schemas only where a template may be one)

    schema = SchemaCatalogue.default().get(t.target)
    return schema is not None and any(p.name == t.tensors[0] and p.type == "Tensor[]" for p in schema.parameters)


def _elements(t: Template) -> tuple[int, bool] | None:
    """Where a template of one node per tensor of its list (``list_template``) reads its tensor, and whether its nodes
    share their constant operands (an optimised export's one axes initializer) or each reads its own; None for any
    other template. Each such node reads its tensor and constants alone, the nodes are alike but for which tensor and
    constants they read, and the last node reads each one's output in order and is the body's output."""
    n = len(t.tensors)
    if len(t.nodes) != n + 1 or t.outputs != ((n, 0),) or t.nodes[-1].inputs != tuple(Ref("n", k) for k in range(n)):
        return None
    first = t.nodes[0]
    at = [k for k, r in enumerate(first.inputs) if r.kind == "x"]
    if len(at) != 1 or first.outputs != 1 or any(r.kind not in ("x", "c") for r in first.inputs):
        return None
    constants = [r.a for r in first.inputs if r.kind == "c"]
    shared = all(tuple(r.a for r in node.inputs if r.kind == "c") == tuple(constants) for node in t.nodes[:n])
    seen: set[int] = set()
    for k, node in enumerate(t.nodes[:n]):
        own = [r.a for r in node.inputs if r.kind == "c"]
        if (node.domain, node.op_type, node.attributes, node.outputs) != (
                first.domain, first.op_type, first.attributes, first.outputs) \
                or [r.kind for r in node.inputs] != [r.kind for r in first.inputs] or node.inputs[at[0]] != Ref("x", k):
            return None
        if not shared:  # (each node its own constants, alike: copied for each tensor of a longer list)
            if seen & set(own) or len(set(own)) != len(own) \
                    or any(t.constants[a] != t.constants[b] for a, b in zip(own, constants, strict=True)):
                return None
            seen.update(own)
    return at[0], shared


def with_list_length(t: Template, n: int) -> Template:
    """A ``list_template`` reading ``n`` tensors of its list, named ``NAME[n]``: how a call it recognised cites it.
    Where each tensor has a node of its own, each of the ``n`` gets one, reading the first one's constants where the
    nodes share them, else copies of them."""
    name, tensors = f"{t.name}[{n}]", (t.tensors[0],) * n
    got = _elements(t) if len(t.nodes) > 1 else None
    if got is None:
        node = t.nodes[0]
        return replace(t, name=name, nodes=(replace(node, inputs=tuple(Ref("x", k) for k in range(n))),),
                       tensors=tensors)
    at, shared = got
    first = t.nodes[0]
    own = [r.a for r in first.inputs if r.kind == "c"]
    constants = list(t.constants) if shared else [t.constants[a] for _k in range(n) for a in own]
    nodes = []
    for k in range(n):
        renumbered = iter(range(k * len(own), (k + 1) * len(own)))
        inputs = tuple(Ref("x", k) if j == at else r if shared or r.kind != "c" else Ref("c", next(renumbered))
                       for j, r in enumerate(first.inputs))
        nodes.append(replace(first, inputs=inputs))
    sink = replace(t.nodes[-1], inputs=tuple(Ref("n", k) for k in range(n)))
    return replace(t, name=name, nodes=(*nodes, sink), constants=tuple(constants), outputs=((n, 0),),
                   tensors=tensors)


@functools.lru_cache(maxsize=1)
def _by_name() -> dict[str, Template]:
    return {t.name: t for t in load_templates()}


@functools.lru_cache(maxsize=1)
def load_templates() -> tuple[Template, ...]:
    """The shipped catalogue (empty when the file is missing)."""
    out: list[Template] = []
    for line in read_resource_lines(CATALOGUE_FILE) or []:
        if not line.strip() or line.startswith("#"):
            continue
        try:
            out.append(parse_template(line))
        except (ValueError, KeyError, TypeError):
            continue
    return tuple(out)
