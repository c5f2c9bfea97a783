"""The ``summary`` view of an index: a versioned JSON object and a plain-text rendering of it.

The JSON layout is documented in ``resources/summary.schema.json``; bump ``SUMMARY_VERSION`` on any
incompatible change.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any

from inspector.core.aten.torchlib import torchlib_json
from inspector.core.model.calls import RULED_OUT, AtenCall
from inspector.core.model.index import Family, ModelIndex
from inspector.core.util.units import human_size, plural

if TYPE_CHECKING:
    from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis

_NODE_PATHS = attrgetter("node_paths")  # (sum(map(len, map(...))): one C loop over the calls of a 100k-node export)

SUMMARY_FORMAT = "onnx-inspector/summary"
SUMMARY_VERSION = 1


def summary_dict(index: ModelIndex, specialisation: bool = True) -> dict[str, Any]:
    """The summary object; ``specialisation`` adds fingerprints and specialised values per overload."""
    return _summary_dict(index, specialisation)


def _summary_dict(index: ModelIndex, specialisation: bool) -> dict[str, Any]:
    f = index.facts
    params = index.parameters()
    nodes: dict[int, int] = {}  # nodes of the calls of an aten overload, by id of its list of calls (_node_count)
    analyses = {}
    if specialisation:
        from inspector.core.specialise.specialiser import Specialiser

        analyses = dict(zip(map(id, index.families), Specialiser(index).analyse_all()))
    return {
        "format": SUMMARY_FORMAT,
        "version": SUMMARY_VERSION,
        "model": {
            "path": str(index.path),
            "file_format": f.format,
            "file_size": f.file_size,
            "ir_version": f.ir_version,
            "opsets": dict(sorted(f.opsets.items())),
            "producer_name": f.producer_name,
            "producer_version": f.producer_version,
            "graph_name": f.graph_name,
            "node_count": f.main_nodes,
            "total_node_count": f.total_nodes,
            "function_count": f.function_count,
            "initializer_count": f.initializer_count,
            "parameter_count": params.count,
            "parameter_bytes": params.bytes,
            "external_data_bytes": params.external_bytes,
            "inputs": index.user_inputs(),
            "outputs": f.outputs,
            "metadata": f.metadata,
        },
        "families": [_family_json(fam, analyses.get(id(fam)), nodes) for fam in index.families],
        "aten_targets": _aten_targets(index, nodes),
        "op_histogram": [
            {"domain": d, "op_type": op, "count": n}
            for (d, op), n in sorted(index.op_histogram.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "findings": [x.to_json() for x in index.findings],
    }


def _node_count(calls: list[AtenCall], nodes: dict[int, int]) -> int:
    """The nodes of ``calls``, counted once per list (``nodes``): an overload's and its target's (each a pass over
    every call: 0.015-0.03 s at 100k nodes, where the calls no longer fit the CPU's caches)."""
    n = nodes.get(id(calls))
    if n is None:
        n = nodes[id(calls)] = sum(map(len, map(_NODE_PATHS, calls)))
    return n


def _family_json(fam: Family, analysis: FamilyAnalysis | None, nodes: dict[int, int]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": fam.kind,
        "domain": fam.domain,
        "name": fam.name,
        "label": fam.label,
        "calls": fam.call_count,
        "torchscript_variants": fam.torchscript_variants,
        "overloads": [
            {
                "overload": ov.overload,
                "calls": ov.call_count,
                "function": (
                    {"domain": ov.function.domain, "name": ov.function.name, "overload": ov.function.overload}
                    if ov.function else None
                ),
                "target": ov.target,
                "nodes": _node_count(ov.aten_calls, nodes) if ov.aten_calls else None,
                "torchlib": torchlib_json(ov.target) if ov.target else None,
            }
            for ov in fam.overloads
        ],
    }
    if analysis is not None:
        overloads_json: list[dict[str, Any]] = out["overloads"]
        for ov, ov_json in zip(fam.overloads, overloads_json):
            members: list[Any] = [ov.function] if ov.function is not None else ov.aten_calls
            counted = analysis.bodies_counted(members)  # one look-up per call, never list membership
            ov_json["fingerprint"] = counted[0][0].fingerprints.full if len(counted) == 1 else None
            templates = {b.fingerprints.template for b, _n in counted}
            ov_json["template"] = templates.pop() if len(templates) == 1 else None
            ov_json["bodies"] = [
                {"fingerprint": b.fingerprints.full, "template": b.fingerprints.template,
                 "calls": calls,
                 "nodes": len(b.body.nodes),
                 "specialised": [s.to_json() for s in b.specialised], "left_out": len(b.left_out),
                 **_rewritten(b)}
                for b, calls in counted
            ]
            ov_json["specialised"] = [s for b in ov_json["bodies"] for s in b["specialised"]]
    return out


def _rewritten(body: BodyAnalysis) -> dict[str, list[str]]:
    """``{"rewritten_by": rules}`` when the optimizer's rewriter changed the body's nodes (the rule names of its first
    call, as the report and the app give them), else nothing: ResNet's batch norms are Conv nodes its
    ``FuseBatchNormIntoConv`` made, whose kernel, strides and pads are the convolution's, not its batch norm's."""
    first = body.members[0] if body.members else None
    return {"rewritten_by": list(first.rule_names)} if isinstance(first, AtenCall) and first.rule_names else {}


def _aten_targets(index: ModelIndex, nodes: dict[int, int]) -> list[dict[str, Any]]:
    by_target = index.provenance.by_target()
    # an aten overload with a target's name and as many calls holds exactly its calls (all calls of a target go to the
    # overload its name splits into, in order), when no call is a folded function's: then its list is counted once
    overloads = {ov.target: ov.aten_calls for fam in index.families if fam.kind == "aten_call" for ov in fam.overloads}
    if sum(map(len, overloads.values())) == len(index.provenance.calls):
        for target, calls in by_target.items():
            same = overloads.get(target)
            if same is not None and len(same) == len(calls):
                by_target[target] = same
    counted = [(target, len(calls), _node_count(calls, nodes)) for target, calls in by_target.items()]
    counted.sort(key=lambda r: (-r[1], r[0]))
    out: list[dict[str, Any]] = [{"target": t, "calls": n, "nodes": k} for t, n, k in counted]
    for row in out:
        if not index.provenance.recognised:  # (calls recognised by template are counted as they are added)
            break
        recognised = [c for c in by_target[row["target"]] if c.recognised]
        if recognised:  # calls found by body template in nodes without fx metadata (core.model.recognise)
            row["recognised"] = {"calls": len(recognised),
                                 "templates": sorted({t for c in recognised for t in c.recognised}),
                                 "candidates": sorted({t for c in recognised for t in c.candidates})}
            ruled_out = sorted({t for c in recognised for t in c.ruled_out})
            if ruled_out:  # (targets the bodies fit too, that their outputs' names rule out: ``recognise_names``)
                row["recognised"]["ruled_out_by_name"] = ruled_out
    return out


def summary_text(data: dict[str, Any]) -> str:
    """Plain text for a terminal; every value is shown as data (no markup is interpreted)."""
    m = data["model"]
    lines = [
        f"model        {m['path']}",
        f"format       {m['file_format']}, {human_size(m['file_size'])}",
        f"ir_version   {m['ir_version']}",
        "opsets       " + (", ".join(f"{d or 'ai.onnx'}={v}" for d, v in m["opsets"].items()) or "-"),
        f"producer     {m['producer_name'] or '-'} {m['producer_version']}".rstrip(),
        f"nodes        {m['node_count']} in the main graph, {m['total_node_count']} in all",
        f"functions    {m['function_count']}",
        f"parameters   {m['parameter_count']:,} in {m['initializer_count']} initializers, "
        f"{human_size(m['parameter_bytes'])}",
    ]
    fams = [f for f in data["families"] if f["kind"] == "function"]
    lines.append("")
    lines.append(f"function families ({len(fams)})")
    if not fams:
        lines.append("  (none)")
    for fam in fams:
        n = len(fam["overloads"])
        lines.append(f"  {fam['label']}  {plural(n, 'overload')}, {plural(fam['calls'], 'call')}")
        for ov in fam["overloads"]:
            fn = ov["function"]
            shown = ov["overload"] or "(default)"
            real = f"  [{fn['name']}]" if fam["torchscript_variants"] and fn else ""
            lines.append(f"    {shown:<24} {_column(ov['calls'], 5, 'call')}{real}".rstrip())
            lines.extend("  " + line for line in _torchlib_line(ov))
            lines.extend(_specialised_lines(ov))
    atens = data["aten_targets"]
    lines.append("")
    lines.append(f"aten targets ({len(atens)}, {plural(sum(a['calls'] for a in atens), 'call')})")
    if not atens:
        lines.append("  (none: no torch provenance metadata)")
    for a in atens:
        lines.append(f"  {a['target']:<48} {_column(a['calls'], 5, 'call')} {_column(a['nodes'], 6, 'node')}".rstrip())
        if "recognised" in a:
            r = a["recognised"]
            lines.append(f"      recognised by template: {plural(r['calls'], 'call')}, {', '.join(r['templates'])}")
            if len(r["candidates"]) > 1:
                lines.append(f"      ambiguous body, candidates: {', '.join(r['candidates'])}")
            if r.get("ruled_out_by_name"):
                lines.append(f"      also fits {', '.join(r['ruled_out_by_name'])}: {RULED_OUT}")
        fam = next((f for f in data["families"] if f["kind"] == "aten_call"
                    and any(o["target"] == a["target"] for o in f["overloads"])), None)
        if fam is not None:
            for ov in fam["overloads"]:
                if ov["target"] == a["target"]:
                    lines.extend(_torchlib_line(ov))
                    if len(ov.get("bodies", ())) > 1:
                        lines.append(f"      {len(ov['bodies'])} distinct bodies")
                    lines.extend(_specialised_lines(ov))
    lines += _operator_lines(data["op_histogram"], m["node_count"])
    findings = data["findings"]
    lines.append("")
    lines.append(f"findings ({len(findings)})")
    for x in findings:
        lines.append(f"  {x['severity']:<8} {x['message']}")
    return "\n".join(_printable(line) for line in lines) + "\n"


MAX_OPERATORS = 12  # op types the text lists, the most frequent first (the JSON and the reports list every one)


def _operator_lines(histogram: list[dict[str, Any]], nodes: int) -> list[str]:
    """The main graph's op types with their counts, the most frequent first: for a model with neither functions nor
    aten calls (a converter's, a TorchScript export's), the text said nothing of what its graph is made of."""
    lines = ["", f"operators ({plural(len(histogram), 'op type')}, {plural(nodes, 'node')} in the main graph)"]
    for op in histogram[:MAX_OPERATORS]:
        label = f"{op['domain']}::{op['op_type']}" if op["domain"] not in ("", "ai.onnx") else op["op_type"]
        lines.append(f"  {label:<48} {_column(op['count'], 5, 'node')}".rstrip())
    if len(histogram) > MAX_OPERATORS:
        rest = histogram[MAX_OPERATORS:]
        lines.append(f"  … {plural(len(rest), 'more op type')} ({plural(sum(op['count'] for op in rest), 'node')})")
    return lines


MAX_BODIES = 4  # bodies of an overload whose values the text lists, each under its own line
BODY_VALUES = 4  # values listed per body there


def _specialised_lines(ov: dict[str, Any], limit: int = 6, calls_limit: int = 8) -> list[str]:
    """One line per specialised value (those that vary or link to aten arguments or input shapes first): where it
    sits, its value, what varies, the aten arguments it came from and at which place, how an input shape made it; a
    parametric attribute with the value each call site passes; then what trace_only torchlib code put there, and how
    many ONNX defaults were left out. An overload of several bodies lists each body's values under it (``body of 4
    calls (2 nodes):``): listed together, ConvNeXt's two LayerNorm bodies read "axis = -1 (from
    normalized_shape=[8])" and "axis = -1 (from normalized_shape=[16])" with nothing to say which eps went with
    which."""
    items = ov.get("specialised", ())
    bodies = ov.get("bodies", ())
    out: list[str] = []
    # (said once when every body was rewritten alike: ResNet's 4 batch-norm bodies, each a Conv the rewriter made)
    rules = {tuple(b.get("rewritten_by", ())) for b in bodies}
    alike = len(rules) == 1 and bool(bodies) and _rules_text(bodies[0])
    if alike:
        out.append(f"        {alike}: its values are not torchlib's")
    if len(bodies) > 1:
        for b in bodies[:MAX_BODIES]:
            values = _value_lines(b.get("specialised", ()), BODY_VALUES, calls_limit, "          ", by_body=True)
            # (its size: qwen2's two linear bodies read "body of 6 calls: nothing specialised" and "body of 9 calls:
            # nothing specialised", with nothing to say that one adds a bias, 2 nodes against 1)
            size = f" ({plural(b['nodes'], 'node')})" if isinstance(b.get("nodes"), int) else ""
            rewritten = "" if alike else _rules_text(b)
            head = f"        body of {plural(b['calls'], 'call')}{size}" + (f", {rewritten}" if rewritten else "")
            out += [f"{head}:", *values] if values else [f"{head}: nothing specialised"]
        if len(bodies) > MAX_BODIES:
            out.append(f"        … {plural(len(bodies) - MAX_BODIES, 'more body', 'more bodies')}")
    else:
        out += _value_lines(items, limit, calls_limit, "        ")
    for baked in sorted({s["baked_by"] for s in items if s.get("baked_by")}):
        out.append(f"        values put there at export time by {baked}")
    left_out = sum(b.get("left_out", 0) for b in bodies)
    if left_out:
        out.append(f"        {plural(left_out, 'attribute')} equal to the ONNX default left out")
    return out


def _rules_text(body: dict[str, Any]) -> str:
    """``rewritten by the optimizer (FuseBatchNormIntoConv)`` for a body the rewriter changed, else empty."""
    rules = body.get("rewritten_by")
    return f"rewritten by the optimizer ({_short(', '.join(rules), 120)})" if rules else ""


def _value_lines(values: Any, limit: int, calls_limit: int, indent: str, by_body: bool = False) -> list[str]:
    """``_specialised_lines`` of some values, at ``indent``, at most ``limit`` of them and a line counting the rest.
    ``by_body``: the lines of one body among its siblings, each of which shows its own value: what varies is counted,
    not listed again on every line (Swin's 16 view bodies repeated the 11 sizes of the family on each)."""
    items = sorted(values, key=lambda s: (not s["varies"], not (s["aten_arguments"] or s.get("shape_specialised"))))
    out = []
    for s in items[:limit]:
        where = s.get("attribute") or s.get("constant")
        what = f"{s['op_type']}.{where}" if s["op_type"] and s["kind"] != "initializer" else f"const {where}"
        if s["kind"] == "parametric":
            calls = s.get("call_sites", [])
            state = "varies between calls" if s["varies"] else "the same at every call"
            out.append(f"{indent}{what} = @{s.get('refers_to')} (parametric" + (f", {state})" if calls else ")"))
            out += [f"{indent}    {c['call']}  {_short(c['value'])}" for c in calls[:calls_limit]]
            if len(calls) > calls_limit:
                out.append(f"{indent}    … {plural(len(calls) - calls_limit, 'more call')}")
            continue
        note = []
        if s["varies"] and by_body:
            note.append(f"varies: {plural(len(s['family_values']), 'value')} in the family")
        elif s["varies"]:
            note.append("varies: " + " | ".join(_short(v) for v in s["family_values"]))
        if s["aten_arguments"]:
            note.append("from " + _arguments(s["aten_arguments"]))
        if s.get("shape_specialised"):
            note.append("shape-specialised: " + _short(s["shape_specialised"], 240))
        out.append(f"{indent}{what} = {_short(s['value'])}" + (f"   ({'; '.join(note)})" if note else ""))
    if len(items) > limit:
        out.append(f"{indent}… {len(items) - limit} more")
    return out


def _arguments(links: list[dict[str, Any]]) -> str:
    """``dim0=1, dim1=2 at Transpose.perm``: the arguments, grouped by the place where the lowering implements them."""
    by_place: dict[str, list[str]] = {}
    for a in links:
        by_place.setdefault(a.get("place", ""), []).append(f"{a['parameter']}={_short(a['value'])}")
    return "; ".join(", ".join(args) + (f" at {place}" if place else "") for place, args in by_place.items())


def _torchlib_line(ov: dict[str, Any]) -> list[str]:
    """``      torchlib aten_transpose, trace_only (function_libs/torch_lib/ops/core.py:10114)``."""
    t = ov.get("torchlib")
    if not t:
        return []
    return [f"      torchlib {t['function']}, {'trace_only' if t['trace_only'] else 'script'} ({t['source']})"]


def _short(v: Any, width: int = 40) -> str:
    """A value in the summary's text: as everywhere (``value_text``), a string unquoted."""
    from inspector.core.specialise.categories import value_text  # (the text summary's: start-up)

    return value_text(v, width) if not isinstance(v, str) else v if len(v) <= width else v[: width - 1] + "…"


def _printable(line: str) -> str:
    """Model strings may hold control characters; keep the terminal safe."""
    return "".join(c if c.isprintable() or c == "\t" else f"\\x{ord(c):02x}" for c in line)


def _column(n: int, width: int, noun: str) -> str:
    """A count right-aligned in ``width`` with its noun in the right number, as wide either way (a table's column)."""
    return f"{n:>{width}} {noun}{'s' if n != 1 else ' '}"
