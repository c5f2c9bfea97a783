"""Which nn.Module instances ``fold --modules`` makes function calls of, and which main-graph node belongs to which.

The module tree comes from the export's ``pkg.torch.onnx.name_scopes`` / ``class_hierarchy`` metadata
(``core/model/provenance.py``). The threats are a model whose metadata is missing or contradicts itself (a module
without a class, one path with two classes): folding by it would cut the graph at places the metadata made up, so
such a model is refused with one line naming what is missing, never folded by guesswork. Patterns are fnmatch
patterns over the class (``LlamaDecoderLayer``, ``*Attention``, or the qualified name) or the module path
(``model.layers.*``); a pattern that matches nothing is an error too (a typo must not write an unchanged model).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN
from inspector.core.model.module_tree import ModuleNode
from inspector.core.util.errors import InspectorError
from inspector.core.util.textsafe import one_line

OUTSIDE = -1  # a node of no selected instance


class ModuleMetadataError(InspectorError):
    """The export's module metadata is missing or inconsistent: nothing to fold modules by."""


@dataclass(slots=True)
class Instance:
    """One selected nn.Module instance: where it sits in the module tree, its nearest selected ancestor."""

    number: int
    module: ModuleNode
    parent: int  # number of the nearest selected ancestor, OUTSIDE at the top
    depth: int  # how many selected ancestors it has
    in_subgraph: bool = False  # some of its aten calls sit inside a branch or loop body of a node not its own
    members: list[int] = field(default_factory=list)  # main-graph node indices, its descendants' included

    @property
    def path(self) -> str:
        return self.module.path

    @property
    def class_name(self) -> str:
        return self.module.class_name.rsplit(".", 1)[-1]


def short_class(qualified: str) -> str:
    return qualified.rsplit(".", 1)[-1]


def parse_patterns(text: str | Sequence[str]) -> list[str]:
    """``"A,B"`` or ``["A", "B,C"]`` as a list of non-empty patterns."""
    parts = [text] if isinstance(text, str) else list(text)
    out = [p.strip() for part in parts for p in part.split(",") if p.strip()]
    if not out:
        raise InspectorError("--modules needs at least one class or module path pattern")
    return out


def matches(module: ModuleNode, pattern: str) -> bool:
    cls = module.class_name
    return (fnmatchcase(short_class(cls), pattern) or fnmatchcase(cls, pattern)
            or fnmatchcase(module.path, pattern))


def module_tree(index: ModelIndex) -> ModuleNode:
    """The module tree, refused when the metadata is missing or inconsistent."""
    prov = index.provenance
    if not prov.calls:
        raise ModuleMetadataError("no pkg.torch.onnx.fx_node metadata: not a dynamo export, so no module to fold by")
    root = prov.module_root
    if not root.children:
        raise ModuleMetadataError("no module metadata (pkg.torch.onnx.name_scopes and class_hierarchy, or "
                                  "namespace) on any node: nothing to fold modules by")
    classes: dict[str, str] = {}
    stack = list(root.children.values())
    while stack:
        m = stack.pop()
        if not m.class_name:
            raise ModuleMetadataError(f"module {one_line(m.path, 80)!s} has no class in "
                                      "pkg.torch.onnx.class_hierarchy (missing or shorter than name_scopes)")
        known = classes.setdefault(m.path, m.class_name)
        if known != m.class_name:
            raise ModuleMetadataError(f"module {one_line(m.path, 80)} has two classes in "
                                      f"pkg.torch.onnx.class_hierarchy: {one_line(known, 80)} and "
                                      f"{one_line(m.class_name, 80)}")
        stack.extend(m.children.values())
    return root


def select(root: ModuleNode, patterns: Sequence[str]) -> list[Instance]:
    """The instances some pattern matches, parents before children (pre-order); each pattern must match one."""
    instances: list[Instance] = []
    hit = dict.fromkeys(patterns, False)
    stack: list[tuple[ModuleNode, int, int]] = [(c, OUTSIDE, 0) for c in reversed(root.children.values())]
    while stack:
        module, parent, depth = stack.pop()
        mine = [p for p in patterns if matches(module, p)]
        for p in mine:
            hit[p] = True
        if mine:
            inst = Instance(len(instances), module, parent, depth)
            instances.append(inst)
            parent, depth = inst.number, depth + 1
        stack.extend((c, parent, depth) for c in reversed(module.children.values()))
    missing = [p for p, found in hit.items() if not found]
    if missing:
        names = sorted({short_class(m.class_name) for m in root.subtree() if m is not root})
        raise InspectorError(f"--modules {one_line(missing[0], 80)}: no module class or path matches it "
                             f"(classes here: {one_line(', '.join(names), 300)})")
    return instances




def owners(index: ModelIndex, instances: list[Instance], maps: GraphMaps) -> list[int]:
    """Per main-graph node, the innermost selected instance it belongs to (or OUTSIDE); each instance's
    ``members`` filled in. A node without module metadata (one the optimizer made, say a Split) joins the
    innermost instance holding every node it exchanges values with. One pass over the module tree, one over the
    nodes, and one up each node's selected ancestors."""
    calls = index.provenance.calls
    n = len(maps.inputs)
    owner = [-2] * n  # -2: a node of no aten call
    stack: list[tuple[ModuleNode, int]] = [(index.provenance.module_root, OUTSIDE)]
    at = {id(inst.module): inst.number for inst in instances}
    in_branches: list[tuple[int, int]] = []  # (instance, main-graph node whose branch or body holds its call)
    while stack:
        module, current = stack.pop()
        current = at.get(id(module), current)
        for k in module.calls:
            call = calls[k]
            if call.scope is not MAIN and call.scope != MAIN:
                continue
            for p in call.node_paths:
                if len(p) == 1 and type(p[0]) is int:
                    owner[p[0]] = current
                elif current != OUTSIDE and type(p[0]) is int:
                    in_branches.append((current, p[0]))
        stack.extend((c, current) for c in module.children.values())
    for i in range(n):
        if owner[i] == -2:
            owner[i] = _orphan_owner(i, owner, instances, maps)
    for i in range(n):  # in node order: a hoisted producer counts as outside for the nodes reading it
        o = owner[i]
        while o != OUTSIDE and _shared(i, o, owner, instances, maps):
            o = owner[i] = instances[o].parent
    for number, holder in in_branches:  # fine when the If/Loop node itself is the instance's
        if not _within(owner[holder], number, instances):
            instances[number].in_subgraph = True
    for i, o in enumerate(owner):
        while o != OUTSIDE:
            instances[o].members.append(i)
            o = instances[o].parent
    return owner


def _orphan_owner(i: int, owner: list[int], instances: list[Instance], maps: GraphMaps) -> int:
    """The innermost instance holding every known neighbour of node ``i`` (producers of what it reads, readers of
    what it makes); OUTSIDE when a neighbour is outside or none is known."""
    near: set[int] = set()
    for name in maps.reads(i):
        j = maps.producer.get(name)
        if j is not None and owner[j] != -2:
            near.add(owner[j])
    consumers = maps.consumers
    for name in maps.outputs[i]:
        for j in consumers.get(name, ()):
            if owner[j] != -2:
                near.add(owner[j])
        if name in maps.graph_outputs:
            near.add(OUTSIDE)
    if not near or OUTSIDE in near:
        return OUTSIDE
    common: int | None = None
    for o in near:
        common = o if common is None else _common(common, o, instances)
        if common == OUTSIDE:
            break
    return OUTSIDE if common is None else common


def _shared(i: int, o: int, owner: list[int], instances: list[Instance], maps: GraphMaps) -> bool:
    """Whether node ``i`` of instance ``o`` is a computation the instance shares with others rather than its own:
    it reads nothing the instance makes, and what it makes is read both inside and outside the instance. The optimizer
    merges equal nodes of several layers into the first (BERT's attention-mask ``Where`` keeps layer 0's scope and
    feeds layer 1), which would make the first layer's body differ from the others and export a value of one
    instance straight into another."""
    for name in maps.reads(i):
        j = maps.producer.get(name)
        if j is not None and _within(owner[j], o, instances):
            return False
    consumers = maps.consumers
    inside = outside = False
    for name in maps.outputs[i]:
        outside = outside or name in maps.graph_outputs
        for j in consumers.get(name, ()):
            if _within(owner[j], o, instances):
                inside = True
            else:
                outside = True
    return inside and outside


def _within(a: int, o: int, instances: list[Instance]) -> bool:
    """Whether instance ``a`` is ``o`` or inside it."""
    depth = instances[o].depth
    while a != OUTSIDE and instances[a].depth > depth:
        a = instances[a].parent
    return a == o


def _common(a: int, b: int, instances: list[Instance]) -> int:
    while a != b:
        if a == OUTSIDE or b == OUTSIDE:
            return OUTSIDE
        if instances[a].depth >= instances[b].depth:
            a = instances[a].parent
        else:
            b = instances[b].parent
    return a
