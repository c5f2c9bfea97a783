"""Building the report's view model (``inspector.report.data``) from a model index: the core analyses run once here.

``build_report`` runs families, specialised values, aten signatures, reviews and findings, and (when pygraphviz is
there) lays out a graph per body, within ``Limits``. The writers never call core analyses themselves.

With ``compare`` (a ``ModelDiff`` from ``inspector.core.diff``), the report has a comparison section; the writers
render it with the diff's own renderers (``inspector.report.diff_markdown``, ``diff_html``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING

from inspector import __version__
from inspector.core.diff import ModelDiff
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import Family, ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.specialise.categories import classify, explain, value_text, where
from inspector.core.util.errors import InspectorError
from inspector.core.util.jsonsafe import json_safe
from inspector.core.util.sanitize import retry_repaired
from inspector.core.util.units import plural
from inspector.report.data import (
    STATUSES,
    ArgumentInfo,
    ArgumentLink,
    BodyInfo,
    CallValue,
    DiffInfo,
    FamilyInfo,
    FindingInfo,
    Limits,
    ModelInfo,
    OpCount,
    OverloadInfo,
    Report,
    ReviewInfo,
    ReviewSummary,
    SignatureInfo,
    Span,
    SpecialisedInfo,
    TorchlibInfo,
)

if TYPE_CHECKING:
    from inspector.core.model.signature import CallSignature
    from inspector.core.review.check import CheckItem
    from inspector.core.review.store import Review, ReviewKey, ReviewStore
    from inspector.core.specialise.bodytext import Line
    from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, SpecialisedValue
    from inspector.render.layout import DotRunner

__all__ = ["build_report", "diff_info", "torchlib_info"]


def build_report(index: ModelIndex, reviews: ReviewStore | None = None, compare: ModelDiff | None = None,
                 graphs: bool = True, limits: Limits | None = None, dot: DotRunner | None = None) -> Report:
    """Collect what a report shows (see the module doc); ``graphs`` adds inline SVGs when Graphviz is there,
    laid out by ``dot`` (``layout_scene``'s: the app runs Graphviz in a helper process)."""
    return retry_repaired(lambda: _build_report(index, reviews, compare, graphs, limits, dot), index.proto)


def _build_report(index: ModelIndex, reviews: ReviewStore | None, compare: ModelDiff | None, graphs: bool,
                  limits: Limits | None, dot: DotRunner | None) -> Report:
    lim = limits or Limits()
    notes: list[str] = []
    review_summary, store = _reviews(reviews)
    scopes: dict[str, object] = {}  # body id -> what build_scene draws for it
    families, omitted = _families(index, store, lim, notes, scopes)
    counts = {s: 0 for s in STATUSES}
    for fam in families:
        for status, n in fam.review_counts.items():
            counts[status] = counts.get(status, 0) + n
    review_summary.counts = counts
    graph_state = _add_graphs(index, families, scopes, lim, notes, dot) if graphs else "disabled"
    findings = [FindingInfo(f.kind, f.severity, f.message, list(f.where)) for f in index.findings]
    findings_omitted = max(len(findings) - lim.findings, 0)
    if findings_omitted:
        findings = findings[: lim.findings]
        notes.append(f"{findings_omitted} more findings are not listed.")
    diff = diff_info(compare, lim.changes) if compare is not None else None
    if diff is not None and diff.changes_omitted:
        notes.append(f"{diff.changes_omitted} more changes of the diff are not listed.")
    if diff is not None and store is not None:  # (the changes listed: what the reviews said of their bodies)
        from inspector.core.reviewed_changes import reviews_of_diff

        diff.reviewed = reviews_of_diff(index, diff.changes, store)
    return Report(
        generator=f"onnx-inspector {__version__}",
        model=_model_info(index),
        op_histogram=[OpCount(d, op, n) for (d, op), n in
                      sorted(index.op_histogram.items(), key=lambda kv: (-kv[1], kv[0]))],
        families=families,
        families_omitted=omitted,
        findings=findings,
        findings_omitted=findings_omitted,
        reviews=review_summary,
        diff=diff,
        graphs=graph_state,
        notes=notes,
    )


def _model_info(index: ModelIndex) -> ModelInfo:
    return ModelInfo(str(index.path), index.facts, index.parameters(), index.user_inputs())


def _reviews(store: ReviewStore | None) -> tuple[ReviewSummary, ReviewStore | None]:
    if store is None:
        return ReviewSummary(False, None, None, {}), None
    try:
        len(store)  # loads the sidecar if nobody has; never writes
    except InspectorError as e:
        return ReviewSummary(False, store.path.name, str(e), {}), None
    return ReviewSummary(True, store.path.name, None, {}), store


def _families(index: ModelIndex, store: ReviewStore | None, lim: Limits, notes: list[str],
              scopes: dict[str, object]) -> tuple[list[FamilyInfo], int]:
    out = [_family_info(f"f{k}", fam) for k, fam in enumerate(index.families)]
    analyses: list[FamilyAnalysis] = []
    if index.families and lim.families > 0:
        from inspector.core.specialise.specialiser import Specialiser

        specialiser = Specialiser(index)
        specialiser.key_calls(index.families[: lim.families])  # the calls of the families detailed, in graph order
        analyses = [specialiser.analyse(fam) for fam in index.families[: lim.families]]
    carried = _carried(index, store, analyses)
    for info, fam, analysis in zip(out, index.families, analyses, strict=False):
        _detail(index, info, fam, analysis, store, carried, lim, scopes)
    detailed = len(analyses)
    omitted = len(out) - detailed
    if omitted:
        notes.append(f"{omitted} of {len(out)} families {'is' if omitted == 1 else 'are'} listed without detail "
                     f"(the report shows the first {lim.families} in full).")
    cut = [f for f in out if f.bodies_omitted]
    if cut:
        omitted_bodies = sum(f.bodies_omitted for f in cut)
        notes.append(f"{plural(omitted_bodies, 'body', 'bodies')} in {plural(len(cut), 'family', 'families')} "
                     f"{'is' if omitted_bodies == 1 else 'are'} not shown in full (at most {lim.bodies_per_family} per "
                     "family).")
    return out, omitted


# What the report reads of every call of a family (80k calls at 100k nodes), read by C loops instead of a Python step
# per call: _detail and _family_info 0.147 -> 0.120 s there
_NODE_PATHS, _NAME, _RECOGNISED, _CANDIDATES, _RULED_OUT = (
    attrgetter(a) for a in ("node_paths", "name", "recognised", "candidates", "ruled_out"))


def _family_info(fid: str, fam: Family) -> FamilyInfo:
    overloads = [
        OverloadInfo(
            overload=ov.overload, label=ov.label, calls=ov.call_count,
            function=tuple(ov.function) if ov.function is not None else None,  # type: ignore[arg-type]
            target=ov.target,
            nodes=sum(map(len, map(_NODE_PATHS, ov.aten_calls))) if ov.aten_calls else None,
            torchlib=torchlib_info(ov.target),
        )
        for ov in fam.overloads
    ]
    return FamilyInfo(fid, fam.kind, fam.domain, fam.name, fam.label, fam.call_count, fam.torchscript_variants,
                      overloads)


def torchlib_info(target: str | None) -> TorchlibInfo | None:
    """The real-valued torchlib lowering of ``target`` from the catalogue; None when there is none."""
    from inspector.core.aten.torchlib import torchlib_for

    entry = next((e for e in torchlib_for(target) if not e.complex), None) if target else None
    return TorchlibInfo(entry.target, entry.function, entry.trace_only, entry.source) if entry is not None else None


def _carried(index: ModelIndex, store: ReviewStore | None, analyses: list[FamilyAnalysis]
             ) -> dict[ReviewKey, CheckItem]:
    """What ``check`` carries over from reviews of earlier bodies to the items of ``analyses``
    (``core.review.carried``): the report shows each item as ``check`` and the app do."""
    if store is None or not len(store) or not analyses:
        return {}
    from inspector.core.review.carried import carried_items
    from inspector.core.review.check import check_model

    return carried_items(check_model(index, store, analyses).items)


def _detail(index: ModelIndex, info: FamilyInfo, fam: Family, analysis: FamilyAnalysis, store: ReviewStore | None,
            carried: dict[ReviewKey, CheckItem], lim: Limits, scopes: dict[str, object]) -> None:
    from inspector.core.review.store import review_keys

    info.detailed = True
    info.body_count = len(analysis.bodies)
    keys: dict[int, ReviewKey] = {}
    counts = dict.fromkeys(STATUSES, 0)
    reviewed: dict[int, ReviewInfo] = {}
    for key, obj in review_keys(analysis):
        keys[id(obj)] = key
        if store is not None:
            r = _review_info(store, key, carried.get(key))
            reviewed[id(obj)] = r
            counts[r.status] = counts.get(r.status, 0) + 1
        else:
            counts["unreviewed"] += 1
    info.review_counts = counts
    info.specialised_count = sum(len(b.specialised) for b in analysis.bodies)
    # the overloads each body serves: those whose members use it (``FamilyAnalysis.bodies_counted``: counted per
    # overload while the analysis bound the calls, so no pass maps each of a family's 80k calls at 100k nodes)
    at = {id(b): j for j, b in enumerate(analysis.bodies)}
    owners: list[list[int]] = [[] for _b in analysis.bodies]
    for i, ov in enumerate(fam.overloads):
        for b, _n in analysis.bodies_counted([ov.function] if ov.function is not None else ov.aten_calls):
            owners[at[id(b)]].append(i)
    for j, served in enumerate(owners):
        for i in served:
            info.overloads[i].body_ids.append(f"{info.id}-b{j}")
    templates: dict[str, int] = {}
    for body in analysis.bodies:
        templates[body.fingerprints.template] = templates.get(body.fingerprints.template, 0) + 1
    for j, body in enumerate(analysis.bodies[: lim.bodies_per_family]):
        bid = f"{info.id}-b{j}"
        body_info = _body_info(index, bid, fam, body, [info.overloads[i] for i in owners[j]], reviewed,
                               store is not None, lim)
        body_info.lone = templates[body.fingerprints.template] == 1
        info.bodies.append(body_info)
        if body.members:
            scopes[bid] = body.members[0]
    info.bodies_omitted = len(analysis.bodies) - len(info.bodies)


def _review_info(store: ReviewStore, key: ReviewKey, carried: CheckItem | None) -> ReviewInfo:
    """The item's own review, else what ``check`` carries over to it from an earlier body (``_carried``)."""
    r: Review = store.get(key)
    if r.status != "unreviewed" or carried is None:
        return ReviewInfo(r.status, r.note, r.updated)
    from inspector.core.review.carried import carried_review

    shown = carried_review(carried)
    return ReviewInfo(shown.status, previous_status=carried.review_status, previous_note=carried.note,
                      previous_basis=carried.basis, previous_value=json_safe(carried.reviewed_value),
                      carried=shown.note)


def _body_info(index: ModelIndex, bid: str, fam: Family, body: BodyAnalysis, overloads: list[OverloadInfo],
               reviewed: dict[int, ReviewInfo], with_reviews: bool, lim: Limits) -> BodyInfo:
    from inspector.core.specialise.bodytext import body_lines

    members = body.members
    # (an aten family's members are its calls, a function family's are function keys)
    aten_calls = [] if fam.kind == "function" else members
    if fam.kind == "function":
        calls = sum(o.calls for o in overloads)
        names = [str(m) for m in members]
        named = len(names)
        title = names[0] if len(names) == 1 else f"{fam.label} ({len(names)} overloads)"
    else:
        calls = len(members)
        names, named = list(map(_NAME, aten_calls[: lim.members_listed])), len(aten_calls)
        shown = overloads[0].label if overloads else fam.label
        siblings = len(overloads[0].body_ids) if len(overloads) == 1 else 0
        title = shown if siblings <= 1 else f"{shown}, body {overloads[0].body_ids.index(bid) + 1} of {siblings}"
    spec_ids: dict[int, str] = {}
    specs: list[SpecialisedInfo] = []
    for k, s in enumerate(body.specialised):
        sid = f"{bid}-s{k}"
        spec_ids[id(s)] = sid
        info = _spec_info(sid, s)
        if with_reviews:
            info.review = reviewed.get(id(s))
        specs.append(info)
    lines_all = body_lines(body.body, body.specialised)
    lines = [_spans(line, spec_ids) for line in lines_all[: lim.body_lines]]
    by_id = {s.id: s for s in specs}
    for n, line in enumerate(lines):
        for span in line:
            if span.spec is not None and by_id[span.spec].line is None:
                by_id[span.spec].line = n
    signature = None
    first = members[0] if members else None
    rewritten: list[str] = []
    if isinstance(first, AtenCall):
        from inspector.core.model.signature import call_signature

        signature = _signature_info(call_signature(first), body.specialised, spec_ids)
        rewritten = list(first.rule_names)
    elif isinstance(first, FunctionKey):
        folded = _folded_signature(index, first)
        if folded is not None:
            signature = _signature_info(folded, body.specialised, spec_ids)
    target = signature.target if signature is not None else None
    fp = body.fingerprints
    recognising = index.provenance.recognised > 0
    return BodyInfo(
        id=bid, title=title, overloads=[o.overload for o in overloads], fingerprint=fp.full, template=fp.template,
        calls=calls, node_count=len(body.body.nodes), members=names[: lim.members_listed],
        members_omitted=max(named - lim.members_listed, 0), signature=signature, lines=lines,
        lines_omitted=max(len(lines_all) - lim.body_lines, 0), specialised=specs,
        review=reviewed.get(id(body)) if with_reviews else None,
        left_out=[_spec_info(f"{bid}-l{k}", s) for k, s in enumerate(body.left_out)],
        torchlib=torchlib_info(target), rewritten_by=rewritten,
        # (looked for among the calls only when the index recognised any: two passes over 80k calls at 100k nodes)
        recognised=sorted(set(chain.from_iterable(map(_RECOGNISED, aten_calls)))) if recognising else [],
        candidates=sorted(set(chain.from_iterable(map(_CANDIDATES, aten_calls)))) if recognising else [],
        ruled_out=sorted(set(chain.from_iterable(map(_RULED_OUT, aten_calls)))) if recognising else [],
    )


def _folded_signature(index: ModelIndex, key: FunctionKey) -> CallSignature | None:
    """The aten signature of a function ``fold`` made, bound with its first call's values (None for others)."""
    from inspector.core.model.signature import function_call_signature

    proto = index.functions.functions.get(key)
    if proto is None:
        return None
    sites = index.functions.calls.get(key, ())
    first = index.functions.site_node(sites[0], index.proto.graph.node) if sites else None
    return function_call_signature(proto, first)


def _spans(line: Line, spec_ids: dict[int, str]) -> list[Span]:
    out = []
    for seg in line:
        sid = spec_ids.get(id(seg.spec)) if seg.spec is not None else None
        param = seg.argument.parameter.name if seg.argument is not None else None
        out.append(Span(seg.text, sid, param))
    return out


def _signature_info(sig: CallSignature, specialised: Sequence[SpecialisedValue],
                    spec_ids: dict[int, str]) -> SignatureInfo:
    from inspector.core.specialise.bodytext import line_text, signature_line

    line = signature_line(sig, specialised)
    linked: dict[str, list[str]] = {}
    for s in specialised:
        for link in s.links:
            ids = linked.setdefault(link.parameter, [])
            if spec_ids[id(s)] not in ids:
                ids.append(spec_ids[id(s)])
    args = [
        ArgumentInfo(b.parameter.name, b.parameter.type, json_safe(_arg_value(b.value)), _arg_text(b.value),
                     b.is_default, b.provided, linked.get(b.parameter.name, []))
        for b in sig.bound
    ]
    return SignatureInfo(sig.schema.target if sig.schema else None, line_text(line), _spans(line, spec_ids),
                         sig.problem, args)


def _arg_value(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return [_arg_value(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)  # TensorRef -> "%name", symbols, devices ...


def _arg_text(value: object) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_arg_text(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def _spec_info(sid: str, s: SpecialisedValue) -> SpecialisedInfo:
    lit = s.literal
    return SpecialisedInfo(
        id=sid, category=classify(s), where=where(s),
        node="/".join(str(p) for p in lit.path) if lit.path else None, op_type=lit.op_type or None,
        kind=lit.kind, name=lit.name, value=json_safe(lit.value), value_text=value_text(lit.value),
        varies=s.varies, family_values=[json_safe(v) for v in s.family_values],
        links=[ArgumentLink(a.parameter, json_safe(_arg_value(a.value)), a.rule, a.place) for a in s.links],
        refers_to=lit.ref, description=explain(s), shape=s.shape, baked_by=s.baked_by,
        call_sites=[CallValue(c, json_safe(v), value_text(v)) for c, v in s.call_values],
        read_by="/".join(str(p) for p in lit.reader) if lit.reader else None,
    )


# --- graphs -----------------------------------------------------------------------------------------------------


def _add_graphs(index: ModelIndex, families: list[FamilyInfo], scopes: dict[str, object], lim: Limits,
                notes: list[str], dot: DotRunner | None) -> str:
    """Inline SVGs for function bodies and the first aten bodies; 'unavailable' without pygraphviz."""
    wanted: list[tuple[BodyInfo, AtenCall | FunctionKey]] = []
    aten = function = 0
    for fam_info in families:
        for body in fam_info.bodies:
            scope = scopes.get(body.id)
            if isinstance(scope, AtenCall):
                if aten >= lim.aten_graphs:
                    continue
                aten += 1
            elif isinstance(scope, FunctionKey):
                if function >= lim.function_graphs:
                    continue
                function += 1
            else:
                continue
            wanted.append((body, scope))
    if not wanted:
        return "none"
    try:
        import pygraphviz  # noqa: F401  (only to know whether graphs can be laid out)

        from inspector.render.layout import layout_scene, to_svg
        from inspector.render.scene import Scenes
    except ImportError:
        notes.append("Graphs are omitted: pygraphviz (Graphviz) is not installed.")
        return "unavailable"
    start = time.monotonic()
    drawn = 0
    scenes = Scenes(index)  # reads the graph once for all the bodies drawn
    for body, scope in wanted:
        if time.monotonic() - start > lim.graph_seconds:
            body.graph_note = "graph omitted: the report's time budget for graphs was used up"
            continue
        try:
            scene = scenes.scene(scope, max_nodes=lim.graph_nodes)
            body.svg = to_svg(scene, layout_scene(scene, dot=dot))
            drawn += 1
        except Exception as e:  # Graphviz failures must not cost the whole report
            body.graph_note = f"graph omitted: {type(e).__name__}: {' '.join(str(e).split())[:200]}"
    skipped = len(wanted) - drawn
    if skipped:
        notes.append(f"{plural(skipped, 'graph')} could not be drawn (see the bodies concerned).")
    total_bodies = sum(len(f.bodies) for f in families)
    if total_bodies > len(wanted):
        notes.append(f"Graphs are drawn for {len(wanted)} of {total_bodies} bodies shown (at most "
                     f"{lim.function_graphs} function and {lim.aten_graphs} aten bodies).")
    return "included"


# --- diffs ------------------------------------------------------------------------------------------------------


def diff_info(compare: ModelDiff, max_changes: int = 2000) -> DiffInfo:
    """The comparison section of a report: ``compare`` with at most ``max_changes`` changes listed."""
    return DiffInfo(compare, compare.changes[:max_changes], max(len(compare.changes) - max_changes, 0))
