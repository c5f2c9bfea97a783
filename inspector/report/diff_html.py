"""A diff as HTML (``onnx-inspector diff --format html``: one page, light and dark, no scripts; and the comparison
section of the HTML report). Every model string goes through ``inspector.core.util.textsafe.html_text``."""

from __future__ import annotations

from pathlib import Path

from inspector.core.diff import ModelDiff
from inspector.core.util.textsafe import html_text as h
from inspector.report.diff_markdown import MAX_EDITS, edit_at, sites_shown
from inspector.report.diff_text import group_title, kind_title, matched_line, verdict

__all__ = ["DIFF_CSS", "changes_html", "html_page", "render_html", "summary_html"]

_VARS = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --border: #d1d9e0;
  --head: #f6f8fa; --add: #1a7f37; --del: #cf222e; --chg: #9a6700; --ok: #1a7f37; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --border: #3d444d; --head: #151b23;
    --add: #3fb950; --del: #f85149; --chg: #d29922; --ok: #3fb950; }
}
"""
_PAGE = """\
body { background: var(--bg); color: var(--fg); font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif;
  margin: 2rem auto; max-width: 72rem; padding: 0 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; border-bottom: 1px solid var(--border); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em;
  overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dt { font-weight: 600; } dd { margin: 0; }
"""
_VERDICT = """.verdict { font-size: 1.1rem; font-weight: 600; }
.equal { color: var(--ok); } .equivalent { color: var(--chg); } .different { color: var(--del); }
"""
_TABLE = """.muted { color: var(--muted); }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0; }
th, td { border: 1px solid var(--border); padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
th { background: var(--head); }
"""
_CHANGES = """.k-add { color: var(--add); } .k-del { color: var(--del); } .k-chg { color: var(--chg); }
details { margin: 0.3rem 0 0.6rem; } summary { cursor: pointer; color: var(--muted); }
ul.edits { margin: 0.2rem 0; padding-left: 1.2rem; }
"""
_CSS = _VARS + _PAGE + _VERDICT + _TABLE + _CHANGES
# The diff section of another page (the HTML report): the same classes and colours, scoped to ``.diff``.
DIFF_CSS = """
.diff { --add: #1a7f37; --del: #cf222e; --chg: #9a6700; --ok: #1a7f37; }
@media (prefers-color-scheme: dark) { .diff { --add: #3fb950; --del: #f85149; --chg: #d29922; --ok: #3fb950; } }
.diff .verdict { font-size: 1.1rem; font-weight: 600; }
.diff .equal { color: var(--ok); } .diff .equivalent { color: var(--chg); } .diff .different { color: var(--del); }
.diff .k-add { color: var(--add); } .diff .k-del { color: var(--del); } .diff .k-chg { color: var(--chg); }
.diff ul.edits { margin: 0.2rem 0; padding-left: 1.2rem; }
"""


def _kind_class(kind: str) -> str:
    if kind.endswith("_added"):
        return "k-add"
    if kind.endswith("_removed"):
        return "k-del"
    return "k-chg"


def render_html(d: ModelDiff) -> str:
    """The whole diff as one self-contained page."""
    return html_page(f"ONNX diff: {h(Path(d.a).name)} vs {h(Path(d.b).name)}",
                     ["<h1>ONNX diff</h1>", *summary_html(d), *changes_html(d)])


def html_page(title: str, body: list[str]) -> str:
    """A self-contained diff page (light and dark, no scripts, no requests) around ``body``; ``title`` and
    ``body`` are HTML, escaped by the caller."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="color-scheme" content="light dark">',
        f"<title>{title}</title>",
        f"<style>{_CSS}</style></head><body>",
        *body,
        '<p class="muted">onnx-inspector diff</p></body></html>',
    ]
    return "\n".join(parts) + "\n"


def summary_html(d: ModelDiff) -> list[str]:
    """Both paths, what matched, the verdict, the renamed count and the fold explanation."""
    state = "equal" if d.equal else "equivalent" if d.equivalent else "different"
    parts = [
        f"<dl><dt>A</dt><dd><code>{h(d.a)}</code></dd><dt>B</dt><dd><code>{h(d.b)}</code></dd>",
        f"<dt>matched</dt><dd>{h(matched_line(d))}</dd></dl>",
        f'<p class="verdict {state}">{h(verdict(d))}</p>',
    ]
    if d.renamed:
        parts.append(f'<p class="muted">{d.renamed} matched items have different names (names are not '
                     "changes).</p>")
    if d.fold is not None:
        parts.append(f"<p>{h(d.fold.explanation)}</p>")
    return parts


def changes_html(d: ModelDiff, max_changes: int | None = None, heading: str = "h2") -> list[str]:
    """One table per group of changes; at most ``max_changes`` changes in all (the rest are counted)."""
    parts: list[str] = []
    left = len(d.changes) if max_changes is None else max_changes
    for section, family, changes in d.grouped():
        if left <= 0:
            break
        changes = changes[:left]
        left -= len(changes)
        parts.append(f"<section><{heading}>{h(group_title(section, family))}</{heading}>")
        parts.append("<table><thead><tr><th>Change</th><th>Detail</th><th>Where</th></tr></thead><tbody>")
        for c in changes:
            sites, more = sites_shown(c)
            where = ", ".join(f"<code>{h(s)}</code>" for s in sites) + (f", … {more} more" if more else "")
            edits = ""
            if c.edits:
                items = []
                for e in c.edits[:MAX_EDITS]:
                    at = edit_at(e.index_a, e.index_b)
                    items.append(f'<li><span class="{_kind_class("_" + e.op)}">{h(e.op)}</span> '
                                 f"<code>{h(e.node)}</code> {h(at)}" + (f": {h(e.detail)}" if e.detail else "")
                                 + "</li>")
                if len(c.edits) > MAX_EDITS:
                    items.append(f"<li>… {len(c.edits) - MAX_EDITS} more</li>")
                edits = (f"<details><summary>{len(c.edits)} node edits</summary><ul class=\"edits\">"
                         + "".join(items) + "</ul></details>")
            parts.append(f'<tr><td class="{_kind_class(c.kind)}">{h(kind_title(c.kind))}</td>'
                         f'<td class="mono">{h(c.detail)}{edits}</td><td>{where}</td></tr>')
        parts.append("</tbody></table></section>")
    return parts
