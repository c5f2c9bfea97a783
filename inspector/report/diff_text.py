"""How diffs read: section and change-kind titles, the one verdict text, and the plain-text diff (a terminal's
``onnx-inspector diff``). The Markdown and HTML renderers (``diff_markdown``, ``diff_html``) use these, and so do
the report's comparison section and the app's compare window, so every path words a diff the same way."""

from __future__ import annotations

from inspector.core.diff import Change, ChangeKind, ModelDiff, Section
from inspector.core.util.textsafe import printable
from inspector.core.util.units import plural

__all__ = ["KIND_TITLES", "SECTION_TITLES", "diff_text", "group_title", "kind_title", "matched_line", "sites_text",
           "verdict"]

SECTION_TITLES: dict[Section, str] = {
    "model": "model", "function": "local functions", "aten_call": "aten calls", "initializer": "initializers",
    "input": "graph inputs", "output": "graph outputs", "node": "other main-graph nodes",
}
# Change kinds and how a report names them.
KIND_TITLES: dict[ChangeKind, str] = {
    "folded": "folded",
    "ir_version": "ir_version", "opset_added": "opset added", "opset_removed": "opset removed",
    "opset_changed": "opset changed", "producer": "producer", "model_field": "model field",
    "metadata_added": "metadata added", "metadata_removed": "metadata removed", "metadata_changed": "metadata changed",
    "family_added": "family added", "family_removed": "family removed",
    "overload_added": "overload added", "overload_removed": "overload removed", "overload_renamed": "overload renamed",
    "signature_changed": "signature changed",
    "call_added": "call added", "call_removed": "call removed", "call_changed": "call changed",
    "value_changed": "value changed", "body_changed": "body changed", "rewired": "rewired",
    "initializer_added": "added", "initializer_removed": "removed", "initializer_reshaped": "reshaped",
    "initializer_revalued": "re-valued",
    "input_added": "added", "input_removed": "removed", "input_retyped": "retyped",
    "output_added": "added", "output_removed": "removed", "output_retyped": "retyped",
    "node_added": "node added", "node_removed": "node removed", "node_changed": "node changed",
}


def kind_title(kind: ChangeKind) -> str:
    """How a report names a change kind (``initializer_revalued`` -> ``re-valued``)."""
    return KIND_TITLES[kind]


def verdict(d: ModelDiff) -> str:
    """The one verdict text: ``equal``, ``equivalent (...)`` or ``different: N changes``."""
    if d.equal:
        return "equal"
    if d.equivalent:
        return "equivalent (structure differs, computation identical)"
    return f"different: {plural(len(d.changes), 'change')}"


def matched_line(d: ModelDiff) -> str:
    parts = []
    for key, title in (("aten_calls", "aten call"), ("functions", "function"), ("function_calls", "function call"),
                       ("nodes", "other node"), ("initializers", "initializer"), ("inputs", "input"),
                       ("outputs", "output")):
        m = d.matched.get(key)
        if m is None or (m.matched == 0 and m.only_a == 0 and m.only_b == 0):
            continue
        # (of those, the ones baked into aten calls are compared with their calls, not listed as added or removed)
        baked = f", {m.baked} baked into calls" if m.baked else ""
        extra = f" (+{m.only_b} -{m.only_a}{baked})" if m.only_a or m.only_b else ""
        parts.append(f"{plural(m.matched, title)}{extra}")
    return ", ".join(parts) or "nothing to match"


def group_title(section: Section, family: str) -> str:
    if section in ("function", "aten_call", "node") and family:
        kind = {"function": "function", "aten_call": "aten", "node": "node"}[section]
        return f"{family}  [{kind}]"
    return SECTION_TITLES[section]


def sites_text(c: Change, limit: int = 8) -> str:
    """Where a change applies, when its name does not say: ``at 5 sites: …``, or for an initializer the optimizer
    named (``val_35``), the aten call that reads it (``read by encoder.layers.0.blocks.0.attention.q_proj ›
    linear``)."""
    if c.read_by:
        return f"read by {c.read_by}"
    if len(c.sites) <= 1:
        return ""
    shown = ", ".join(c.sites[:limit])
    more = f", … {len(c.sites) - limit} more" if len(c.sites) > limit else ""
    return f"at {len(c.sites)} sites: {shown}{more}"


def diff_text(d: ModelDiff) -> str:
    """Plain text for a terminal, grouped by section and family; model strings made printable."""
    lines = [f"A  {d.a}", f"B  {d.b}", f"result   {verdict(d)}", f"matched  {matched_line(d)}"]
    if d.renamed:
        lines.append(f"renamed  {plural(d.renamed, 'matched item')} named differently (not a change)")
    for section, family, changes in d.grouped():
        lines.append("")
        lines.append(group_title(section, family))
        for c in changes:
            where = "" if len(c.sites) > 1 or c.where in c.detail or c.section == "model" else f"  ({c.where})"
            lines.append(f"  {kind_title(c.kind):<18} {c.detail}{where}")
            sites = sites_text(c)
            if sites:
                lines.append(f"  {'':<18} {sites}")
            for e in c.edits[:12]:
                at = f"#{e.index_a}" if e.index_a is not None else ""
                at += ("->" if e.index_a is not None and e.index_b is not None else "") + \
                    (f"#{e.index_b}" if e.index_b is not None else "")
                lines.append(f"  {'':<18}   {e.op:<8} {' '.join(filter(None, (e.node, at)))}"
                             f"{(': ' + e.detail) if e.detail else ''}")
            if len(c.edits) > 12:
                lines.append(f"  {'':<18}   … {len(c.edits) - 12} more edits")
    return "\n".join(printable(line) for line in lines) + "\n"
