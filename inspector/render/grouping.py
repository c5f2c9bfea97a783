"""Which box each node of a flat dynamo export's main graph is drawn in: its aten call, a collapsed ``nn.Module``
namespace, or its own.

One pass over the main graph's nodes and the module tree, in plain lists of ints and strings (no object per node):
a 100k-node export is drawn collapsed to a few hundred boxes. Also the one home of scene ids made unique.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.keys import MAIN
from inspector.core.model.module_tree import ModuleNode

if TYPE_CHECKING:
    from inspector.core.model.index import ModelIndex


@dataclass(slots=True)
class Grouping:
    node_call: list[int]  # per top-level node: index into provenance.calls, or -1 (no call), or a module's slot
    call_box: list[str | None]  # per call (plus a trailing None for -1): its box id, None when shown node by node
    calls: dict[str, AtenCall] = field(default_factory=dict)  # aten-call box id -> call
    modules: dict[str, ModuleNode] = field(default_factory=dict)  # module box id -> module
    # what is expanded, drawn as an outlined group: its id (the box it replaces) -> the call or module, and the
    # innermost expanded module that holds it (None: the graph itself)
    open_calls: dict[str, AtenCall] = field(default_factory=dict)
    open_modules: dict[str, ModuleNode] = field(default_factory=dict)
    parent: dict[str, str | None] = field(default_factory=dict)  # group or box id -> the group it is drawn in
    call_group: list[str | None] = field(default_factory=list)  # per call: the group its nodes are drawn in
    # ``call_box`` and ``call_group`` go on past the calls (and the trailing None) with one entry per module holding
    # bare nodes (``ModuleNode.bare``), which ``node_call`` points those nodes at: from here on, no call's
    calls_end: int = 0


def unique_id(base: str, used: set[str]) -> str:
    key = base
    k = 1
    while key in used:
        k += 1
        key = f"{base}#{k}"
    used.add(key)
    return key


def main_grouping(index: ModelIndex, expanded: frozenset[str]) -> Grouping:
    prov = index.provenance
    calls = prov.calls
    n = len(index.proto.graph.node)
    node_call = [-1] * n
    main: Scope = MAIN
    mine: list[int] = []  # calls with nodes in the main graph's top level
    for k, call in enumerate(calls):
        scope = call.scope
        if scope is not main and scope != main:
            continue
        top = False
        for p in call.node_paths:
            if len(p) == 1:
                i = p[0]
                if i.__class__ is int and 0 <= i < n:
                    node_call[i] = k
                    top = True
        if top:
            mine.append(k)
    call_ids = [""] * len(calls)
    names = [calls[k].name for k in mine]
    if len(set(names)) == len(names):
        for k, name in zip(mine, names):
            call_ids[k] = "call:" + name
    else:  # a repeated FX name (damaged metadata): later calls get "#2", "#3", ...
        used: set[str] = set()
        for k, name in zip(mine, names):
            call_ids[k] = unique_id("call:" + name, used)
    call_box: list[str | None] = [None] * (len(calls) + 1)
    grouping = Grouping(node_call, call_box, call_group=[None] * (len(calls) + 1), calls_end=len(calls) + 1)
    # Top down through the module tree: a module is open (root, or expanded with all its ancestors open),
    # a box (its parent is open and it is not expanded), or inside the box of a collapsed ancestor.
    used_modules: set[str] = set()
    open_modules: list[tuple[ModuleNode, str | None]] = [(prov.module_root, None)]
    collapsed: list[tuple[ModuleNode, str]] = []
    while open_modules:
        module, group = open_modules.pop()
        _place_bare(grouping, module, None, group)
        for k in module.calls:
            cid = call_ids[k]
            grouping.call_group[k] = group
            if cid and cid not in expanded:
                call_box[k] = cid
                grouping.calls[cid] = calls[k]
                grouping.parent[cid] = group
            elif cid:
                grouping.open_calls[cid] = calls[k]
                grouping.parent[cid] = group
                grouping.call_group[k] = cid
        for child in reversed(list(module.children.values())):  # popped in declaration order
            mid = unique_id("mod:" + child.path, used_modules)
            grouping.parent[mid] = group
            if mid in expanded:
                open_modules.append((child, mid))
                grouping.open_modules[mid] = child
            else:
                grouping.modules[mid] = child
                collapsed.append((child, mid))
    for top_module, box in collapsed:
        stack = [top_module]
        while stack:
            module = stack.pop()
            for k in module.calls:
                call_box[k] = box
            _place_bare(grouping, module, box, None)
            stack.extend(module.children.values())
    for k, cid in enumerate(call_ids):  # calls outside the main graph's top level have no box
        if not cid:
            call_box[k] = None
    if len(call_box) > grouping.calls_end:  # (-1 indexed the trailing None; the modules' slots come after it now)
        grouping.node_call = [len(calls) if c == -1 else c for c in node_call]
    return grouping


def _place_bare(grouping: Grouping, module: ModuleNode, box: str | None, group: str | None) -> None:
    """The bare nodes of ``module`` drawn in ``box`` (a collapsed module's), or one by one in ``group`` (the open
    module's), as its calls are."""
    if module.bare:
        slot = len(grouping.call_box)
        grouping.call_box.append(box)
        grouping.call_group.append(group)
        node_call = grouping.node_call
        for i in module.bare:
            if 0 <= i < len(node_call) and node_call[i] == -1:
                node_call[i] = slot
