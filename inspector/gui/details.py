"""HTML for the details panel. Every string from the model goes through ``esc`` (models are untrusted)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspector.core.aten.torchlib import torchlib_for
from inspector.core.bodies.literals import attribute_value
from inspector.core.model.calls import AtenCall
from inspector.core.model.functions import CallSite
from inspector.core.model.index import Family, ModelIndex, Overload
from inspector.core.model.keys import MAIN
from inspector.core.model.provenance import ModuleNode
from inspector.core.model.signature import call_signature, function_call_signature
from inspector.core.model.walk import resolve_path
from inspector.core.specialise.categories import value_text
from inspector.core.util.sanitize import printed
from inspector.gui.analysis import TreeObject, site_node
from inspector.gui.text import esc, plural


def describe(index: ModelIndex, obj: TreeObject, module_total: Callable[[ModuleNode], int] | None = None) -> str:
    """``module_total``: nodes in a module and its submodules, when already counted (``ModuleModel.total``)."""
    if isinstance(obj, Family):
        return _family(obj)
    if isinstance(obj, Overload):
        return _overload(index, obj)
    if isinstance(obj, AtenCall):
        return _aten_call(index, obj)
    if isinstance(obj, CallSite):
        return _call_site(index, obj)
    if isinstance(obj, ModuleNode):
        return _module(index, obj, module_total)
    return model_overview(index)


def model_overview(index: ModelIndex) -> str:
    f = index.facts
    rows = [
        ("File", index.path.name), ("IR version", f.ir_version),
        ("Opsets", ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(f.opsets.items()))),
        ("Producer", f"{f.producer_name} {f.producer_version}"),
        ("Nodes", f"{f.main_nodes} main, {f.total_nodes} in all"),
        ("Functions", f.function_count),
        ("Parameters", f"{index.parameters().count:,} ({index.parameters().bytes:,} bytes)"),
        ("Aten calls", len(index.provenance.calls)), ("Findings", len(index.findings)),
    ]
    body = _table(rows)
    if index.findings:
        body += "<h3>Findings</h3><ul>" + "".join(
            f"<li><b>{esc(x.severity)}</b> {esc(x.message)}</li>" for x in index.findings) + "</ul>"
    return f"<h2>{esc(index.path.name)}</h2>{body}"


def _family(fam: Family) -> str:
    rows = [("Kind", "local function" if fam.kind == "function" else "aten calls"), ("Overloads", len(fam.overloads)),
            ("Calls", fam.call_count)]
    items = "".join(f"<li><code>{esc(o.overload or '(default)')}</code>: {plural(o.call_count, 'call')}</li>"
                    for o in fam.overloads)
    return f"<h2>{esc(fam.label)}</h2>{_table(rows)}<ul>{items}</ul>"


def _overload(index: ModelIndex, ov: Overload) -> str:
    if ov.kind == "aten_call":
        head = f"<h2>{esc(ov.target)}</h2>"
        schema_text = ""
        if ov.aten_calls:
            sig = call_signature(ov.aten_calls[0])
            if sig.schema is not None:
                schema_text = f"<pre style='white-space:pre-wrap'>{esc(sig.schema.text)}</pre>"
        nodes = sum(len(c.node_paths) for c in ov.aten_calls)
        return head + schema_text + _table([("Calls", ov.call_count), ("ONNX nodes", nodes),
                                            *_torchlib_rows(ov.target)])
    assert ov.function is not None
    f = index.functions.functions[ov.function]
    text = printed(f) if len(f.node) < 2000 else f"({len(f.node)} nodes)"
    folded = function_call_signature(f)
    schema_text = (f"<h3>Aten signature</h3><pre style='white-space:pre-wrap'>{esc(folded.schema.text)}</pre>"
                   if folded is not None and folded.schema is not None else "")
    return (f"<h2>{esc(ov.function)}</h2>" + schema_text
            + _table([("Inputs", ", ".join(f.input)), ("Outputs", ", ".join(f.output)),
                      ("Attributes", ", ".join([*f.attribute, *(a.name for a in f.attribute_proto)]) or "-"),
                      ("Calls", ov.call_count), *_torchlib_rows(ov.target)])
            + f"<pre style='white-space:pre-wrap'>{esc(text)}</pre>")


def _torchlib_rows(target: str | None) -> list[tuple[str, Any]]:
    """``aten::transpose.int → torchlib aten_transpose, trace_only`` and where its source is."""
    entry = next((e for e in torchlib_for(target) if not e.complex), None) if target else None
    if entry is None:
        return [("torchlib", f"{target} → none in the catalogue")] if target else []
    return [("torchlib", f"{target} → {entry.function}, {'trace_only' if entry.trace_only else 'script'}"),
            ("torchlib source", entry.source)]


def _aten_call(index: ModelIndex, call: AtenCall) -> str:
    sig = call_signature(call)
    rows = [("FX node", call.name), ("Module", call.module_path or "(root)"),
            ("ONNX nodes", len(call.node_paths))]
    if call.rule_names:
        rows.append(("Rewritten by", ", ".join(call.rule_names)))
    rows += _torchlib_rows(call.target)
    parts = [f"<h2>{esc(call.target)}</h2>"]
    if sig.schema is not None:
        parts.append("<h3>Aten signature</h3><pre style='white-space:pre-wrap'>" + esc(sig.text) + "</pre>")
    if sig.problem:
        parts.append(f"<p><i>{esc(sig.problem)}</i></p>")
    parts.append(_table(rows))
    nodes = []
    if call.scope == MAIN:
        for p in call.node_paths:
            try:
                nodes.append(printed(resolve_path(index.proto.graph.node, p)).strip())
            except KeyError:
                continue
    parts.append("<h3>ONNX body</h3><pre style='white-space:pre-wrap'>" + esc("\n".join(nodes)) + "</pre>")
    if call.stack_trace:
        parts.append("<h3>Stack trace</h3><pre style='white-space:pre-wrap'>" + esc(call.stack_trace) + "</pre>")
    return "".join(parts)


def _call_site(index: ModelIndex, site: CallSite) -> str:
    """The call: where it is, the aten signature with its values for a function ``fold`` made, and the attribute
    values it passes (a TorchScript module function's per-instance eps or shapes)."""
    rows: list[tuple[str, Any]] = [("Node", site.node_name or "(unnamed)"), ("In", str(site.caller)),
                                   ("Path", site.where)]
    node = site_node(index, site)
    parts = [f"<h2>Call of {esc(site.callee)}</h2>"]
    f = index.functions.functions.get(site.callee)
    sig = function_call_signature(f, node) if f is not None else None
    if sig is not None and sig.schema is not None:
        parts.append("<h3>Aten signature</h3><pre style='white-space:pre-wrap'>" + esc(sig.text) + "</pre>")
        rows += _torchlib_rows(sig.schema.target)
    parts.append(_table(rows))
    if node is not None and node.attribute:
        passed = [(a.name, value_text(attribute_value(a)[0]) if not a.ref_attr_name else f"@{a.ref_attr_name}")
                  for a in node.attribute]
        parts.append("<h3>Attributes this call passes</h3>" + _table(passed))
    return "".join(parts)


def _module(index: ModelIndex, m: ModuleNode, module_total: Callable[[ModuleNode], int] | None) -> str:
    total = module_total(m) if module_total is not None else m.total_nodes()  # a walk of the subtree (18 ms at 100k)
    rows = [("Class", m.class_name or "-"), ("Aten calls", len(m.calls)), ("Nodes (with submodules)", total)]
    calls = [index.provenance.calls[i] for i in m.calls[:200]]
    items = "".join(f"<li><code>{esc(c.target)}</code> {esc(c.name)}</li>" for c in calls)
    return f"<h2>{esc(m.path or '(root module)')}</h2>{_table(rows)}<ul>{items}</ul>"


def _table(rows: list[tuple[str, Any]]) -> str:
    cells = "".join(f"<tr><td><b>{esc(k)}</b></td><td>{esc(v)}</td></tr>" for k, v in rows)
    return f"<table cellspacing='4'>{cells}</table>"
