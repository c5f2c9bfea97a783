"""Bodies and aten signatures as lines of text segments, some tied to specialised values.

The GUI and the reports render the same segments, each with its own escaping and highlighting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import onnx

from inspector.core.aten.schemas import BoundArgument
from inspector.core.bodies.body import Body, walk_body
from inspector.core.bodies.literals import attribute_value
from inspector.core.model.signature import CallSignature
from inspector.core.model.walk import as_text
from inspector.core.specialise.categories import value_text
from inspector.core.specialise.specialiser import SpecialisedValue

MAX_VALUE_CHARS = 80


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    spec: SpecialisedValue | None = None
    argument: BoundArgument | None = None


Line = list[Segment]


def _names(names: Sequence[str | bytes]) -> str:
    """Value names joined; one that is not valid UTF-8 (bytes: a model above ``index.EAGER_TEXT_CHECK_NODES`` nodes
    is not repaired up front) by its decoding."""
    return ", ".join(map(as_text, names))


def body_lines(body: Body, specialised: Sequence[SpecialisedValue] = ()) -> list[Line]:
    """ONNX-text-style lines: inputs, baked constants, one line per node (subgraphs indented), outputs."""
    by_slot = {(s.literal.path, s.literal.name): s for s in specialised}
    lines: list[Line] = [[Segment("inputs: " + (_names(body.inputs) or "-"))]]
    if body.constants:
        lines.append([Segment("constants:")])
        for name, tensor in body.constants.items():
            from inspector.core.bodies.literals import tensor_value

            value, _key = tensor_value(tensor)
            lines.append([Segment(f"  {as_text(name)} = "), Segment(_short(value), by_slot.get(((), name)))])
    for path, node in walk_body(body.nodes):
        depth = sum(1 for p in path if isinstance(p, str))
        indent = "  " * (depth + 1)
        outs = _names(node.output)
        op = f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
        if node.overload:
            op += f":{node.overload}"
        line: Line = [Segment(f"{indent}{outs} = {op}")]
        attrs = [a for a in node.attribute]
        if attrs:
            line.append(Segment("<"))
            for k, attr in enumerate(attrs):
                if k:
                    line.append(Segment(", "))
                if attr.ref_attr_name:
                    line.append(Segment(f"{attr.name} = @{attr.ref_attr_name}", by_slot.get((path, attr.name))))
                elif attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                    line.append(Segment(f"{attr.name} = graph"))
                else:
                    value, _key = attribute_value(attr)
                    line.append(Segment(f"{attr.name} = "))
                    line.append(Segment(_short(value), by_slot.get((path, attr.name))))
            line.append(Segment(">"))
        line.append(Segment(f"({_names(node.input)})"))
        lines.append(line)
    lines.append([Segment("outputs: " + (_names(body.outputs) or "-"))])
    return lines


def signature_line(sig: CallSignature, specialised: Sequence[SpecialisedValue] = ()) -> Line:
    """``aten::transpose.int(self=%view, dim0=1, dim1=2) -> Tensor(a)`` with arguments tied to what they baked."""
    if sig.schema is None:
        return [Segment(sig.problem or "no aten signature")]
    linked: dict[str, SpecialisedValue] = {}
    for s in specialised:
        for link in s.links:
            linked.setdefault(link.parameter, s)
    line: Line = [Segment(f"{sig.schema.target}(")]
    bound = list(sig.bound) or []
    params = [b.parameter for b in bound] if bound else list(sig.schema.parameters)
    for k, p in enumerate(params):
        if k:
            line.append(Segment(", "))
        b = bound[k] if bound else None
        if b is None:
            line.append(Segment(f"{p.type} {p.name}"))
            continue
        shown = _arg_text(b.value) if b.provided else "<missing>"
        suffix = " (default)" if b.is_default else ""
        line.append(Segment(f"{p.name}=", argument=b))
        line.append(Segment(shown + suffix, linked.get(p.name), b))
    rets = ", ".join(r.type + (f" {r.name}" if r.name else "") for r in sig.schema.returns)
    line.append(Segment(f") -> {rets if len(sig.schema.returns) == 1 else f'({rets})'}"))
    return line


def line_text(line: Line) -> str:
    return "".join(s.text for s in line)


def _arg_text(value: object) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_arg_text(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_arg_text(v) for v in value) + ")"
    return repr(value)


def _short(value: object) -> str:
    """A literal as the body shows it: a string as it is, anything else as every value reads (``value_text``)."""
    if not isinstance(value, str):
        return value_text(value, MAX_VALUE_CHARS)
    return value if len(value) <= MAX_VALUE_CHARS else value[: MAX_VALUE_CHARS - 1] + "…"
