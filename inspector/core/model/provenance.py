"""Aten calls and the module tree of flat dynamo exports, from node ``metadata_props``.

All nodes sharing one ``pkg.torch.onnx.fx_node`` text form one *aten call*; calls with one target form a
family. Arguments are parsed only when asked for (``AtenCall.fx``), so indexing a 100k-node export costs
one pass over the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import onnx

from inspector.core.model.calls import AtenCall
from inspector.core.model.functions import scan_model
from inspector.core.model.fx import fx_head, fx_name_of, op_target, target_of
from inspector.core.model.scan import ScanResult

if TYPE_CHECKING:
    from inspector.core.model.module_tree import ModuleNode


@dataclass(slots=True)
class ProvenanceIndex:
    """The aten calls read from the nodes' FX metadata, and how many nodes had none or damaged."""

    calls: list[AtenCall]
    nodes_with_metadata: int
    nodes_without_fx: int
    damaged: int  # fx texts that could not be read as FX at all
    damaged_texts: frozenset[str] = frozenset()  # those texts (not read again by a scan made like this one's)
    recognised: int = 0  # calls recognised by body template (``core.model.recognise``), last in ``calls``
    _modules: ModuleNode | None = field(default=None, repr=False)
    _graph: onnx.GraphProto | None = field(default=None, repr=False)  # the main graph (its nodes of no call)
    # ``by_target`` as the index's families were made from it, and how many calls there were then (``keep_targets``)
    _targets: tuple[int, dict[str, list[AtenCall]]] | None = field(default=None, repr=False)

    @property
    def has_provenance(self) -> bool:
        return bool(self.calls)

    def by_target(self) -> dict[str, list[AtenCall]]:
        """The calls by target, in the order of their first calls; each list in call order (the lists may be the
        index's own: read them, do not change them)."""
        kept = self._targets
        if kept is not None and kept[0] == len(self.calls):
            return dict(kept[1])
        out: dict[str, list[AtenCall]] = {}
        for c in self.calls:
            out.setdefault(c.target, []).append(c)
        return out

    def keep_targets(self, by_target: dict[str, list[AtenCall]]) -> None:
        """Keep ``by_target`` of every call, as the index grouped them for its families, for ``by_target`` to hand
        out again while no call is added: a summary asks for them once more (5 ms at 100k nodes, warm, CPU)."""
        self._targets = (len(self.calls), by_target)

    @property
    def module_root(self) -> ModuleNode:
        """The ``nn.Module`` tree, built on first use (it reads each call's metadata once)."""
        if self._modules is None:
            from inspector.core.model.module_tree import build_module_tree  # (the app's and fold's: start-up)

            self._modules = build_module_tree(self.calls, self._graph)
        return self._modules


def build_provenance(model: onnx.ModelProto, scanned: ScanResult | None = None) -> ProvenanceIndex:
    """Aten calls from a scan's fx_node groups; targets and names are read from the FX text's head only."""
    if scanned is None:
        scanned = scan_model(model)
    calls: list[AtenCall] = []
    damaged: list[str] = []
    first, rules, target, scopes = scanned.first_node, scanned.rules, _target, scanned.name_scopes
    same = scanned.same_calls
    for key, paths in scanned.groups.items():
        scope, fx_text = key
        before = same.get(key) if same else None
        if before is not None and before.recognised and hasattr(before, "in_graph"):
            calls.append(before.in_graph(model.graph.node))  # (a matcher's call: it reads this model's nodes)
            continue
        if before is not None:  # the same nodes as a call of another model, whose head was read (scan_like)
            calls.append(AtenCall(fx_text, before.name, before.raw_target, before.target, scope, paths, first[key],
                                  tuple(rules[key]) if key in rules else (),
                                  scopes.get(key, "") if scanned.scopes_read else None,
                                  recognised=before.recognised, candidates=before.candidates,
                                  ruled_out=before.ruled_out))
            continue  # (a call recognised by template stays one: the same nodes fit the same templates)
        head = fx_head(fx_text)
        if head is None:
            damaged.append(fx_text)
            raw, name = target_of(fx_text) or "?", fx_name_of(fx_text) or f"call{len(calls)}"
        else:
            name, raw = head
        calls.append(AtenCall(fx_text, name, raw, target(raw), scope, paths, first[key],
                              tuple(rules[key]) if key in rules else (),
                              scopes.get(key, "") if scanned.scopes_read else None))
    return ProvenanceIndex(calls, scanned.nodes_with_metadata, scanned.nodes_without_fx, len(damaged),
                           frozenset(damaged), _graph=model.graph)


@lru_cache(maxsize=4096)
def _target(raw: str) -> str:
    return op_target(raw) or raw
