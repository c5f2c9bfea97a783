"""Rich text for the details panel, built from escaped parts (``gui.text.tag``): models are untrusted, and a name,
schema, doc string or stack trace that holds markup is shown as text, never rendered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspector.core.aten.torchlib import torchlib_for
from inspector.core.bodies.literals import attribute_value
from inspector.core.model.calls import AtenCall
from inspector.core.model.function_sites import CallSite
from inspector.core.model.index import Family, ModelIndex, Overload
from inspector.core.model.keys import MAIN
from inspector.core.model.module_tree import ModuleNode
from inspector.core.model.signature import call_signature, function_call_signature
from inspector.core.model.walk import resolve_path
from inspector.core.specialise.categories import value_text
from inspector.core.util.sanitize import printed
from inspector.core.util.units import plural
from inspector.gui.analysis import TreeObject, site_node
from inspector.gui.text import Rich, pre, rich, tag

MAX_MODULE_CALLS = 200  # calls a module's details list (a 100k-node export's root module has thousands)


def describe(index: ModelIndex, obj: TreeObject, module_total: Callable[[ModuleNode], int] | None = None,
             module_calls: Callable[[ModuleNode], int] | None = None) -> Rich:
    """``module_total``, ``module_calls``: nodes and aten calls in a module and its submodules, when already counted
    (``ModuleModel.total``, ``calls``)."""
    if isinstance(obj, Family):
        return _family(obj)
    if isinstance(obj, Overload):
        return _overload(index, obj)
    if isinstance(obj, AtenCall):
        return _aten_call(index, obj)
    if isinstance(obj, CallSite):
        return _call_site(index, obj)
    if isinstance(obj, ModuleNode):
        return _module(index, obj, module_total, module_calls)
    return model_overview(index)


def model_overview(index: ModelIndex) -> Rich:
    f = index.facts
    rows = [
        ("File", index.path.name), ("IR version", f.ir_version),
        ("Opsets", ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(f.opsets.items()))),
        ("Producer", f"{f.producer_name} {f.producer_version}"),
        ("Nodes", f"{f.main_nodes:,} main, {f.total_nodes:,} in all"),
        ("Functions", f"{f.function_count:,}"),
        ("Parameters", f"{index.parameters().count:,} ({index.parameters().bytes:,} bytes)"),
        ("Aten calls", _calls_line(index)), ("Findings", len(index.findings)),
    ]
    findings = rich(tag("h3", "Findings"), tag("ul", *(tag("li", tag("b", x.severity), " ", x.message)
                                                       for x in index.findings))) if index.findings else ""
    return rich(tag("h2", index.path.name), _table(rows), findings)


def _calls_line(index: ModelIndex) -> str:
    """How many aten calls, and how many of them were recognised by body template (their nodes carry no fx
    metadata), so that a stripped export says where its calls came from before any one is opened."""
    total, recognised = len(index.provenance.calls), index.provenance.recognised
    if not recognised:
        return f"{total:,}"
    which = "all" if recognised == total else f"{recognised:,} of them"
    return f"{total:,}, {which} recognised by body template (no fx metadata)"


def _family(fam: Family) -> Rich:
    rows = [("Kind", "local function" if fam.kind == "function" else "aten calls"), ("Overloads", len(fam.overloads)),
            ("Calls", fam.call_count)]
    items = [tag("li", tag("code", o.overload or "(default)"), ": ", plural(o.call_count, "call"))
             for o in fam.overloads]
    return rich(tag("h2", fam.label), _table(rows), tag("ul", *items))


def _overload(index: ModelIndex, ov: Overload) -> Rich:
    if ov.kind == "aten_call":
        schema = call_signature(ov.aten_calls[0]).schema if ov.aten_calls else None
        nodes = sum(len(c.node_paths) for c in ov.aten_calls)
        return rich(tag("h2", ov.target), pre(schema.text) if schema is not None else "",
                    _table([("Calls", ov.call_count), ("ONNX nodes", nodes), *_torchlib_rows(ov.target)]))
    assert ov.function is not None
    f = index.functions.functions[ov.function]
    text = printed(f) if len(f.node) < 2000 else f"({len(f.node)} nodes)"
    folded = function_call_signature(f)
    schema_text = (rich(tag("h3", "Aten signature"), pre(folded.schema.text))
                   if folded is not None and folded.schema is not None else "")
    return rich(tag("h2", ov.function), schema_text,
                _table([("Inputs", ", ".join(f.input)), ("Outputs", ", ".join(f.output)),
                        ("Attributes", ", ".join([*f.attribute, *(a.name for a in f.attribute_proto)]) or "-"),
                        ("Calls", ov.call_count), *_torchlib_rows(ov.target)]),
                pre(text))


def _torchlib_rows(target: str | None) -> list[tuple[str, Any]]:
    """``aten::transpose.int → torchlib aten_transpose, trace_only`` and where its source is."""
    entry = next((e for e in torchlib_for(target) if not e.complex), None) if target else None
    if entry is None:
        return [("torchlib", f"{target} → none in the catalogue")] if target else []
    return [("torchlib", f"{target} → {entry.function}, {'trace_only' if entry.trace_only else 'script'}"),
            ("torchlib source", entry.source)]


def _aten_call(index: ModelIndex, call: AtenCall) -> Rich:
    sig = call_signature(call)
    rows = [("FX node", call.name), ("Module", call.module_path or "(root)"),
            ("ONNX nodes", len(call.node_paths))]
    if call.rule_names:
        rows.append(("Rewritten by", ", ".join(call.rule_names)))
    rows += _torchlib_rows(call.target)
    parts = [tag("h2", call.target)]
    if sig.schema is not None:
        parts += [tag("h3", "Aten signature"), pre(sig.text)]
    if sig.problem:
        parts.append(tag("p", tag("i", sig.problem)))
    parts.append(_table(rows))
    nodes = []
    if call.scope == MAIN:
        for p in call.node_paths:
            try:
                nodes.append(printed(resolve_path(index.proto.graph.node, p)).strip())
            except KeyError:
                continue
    parts += [tag("h3", "ONNX body"), pre("\n".join(nodes))]
    if call.stack_trace:
        parts += [tag("h3", "Stack trace"), pre(call.stack_trace)]
    return rich(*parts)


def _call_site(index: ModelIndex, site: CallSite) -> Rich:
    """The call: where it is, the aten signature with its values for a function ``fold`` made, and the attribute
    values it passes (a TorchScript module function's per-instance eps or shapes)."""
    rows: list[tuple[str, Any]] = [("Node", site.node_name or "(unnamed)"), ("In", str(site.caller)),
                                   ("Path", site.where)]
    node = site_node(index, site)
    parts: list[Rich] = [tag("h2", "Call of ", site.callee)]
    f = index.functions.functions.get(site.callee)
    sig = function_call_signature(f, node) if f is not None else None
    if sig is not None and sig.schema is not None:
        parts += [tag("h3", "Aten signature"), pre(sig.text)]
        rows += _torchlib_rows(sig.schema.target)
    parts.append(_table(rows))
    if node is not None and node.attribute:
        passed = [(a.name, value_text(attribute_value(a)[0]) if not a.ref_attr_name else f"@{a.ref_attr_name}")
                  for a in node.attribute]
        parts += [tag("h3", "Attributes this call passes"), _table(passed)]
    return rich(*parts)


def _module(index: ModelIndex, m: ModuleNode, module_total: Callable[[ModuleNode], int] | None,
            module_calls: Callable[[ModuleNode], int] | None = None) -> Rich:
    total = module_total(m) if module_total is not None else m.total_nodes()  # a walk of the subtree (18 ms at 100k)
    rows: list[tuple[str, Any]] = [("Class", m.class_name or "-")]
    if m.children:  # (a Swin's encoder read "Aten calls 0" beside "Nodes (with submodules) 87": its calls are its
        # layers'; counted off the GUI thread, as the nodes are)
        with_submodules = module_calls(m) if module_calls is not None else m.total_calls()
        rows += [("Aten calls (with submodules)", f"{with_submodules:,}"),
                 ("Its own aten calls", f"{len(m.calls):,}")]
    else:
        rows.append(("Aten calls", f"{len(m.calls):,}"))
    rows.append(("Nodes (with submodules)" if m.children else "Nodes", f"{total:,}"))
    calls = [index.provenance.calls[i] for i in m.calls[:MAX_MODULE_CALLS]]
    items = [tag("li", tag("code", c.target), " ", c.name) for c in calls]
    more = len(m.calls) - len(calls)  # (the list stopped at 200 without a word: a module of 300 calls looked whole)
    if more > 0:
        items.append(tag("li", tag("i", f"… {plural(more, 'more call')}: the filter box finds them by the module's "
                                        "path")))
    return rich(tag("h2", m.path or "(root module)"), _table(rows), tag("ul", *items))


def _table(rows: list[tuple[str, Any]]) -> Rich:
    return tag("table", *(tag("tr", tag("td", tag("b", k)), tag("td", v)) for k, v in rows), cellspacing=4)
