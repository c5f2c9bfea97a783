"""A cheap key per aten call group such that equal keys mean equal body fingerprints.

A 100k-node export has ~80k aten calls but a few hundred distinct bodies. Building each call's ``Body``
(``group_body``, which parses the FX arguments) and hashing it (``fingerprint``) costs ~0.1 ms per call; this key
reads the same nodes directly and costs a few microseconds, so the specialiser builds and fingerprints one body
per distinct key and binds every other call to it.

The key follows ``body.group_body`` and ``fingerprint.fingerprint`` step by step: the same constants (by
initializer name, which fixes their value), the same numbering of values (inputs by first use, constants,
node outputs), the same node fields (attributes as serialized bytes: stricter than their values, so a
difference there only costs a second body). Groups with subgraphs, or outside the main graph, get no key.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

from inspector.core.body import GraphMaps, is_small_constant
from inspector.core.provenance import AtenCall
from inspector.core.walk import may_have_subgraphs

_FX_REF = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)")  # how FX text names a node; a superset of the tensor arguments


def group_key(call: AtenCall, maps: GraphMaps) -> Hashable | None:
    """The key of ``call``'s group body (None when it has none that this shortcut covers)."""
    top: list[int] = []
    for p in call.node_paths:
        if len(p) != 1 or not isinstance(p[0], int):
            return None
        top.append(p[0])
    top.sort()
    graph_nodes = maps.graph.node
    nodes = [graph_nodes[i] for i in top]
    # each protobuf field is read once: reading a repeated field builds Python strings every time
    io: list[tuple[list[str], list[str]]] = []
    produced: set[str] = set()
    for n in nodes:
        if may_have_subgraphs(n):
            return None
        ins, outs = list(n.input), list(n.output)
        io.append((ins, outs))
        produced.update(x for x in outs if x)
    # what group_body calls inputs (first use) and constants, in its order
    inputs: list[str] = []
    constants: list[str] = []
    candidates: list[str] = []  # small initializers: constants unless they are tensor arguments of the call
    seen: set[str] = set()
    initializers, parameters = maps.initializers, maps.parameters
    for ins, _outs in io:
        for name in ins:
            if not name or name in produced or name in seen:
                continue
            seen.add(name)
            init = initializers.get(name)
            if init is not None and name not in parameters and is_small_constant(init):
                candidates.append(name)
            inputs.append(name)
    if candidates:
        constants = candidates
        # tensor arguments are among the %references of the FX text; parse it only if a candidate is one of them
        refs = {maps.onnx_name.get(r, r) for r in _FX_REF.findall(call.fx_text)}
        if any(c in refs for c in candidates):
            tensor_args = set(maps.tensor_args(call))
            constants = [c for c in candidates if c not in tensor_args]
        if constants:
            baked = set(constants)
            inputs = [x for x in inputs if x not in baked]
    # fingerprint's numbering: inputs, then constants, then outputs as they are made, others by first use
    names: dict[str, str] = {name: f"in{k}" for k, name in enumerate(inputs)}
    for k, name in enumerate(constants):
        names[name] = f"c{k}"

    def ref(name: str) -> str:
        if not name:
            return "_"
        if name not in names:
            names[name] = f"x{len(names)}"
        return names[name]

    counter = 0
    tokens: list[Hashable] = []
    for n, (ins, outs) in zip(nodes, io):
        read = tuple(ref(x) for x in ins)  # before this node's outputs are numbered, as fingerprint does
        made = []
        for x in outs:
            if x:
                names[x] = f"v{counter}"
                counter += 1
            made.append(names[x] if x else "_")
        tokens.append((n.domain, n.op_type, n.overload, read, tuple(made),
                       tuple(a.SerializeToString() for a in n.attribute)))
    inside = set(top)
    consumers, graph_outputs = maps.consumers, maps.graph_outputs
    outputs = [x for _ins, outs in io for x in outs
               if x and (x in graph_outputs or any(c not in inside for c in consumers.get(x, ())))]
    return tuple(constants), tuple(tokens), tuple(ref(x) for x in outputs)
