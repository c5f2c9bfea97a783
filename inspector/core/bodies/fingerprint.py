"""Fingerprints of bodies: hashes that ignore value names, node names and metadata.

The *fingerprint* sees ops, domains, overloads, attributes, wiring and constants; the *template* fingerprint
also masks literal values (attributes and small constants), so the overloads of one template can be aligned
node by node. Subgraphs are folded into the token stream iteratively.
"""

from __future__ import annotations

from dataclasses import dataclass

from onnx import AttributeProto

from inspector.core.bodies.body import Body, walk_body
from inspector.core.bodies.literals import attribute_value, tensor_value
from inspector.core.util.digest import blake2b


@dataclass(frozen=True, slots=True)
class Fingerprints:
    """A body's hashes: of all of it, and of its template (specialised values masked); names ignored."""

    full: str
    template: str


def fingerprint(body: Body) -> Fingerprints:
    names: dict[str, str] = {}
    for k, name in enumerate(body.canonical_inputs if body.canonical_inputs is not None else body.inputs):
        names[name] = f"in{k}"
    full = blake2b(digest_size=10)
    tmpl = blake2b(digest_size=10)

    def feed(common: str, literal: str = "", masked: str = "") -> None:
        full.update((common + literal + "\x1f").encode())
        tmpl.update((common + masked + "\x1f").encode())

    for k, (name, init) in enumerate(body.constants.items()):
        names[name] = f"c{k}"
        _value, key = tensor_value(init)
        feed(f"C{k}:{init.data_type}", f"={key}", "=?")
    counter = 0

    def ref(name: str) -> str:
        if not name:
            return "_"
        if name not in names:
            names[name] = f"x{len(names)}"  # outer-scope or unknown value: numbered by first use
        return names[name]

    for path, node in walk_body(body.nodes):
        depth = sum(1 for p in path if isinstance(p, str))
        ins = ",".join(ref(n) for n in node.input)
        outs = []
        for n in node.output:
            if n:
                names[n] = f"v{counter}"
                outs.append(names[n])
                counter += 1
            else:
                outs.append("_")
        feed(f"N{depth}|{node.domain}|{node.op_type}|{node.overload}|{ins}|{','.join(outs)}")
        for attr in sorted(node.attribute, key=lambda a: a.name):
            if attr.ref_attr_name:
                feed(f"A{attr.name}@{attr.ref_attr_name}")
            elif attr.type == AttributeProto.GRAPH:
                g = attr.g
                for v in g.input:
                    names[v.name] = f"v{counter}"
                    counter += 1
                feed(f"G{attr.name}:{len(g.input)}:{len(g.node)}:" + ",".join(ref(v.name) for v in g.output))
            elif attr.type == AttributeProto.GRAPHS:
                feed(f"GS{attr.name}:{len(attr.graphs)}")
            else:
                _value, key = attribute_value(attr)
                feed(f"A{attr.name}:{attr.type}", f"={key}", "=?")
    feed("O|" + ",".join(ref(n) for n in body.outputs))
    return Fingerprints(full.hexdigest(), tmpl.hexdigest())
