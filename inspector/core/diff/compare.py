"""Comparing matched pairs: functions, families, aten calls, function calls and other nodes, bodies and their
baked constants. Every difference goes to one ``Recorder``, which merges identical changes at several sites."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import filterfalse
from typing import Any

import onnx

from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.bodies.body import Body, function_body, function_body_by_use
from inspector.core.bodies.fingerprint import Fingerprints, fingerprint
from inspector.core.bodies.literals import Literal, tensor_value
from inspector.core.diff.arguments import arguments_text, name_arguments, passed_differently
from inspector.core.diff.bodies import (
    Delta,
    attribute_detail,
    attribute_keys,
    count_nodes,
    edits_summary,
    function_signature,
    in_use_order,
    node_edits,
    op_label,
    order_fingerprint,
    reader,
    signature_detail,
    subgraph_edits,
    value_deltas,
)
from inspector.core.diff.cut import Unit
from inspector.core.diff.model import MAX_EDITS, ArgChange, Change, NodeEdit, Section
from inspector.core.diff.sources import Sources
from inspector.core.diff.units import Side, UnitPairs, aten_family, not_in_place
from inspector.core.diff.values import content_digest, unwrap, value_difference
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import Family
from inspector.core.model.keys import FunctionKey
from inspector.core.util.units import plural


class Recorder:
    """The changes found so far, in the order found."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self._merged: dict[tuple[Any, ...], Change] = {}

    def add(self, change: Change, merge: tuple[Any, ...] | None = None, site: str | None = None) -> None:
        """Record a change; changes with the same ``merge`` key become one change with several sites."""
        if merge is not None:
            existing = self._merged.get(merge)
            if existing is not None:
                if site is not None and site not in existing.sites:
                    existing.sites.append(site)
                return
            self._merged[merge] = change
        if site is not None and site not in change.sites:
            change.sites.append(site)
        self.changes.append(change)


class Comparer:
    """Functions, families, aten calls, function calls and other main-graph nodes of matched pairs."""

    def __init__(self, pairs: UnitPairs, recorder: Recorder, catalogue: SchemaCatalogue | None) -> None:
        self.pairs = pairs
        self.A, self.B = pairs.A, pairs.B
        self.add = recorder.add
        self.catalogue = catalogue
        self._body_cache: dict[tuple[str, ...], tuple[list[Delta], list[NodeEdit]]] = {}
        self._constant_cache: dict[tuple[Any, ...], Delta] = {}
        self._passed: dict[tuple[str, str], tuple[ArgChange, ...]] = {}  # per body pair (``passed_differently``)

    @property
    def cat(self) -> SchemaCatalogue:
        if self.catalogue is None:
            self.catalogue = SchemaCatalogue.default()
        return self.catalogue

    def compare_functions(self, fmap: dict[FunctionKey, FunctionKey]) -> None:
        A, B = self.A, self.B
        for ka, kb in fmap.items():
            family = A.family_of_key.get(ka, str(FunctionKey(ka.domain, ka.name)))
            fa_proto, fb_proto = A.functions[ka], B.functions[kb]
            if ka != kb:
                self.add(Change("overload_renamed", "function", family, str(ka), str(ka), str(kb),
                                f"{ka} is now {kb} (same template)", [str(ka)]))
            sig_a, sig_b = function_signature(fa_proto), function_signature(fb_proto)
            if sig_a != sig_b:
                self.add(Change("signature_changed", "function", family, str(ka), sig_a, sig_b,
                                signature_detail(sig_a, sig_b), [str(ka)]))
            fpa, fpb = A.function_fp(ka), B.function_fp(kb)
            if fpa.full == fpb.full:
                continue
            ba, bb = function_body(ka, fa_proto), function_body(kb, fb_proto)
            # a folded aten function: its values are labelled with the arguments of its first call
            call_a, call_b = A.links.aten_call_of(ka), B.links.aten_call_of(kb)
            self.report_bodies("function", family, str(ka), ba, fpa, bb, fpb,
                               (A, call_a) if call_a is not None else None, (B, call_b))

    def compare_families(self, fmap: dict[FunctionKey, FunctionKey], explained: set[FunctionKey],
                         sources: Sources) -> None:
        A, B = self.A, self.B
        # families and overloads whose calls are the other side's nodes under another source (``diff.sources``)
        targets_a, targets_b = sources.covered_targets()
        same_a, same_b = sources.families()
        fams_a = {(f.kind, f.domain, f.name): f for f in A.index.families}
        fams_b = {(f.kind, f.domain, f.name): f for f in B.index.families}
        mapped_b = set(fmap.values())
        # a folded model reads its functions as aten families: the flat aten family lives on in them
        folded_labels = {f.label for f in (*fams_a.values(), *fams_b.values()) if f.aten_family is not None
                         and all(o.function in explained for o in f.overloads)}
        for key, fam in fams_a.items():
            if key not in fams_b:
                if fam.kind == "function" and all(o.function in explained for o in fam.overloads):
                    continue
                if fam.kind == "aten_call" and (fam.label in folded_labels or fam.label in same_a):
                    continue
                self.add(Change("family_removed", fam.kind, fam.label, fam.label, _family_json(fam), None,
                                _family_detail(fam), [fam.label]))
        for key, fam in fams_b.items():
            if key not in fams_a:
                if fam.kind == "function" and all(o.function in explained for o in fam.overloads):
                    continue
                if fam.kind == "aten_call" and (fam.label in folded_labels or fam.label in same_b):
                    continue
                self.add(Change("family_added", fam.kind, fam.label, fam.label, None, _family_json(fam),
                                _family_detail(fam), [fam.label]))
        for key, fam_a in fams_a.items():
            fam_b = fams_b.get(key)
            if fam_b is None:
                continue
            if fam_a.kind == "function":
                for ov in fam_a.overloads:
                    if ov.function is not None and ov.function not in fmap and ov.function not in explained:
                        self.add(Change("overload_removed", "function", fam_a.label, str(ov.function),
                                        str(ov.function), None, f"{ov.function} ({plural(ov.call_count, 'call')})",
                                        [str(ov.function)]))
                for ov in fam_b.overloads:
                    if ov.function is not None and ov.function not in mapped_b and ov.function not in explained:
                        self.add(Change("overload_added", "function", fam_b.label, str(ov.function), None,
                                        str(ov.function), f"{ov.function} ({plural(ov.call_count, 'call')})",
                                        [str(ov.function)]))
            else:
                ovs_a = {o.overload: o for o in fam_a.overloads}
                ovs_b = {o.overload: o for o in fam_b.overloads}
                for name, ov in ovs_a.items():
                    if name not in ovs_b and ov.target not in targets_a:
                        self.add(Change("overload_removed", "aten_call", fam_a.label, ov.label, ov.label, None,
                                        f"{ov.label} ({plural(ov.call_count, 'call')})", [ov.label]))
                for name, ov in ovs_b.items():
                    if name not in ovs_a and ov.target not in targets_b:
                        self.add(Change("overload_added", "aten_call", fam_b.label, ov.label, None, ov.label,
                                        f"{ov.label} ({plural(ov.call_count, 'call')})", [ov.label]))

    # -- aten calls ---------------------------------------------------------------------------------------------------

    def compare_aten(self, umap: dict[int, int], fmap: dict[FunctionKey, FunctionKey],
                     sources: Sources) -> None:
        A, B = self.A, self.B
        families: dict[str, str] = {}
        targets: dict[int, set[str]] = {}  # id of a side -> the targets of its calls, on first use
        # families of calls matched across sources or covered (``diff.sources``): not reported added or removed
        across_a, across_b = sources.families()
        covered_a, covered_b = sources.calls_a, sources.calls_b  # whose nodes are all on the other side

        def has_target(side: Side, target: str) -> bool:
            found = targets.get(id(side))
            if found is None:
                found = targets[id(side)] = {u.call.target for u in side.units[:side.n_calls]
                                             if u is not None and u.call is not None}
            return target in found

        matched_b = set(umap.values())
        follow = self.pairs.follow
        ids_a: Iterable[int] = range(A.n_calls)
        if follow is not None:
            # a call that is not suspect, matched to itself, is the same call on both sides (nodes, reads, baked
            # constants and their content, outputs): nothing to compare
            ids_a = sorted({k for k in follow.suspect if k < A.n_calls}.union(not_in_place(umap, A.n_calls)))
        for k in ids_a:
            unit = A.unit(k)
            kb = umap.get(k)
            call = unit.call
            assert call is not None
            family = families.get(call.target) or families.setdefault(call.target, aten_family(call.target))
            if kb is None:
                if k not in covered_a and (has_target(B, call.target) or family in across_a):
                    self.add(Change("call_removed", "aten_call", family, call.name, call.target, None,
                                    call.target), ("call_removed", call.target), call.name)
                continue
            ub = B.unit(kb)
            site = call.name
            if unit.callee is not None and ub.callee is not None:
                if fmap.get(unit.callee) != ub.callee:
                    self.add(Change("call_changed", "aten_call", family, site, str(unit.callee), str(ub.callee),
                                    f"calls {ub.callee} instead of {unit.callee}"),
                             ("retarget", family, unit.callee, ub.callee), site)
                self.compare_call_attributes(family, "aten_call", site, A.graph.node[unit.nodes[0]],
                                             B.graph.node[ub.nodes[0]])
                continue
            if unit.callee is None and ub.callee is None:
                if k in sources.pairs and sources.same_body(k, kb):
                    continue  # one call from two sources over the same nodes
                changed = self.pairs.node_match(k, kb)
                if changed is not None:  # same nodes: only baked constants can differ
                    for name in changed:
                        self.report_constant(family, site, unit, ub, name)
                    continue
                fpa, fpb = A.unit_fp(unit), B.unit_fp(ub)
                if fpa.full == fpb.full:
                    continue
                self.report_bodies("aten_call", family, site, A.body(unit), fpa, B.body(ub), fpb, (A, call),
                                   (B, ub.call))
                continue
            # one side folded: the flat group against the called function's body
            if unit.callee is None:
                assert ub.callee is not None
                ba = A.fold_form(unit)
                fpa = order_fingerprint(ba)
                bb = function_body_by_use(ub.callee, B.functions[ub.callee])
                fpb = B.function_fp_by_use(ub.callee)
            else:
                ba = function_body_by_use(unit.callee, A.functions[unit.callee])
                fpa = A.function_fp_by_use(unit.callee)
                bb = B.fold_form(ub)
                fpb = order_fingerprint(bb)
            if fpa.full != fpb.full:
                self.report_bodies("aten_call", family, site, ba, fpa, bb, fpb, (A, call), (B, ub.call))
        for kb in filterfalse(matched_b.__contains__, range(B.n_calls)):
            added = B.units[kb]
            call = added.call if added is not None else None
            assert call is not None
            if kb not in covered_b and (has_target(A, call.target) or aten_family(call.target) in across_b):
                self.add(Change("call_added", "aten_call", aten_family(call.target), call.name, None,
                                call.target, call.target), ("call_added", call.target), call.name)

    def compare_call_attributes(self, family: str, section: Section, site: str, na: onnx.NodeProto,
                                nb: onnx.NodeProto) -> None:
        attrs_a, attrs_b = attribute_keys(na), attribute_keys(nb)
        if attrs_a == attrs_b:
            return
        detail = attribute_detail(attrs_a, attrs_b)
        self.add(Change("call_changed", section, family, site, {k: v[0] for k, v in attrs_a.items()},
                        {k: v[0] for k, v in attrs_b.items()}, detail), ("call_attrs", family, detail), site)

    # -- function calls and other nodes -------------------------------------------------------------------------------

    def compare_calls(self, umap: dict[int, int], fmap: dict[FunctionKey, FunctionKey]) -> None:
        A, B = self.A, self.B
        matched_b = set(umap.values())
        for k in A.function_call_ids:
            u = A.unit(k)
            if u.callee is None:
                continue
            family = A.family_of_key.get(u.callee, str(u.callee))
            kb = umap.get(k)
            if kb is None:
                if u.callee in fmap:
                    self.add(Change("call_removed", "function", family, u.label, str(u.callee), None,
                                    f"calls of {u.callee} removed"), ("fcall_removed", u.callee), u.label)
                continue
            self.compare_call_attributes(family, "function", u.label, A.graph.node[u.nodes[0]],
                                         B.graph.node[B.node_of(kb)])
        mapped = set(fmap.values())
        for kb in B.function_call_ids:
            u = B.unit(kb)
            if u.callee is not None and kb not in matched_b and u.callee in mapped:
                family = B.family_of_key.get(u.callee, str(u.callee))
                self.add(Change("call_added", "function", family, u.label, None, str(u.callee),
                                f"calls of {u.callee} added"), ("fcall_added", u.callee), u.label)

    def report_bodies(self, section: Section, family: str, site: str, ba: Body, fpa: Fingerprints, bb: Body,
                      fpb: Fingerprints, call_a: tuple[Side, AtenCall] | None,
                      call_b: tuple[Side, AtenCall | None] | None) -> None:
        """Value changes (same template) or node edits (different templates) of one body pair, merged across the
        family's call sites."""
        same_template = fpa.template == fpb.template  # (the fingerprints are of the bodies in use order)
        # shown as ``summary`` shows the bodies: their own fingerprints, nodes numbered in their own order
        shown_a, shown_b = fingerprint(ba).full, fingerprint(bb).full
        ctx_a = ctx_b = None
        if same_template:  # value changes are labelled with the aten arguments of these calls
            ba, bb = in_use_order(ba), in_use_order(bb)  # literals align slot by slot in that order
            ctx_a = call_a[0].links.call_context(call_a[1], ba, self.cat) if call_a is not None else None
            ctx_b = call_b[0].links.call_context(call_b[1], bb, self.cat) if call_b is not None else None
        cache_key = (section, fpa.full, fpb.full, ctx_a.key if ctx_a else "", ctx_b.key if ctx_b else "")
        hit = self._body_cache.get(cache_key)
        if hit is None:
            hit = (value_deltas(ba, bb, ctx_a, ctx_b), []) if same_template else ([], node_edits(ba, bb))
            self._body_cache[cache_key] = hit
        deltas, edits = hit
        if same_template:
            for d in deltas:
                self.add(Change("value_changed", section, family, site, d.old, d.new, d.detail,
                                arguments=d.arguments),
                         ("value", section, family, d.label, d.old_key, d.new_key, repr(d.arguments)), site)
            if not deltas:  # same template, different fingerprint, no literal differs: wiring inside the body
                self.add(Change("body_changed", section, family, site, {"fingerprint": shown_a},
                                {"fingerprint": shown_b}, "same operators and values, wired differently"),
                         ("body", section, family, fpa.full, fpb.full), site)
            return
        n_a, n_b = count_nodes(ba), count_nodes(bb)
        args = self._passed.get((fpa.full, fpb.full))
        if args is None:  # (once per pair of bodies: an FX text bound per call would cost 80k bindings at 100k)
            from inspector.core.model.signature import call_signature  # (here: a diff of equal exports binds none;
            # imported with the module, with the report's reviews, 12 ms of the zoo's folder diff's 0.21 s wall)

            args = self._passed[(fpa.full, fpb.full)] = passed_differently(
                call_signature(call_a[1], self.cat), call_signature(call_b[1], self.cat)) \
                if call_a is not None and call_b is not None and call_b[1] is not None else ()
        self.add(Change("body_changed", section, family, site, {"nodes": n_a, "fingerprint": shown_a},
                        {"nodes": n_b, "fingerprint": shown_b},
                        f"{n_a} -> {plural(n_b, 'node')}: {edits_summary(edits)}{arguments_text(args)}",
                        edits=edits[:MAX_EDITS], arguments=args),
                 ("body", section, family, fpa.full, fpb.full), site)


    def report_constant(self, family: str, site: str, ua: Unit, ub: Unit, name: str) -> None:
        """A baked constant of two otherwise identical calls changed: report it without comparing bodies. The label
        (reader slot, aten arguments) is worked out once per family, slot, value pair and argument values."""
        A, B = self.A, self.B
        ta, tb = ua.constants[name], ub.constants[name]
        nodes_a = [A.graph.node[i] for i in ua.nodes]
        slot, uses = reader(nodes_a, name)
        assert ua.call is not None and ub.call is not None
        ctx_a = A.links.call_context(ua.call, A.body(ua), self.cat)
        ctx_b = B.links.call_context(ub.call, B.body(ub), self.cat)
        key = (family, slot, uses, content_digest(ta), content_digest(tb), ctx_a.key if ctx_a else "",
               ctx_b.key if ctx_b else "")
        hit = self._constant_cache.get(key)
        if hit is None:
            va, ka = tensor_value(ta)
            vb, kb = tensor_value(tb)
            lit = Literal((), slot.partition(".")[0], name, "initializer", va, ka, uses=uses)
            other = Literal((), slot.partition(".")[0], name, "initializer", vb, kb, uses=uses)
            label, arguments = name_arguments(slot, lit, ctx_a, other, ctx_b)
            hit = self._constant_cache[key] = Delta(label, unwrap(va), unwrap(vb), ka, kb, arguments,
                                                    value_difference(ta, tb))
        self.add(Change("value_changed", "aten_call", family, site, hit.old, hit.new, hit.detail,
                        arguments=hit.arguments),
                 ("value", "aten_call", family, hit.label, hit.old_key, hit.new_key, repr(hit.arguments)), site)


def compare_nodes(pairs: UnitPairs, recorder: Recorder, umap: dict[int, int], sources: Sources) -> None:
    """Plain nodes: removed, added, or changed (attributes, number of inputs or outputs) when matched. A node that
    is in a call of the other side (``diff.sources``: recognised there by template or named by fx metadata) is
    neither removed nor added."""
    A, B = pairs.A, pairs.B
    covered_a, covered_b = sources.nodes_a, sources.nodes_b
    add = recorder.add
    matched_b = set(umap.values())
    labels: dict[tuple[str, str, str], str] = {}  # one op label string per operator (a model may hold millions)

    def label_of(node: onnx.NodeProto) -> str:
        key = (node.domain, node.op_type, node.overload)
        found = labels.get(key)
        if found is None:
            found = labels[key] = op_label(node)
        return found

    nodes_a, nodes_b = A.graph.node, B.graph.node
    unequal = pairs.in_place_unequal()
    for k in A.node_ids():
        i = A.node_of(k)
        kb = umap.get(k)
        if kb == k and unequal is not None and k not in unequal and B.node_of(kb) == i:
            continue  # the same node at the same place on both sides
        node = nodes_a[i]
        label = label_of(node)
        name = node.name or f"{node.op_type}#{i}"
        if kb is None:
            if k in covered_a:
                continue
            add(Change("node_removed", "node", label, name, label, None, f"{label} node {name}", [name]))
            continue
        other = nodes_b[B.node_of(kb)]
        attrs_a, attrs_b = attribute_keys(node), attribute_keys(other)
        parts = []
        if attrs_a != attrs_b:
            parts.append(attribute_detail(attrs_a, attrs_b))
        if len(node.input) != len(other.input) or len(node.output) != len(other.output):
            parts.append(f"{len(node.input)}->{len(other.input)} inputs, "
                         f"{len(node.output)}->{len(other.output)} outputs")
        if parts:
            edits = subgraph_edits(node, other, attrs_a, attrs_b)
            add(Change("node_changed", "node", label, name, {k: v[0] for k, v in attrs_a.items()},
                            {k: v[0] for k, v in attrs_b.items()}, "; ".join(parts), [name],
                            edits[:MAX_EDITS]))
    for kb in B.node_ids():
        if kb not in matched_b and kb not in covered_b:
            i = B.node_of(kb)
            node = nodes_b[i]
            label = label_of(node)
            name = node.name or f"{node.op_type}#{i}"
            add(Change("node_added", "node", label, name, None, label, f"{label} node {name}", [name]))


def _family_json(fam: Family) -> dict[str, Any]:
    return {"kind": fam.kind, "domain": fam.domain, "name": fam.name,
            "overloads": [o.overload for o in fam.overloads], "calls": fam.call_count}


def _family_detail(fam: Family) -> str:
    n = len(fam.overloads)
    shown = ", ".join(o.overload or "(default)" for o in fam.overloads[:6]) + (", …" if n > 6 else "")
    return f"{fam.label}: {plural(n, 'overload')} ({shown}), {plural(fam.call_count, 'call')}"
