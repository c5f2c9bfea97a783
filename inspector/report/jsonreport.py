"""The JSON report: a versioned object described by ``resources/report.schema.json``.

``{"format": "onnx-inspector/report", "version": 1, ...}``. The model facts, families/overloads, op histogram and
findings have the shapes of ``summary --json`` (``resources/summary.schema.json``); specialised values extend
the summary's (``place`` of each link, ``shape_specialised``, ``baked_by``, ``call_sites``, ``read_by`` included)
with an ``id``, a ``category``, a ``description`` and their ``review``; a body adds the ``torchlib`` function that
lowered it, whether it is ``lone``, and the literals it ``left_out`` as ONNX defaults. Graphs (SVG) are not part
of it. Bump ``REPORT_VERSION`` on any incompatible change; additive fields keep the version.
"""

from __future__ import annotations

from typing import Any

from inspector.core.diff import diff_dict
from inspector.core.util.jsonsafe import json_safe, json_text
from inspector.report.data import (
    BodyInfo,
    FamilyInfo,
    Report,
    ReviewInfo,
    SignatureInfo,
    SpecialisedInfo,
    TorchlibInfo,
)

REPORT_FORMAT = "onnx-inspector/report"
REPORT_VERSION = 1


def render_json(report: Report) -> str:
    """The report as indented JSON text (``allow_nan=False``: every value is JSON-safe)."""
    return json_text(report_dict(report))


def report_dict(report: Report) -> dict[str, Any]:
    r = report
    m = r.model
    f = m.facts
    return {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "generator": r.generator,
        "model": {
            "path": m.path,
            "file_name": m.file_name,
            "file_format": f.format,
            "file_size": f.file_size,
            "ir_version": f.ir_version,
            "opsets": m.opsets,
            "producer_name": f.producer_name,
            "producer_version": f.producer_version,
            "domain": f.domain,
            "model_version": f.model_version,
            "graph_name": f.graph_name,
            "doc_string": f.doc_string,
            "node_count": f.main_nodes,
            "total_node_count": f.total_nodes,
            "function_count": f.function_count,
            "initializer_count": f.initializer_count,
            "parameter_count": m.parameters.count,
            "parameter_bytes": m.parameters.bytes,
            "external_data_bytes": m.parameters.external_bytes,
            "inputs": list(m.inputs),
            "outputs": list(f.outputs),
            "metadata": dict(f.metadata),
        },
        "reviews": {
            "available": r.reviews.available,
            "sidecar": r.reviews.sidecar,
            "error": r.reviews.error,
            "counts": dict(r.reviews.counts),
        },
        "findings": [{"kind": x.kind, "severity": x.severity, "message": x.message, "where": list(x.where)}
                     for x in r.findings],
        "findings_omitted": r.findings_omitted,
        "op_histogram": [{"domain": o.domain, "op_type": o.op_type, "count": o.count} for o in r.op_histogram],
        "families": [_family(f) for f in r.families],
        "families_omitted": r.families_omitted,
        "diff": _diff(r),
        "graphs": r.graphs,
        "notes": list(r.notes),
    }


def _family(f: FamilyInfo) -> dict[str, Any]:
    return {
        "id": f.id,
        "kind": f.kind,
        "domain": f.domain,
        "name": f.name,
        "label": f.label,
        "calls": f.calls,
        "torchscript_variants": f.torchscript_variants,
        "detailed": f.detailed,
        "overloads": [
            {
                "overload": ov.overload,
                "label": ov.label,
                "calls": ov.calls,
                "function": ({"domain": ov.function[0], "name": ov.function[1], "overload": ov.function[2]}
                             if ov.function is not None else None),
                "target": ov.target,
                "torchlib": _torchlib(ov.torchlib),
                "nodes": ov.nodes,
                "bodies": list(ov.body_ids),
            }
            for ov in f.overloads
        ],
        "body_count": f.body_count,
        "bodies": [_body(b) for b in f.bodies],
        "bodies_omitted": f.bodies_omitted,
        "specialised_count": f.specialised_count,
        "review_counts": dict(f.review_counts),
    }


def _body(b: BodyInfo) -> dict[str, Any]:
    return {
        "id": b.id,
        "title": b.title,
        "overloads": list(b.overloads),
        "fingerprint": b.fingerprint,
        "template": b.template,
        "calls": b.calls,
        "nodes": b.node_count,
        "members": list(b.members),
        "members_omitted": b.members_omitted,
        "signature": _signature(b.signature) if b.signature is not None else None,
        "lines": ["".join(s.text for s in line) for line in b.lines],
        "lines_omitted": b.lines_omitted,
        "specialised": [_spec(s) for s in b.specialised],
        "review": _review(b.review),
        "graph": b.svg is not None,
        "lone": b.lone,
        "left_out": [_left_out(s) for s in b.left_out],
        "torchlib": _torchlib(b.torchlib),
        "rewritten_by": list(b.rewritten_by),
        # only where the body's calls were recognised by template (reports of exports with metadata are unchanged)
        **({"recognised": {"templates": list(b.recognised), "candidates": list(b.candidates),
                           **({"ruled_out_by_name": list(b.ruled_out)} if b.ruled_out else {})}} if b.recognised
           else {}),
    }


def _torchlib(t: TorchlibInfo | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"target": t.target, "function": t.function, "trace_only": t.trace_only, "source": t.source}


def _left_out(s: SpecialisedInfo) -> dict[str, Any]:
    return {"id": s.id, "where": s.where, "node": s.node, "op_type": s.op_type, "kind": s.kind,
            "attribute" if s.kind in ("attribute", "constant", "parametric") else "constant": s.name,
            "value": json_safe(s.value)}


def _signature(s: SignatureInfo) -> dict[str, Any]:
    return {
        "target": s.target,
        "text": s.text,
        "problem": s.problem,
        "arguments": [
            {"parameter": a.parameter, "type": a.type, "value": json_safe(a.value), "text": a.text,
             "is_default": a.is_default, "provided": a.provided, "specialised": list(a.specialised)}
            for a in s.arguments
        ],
    }


def _spec(s: SpecialisedInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": s.id,
        "category": s.category,
        "where": s.where,
        "node": s.node,
        "op_type": s.op_type,
        "kind": s.kind,
        "attribute" if s.kind in ("attribute", "constant", "parametric") else "constant": s.name,
        "value": json_safe(s.value),
        "varies": s.varies,
        "family_values": json_safe(s.family_values),
        "aten_arguments": [{"parameter": a.parameter, "value": json_safe(a.value), "rule": a.rule, "place": a.place}
                           for a in s.links],
        "description": s.description,
        "line": s.line,
        "review": _review(s.review),
    }
    if s.refers_to:
        out["refers_to"] = s.refers_to
    if s.read_by:
        out["read_by"] = s.read_by
    if s.shape:
        out["shape_specialised"] = s.shape
    if s.baked_by:
        out["baked_by"] = f"torchlib {s.baked_by} (trace_only)"  # as in the summary
    if s.call_sites:
        out["call_sites"] = [{"call": c.call, "value": json_safe(c.value)} for c in s.call_sites]
    return out


def _review(r: ReviewInfo | None) -> dict[str, Any] | None:
    if r is None:
        return None
    out: dict[str, Any] = {"status": r.status, "note": r.note, "updated": r.updated}
    if r.previous_status:
        out["previous"] = {"status": r.previous_status, "note": r.previous_note, "basis": r.previous_basis,
                           "value": r.previous_value}
    return out


def _diff(r: Report) -> dict[str, Any] | None:
    d = r.diff
    if d is None:
        return None
    data = diff_dict(d.diff)
    return {
        "other": d.other,
        "equal": d.diff.equal,
        "equivalent": d.diff.equivalent,
        "summary": data["explanation"],
        "changes": [{"kind": c.kind, "section": c.section, "where": c.where, "family": c.family,
                     "old": json_safe(c.old), "new": json_safe(c.new), "detail": c.detail, "sites": len(c.sites),
                     **({"reviews": [{"what": what, "status": r.status, "note": r.note, "updated": r.updated}
                                     for what, r in d.reviewed[id(c)]]} if id(c) in d.reviewed else {})}
                    for c in d.changes],
        "changes_omitted": d.changes_omitted,
        # the diff's own object, without its change list (given above, capped)
        "data": {k: v for k, v in data.items() if k != "changes"},
    }
