"""A diff as HTML (``onnx-inspector diff --format html``: one page, light and dark, no scripts; and the comparison
section of the HTML report), from the templates ``diff_page.html.j2`` and ``diff.html.j2`` with autoescape: every
model string goes through ``inspector.core.util.textsafe.html_text`` (``inspector.report.templating``), newlines
shown as ``\\x0a`` so that a value stays on its line."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspector.core.diff import Change, ModelDiff
from inspector.core.diff.folders import DirDiff
from inspector.report.diff_markdown import MAX_EDITS, edit_at, sites_shown
from inspector.report.diff_text import group_title, kind_title, matched_line, verdict
from inspector.report.templating import Markup, template_environment

if TYPE_CHECKING:  # (the reviews of a report's diff: the report's, imported there; a diff page never reads them)
    from inspector.core.reviewed_changes import Reviewed

__all__ = ["CSP", "DIFF_CSS", "diff_section_html", "dir_diff_page", "render_html"]

CSP = "default-src 'none'; style-src 'unsafe-inline'"

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
# (a folder diff's status and paths keep their width: ``anywhere`` let the table squeeze ``resnet.onnx`` to
# ``resnet.on`` / ``nx`` beside a long row of changes; ``break-word`` still breaks a path longer than the page)
_TABLE = """.muted { color: var(--muted); }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0; }
th, td { border: 1px solid var(--border); padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
th { background: var(--head); }
table.paths td:nth-child(1) { white-space: nowrap; }
table.paths code { overflow-wrap: break-word; }
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
.diff .reviewed { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0.2rem 0; }
.diff ul.reviewed { padding-left: 1.2rem; }
.diff dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
.diff dt { font-weight: 600; } .diff dd { margin: 0; }
"""




def _kind_class(kind: str) -> str:
    if kind.endswith("_added"):
        return "k-add"
    if kind.endswith("_removed"):
        return "k-del"
    return "k-chg"


_HELPERS: dict[str, Any] = {"matched_line": matched_line, "verdict": verdict, "group_title": group_title,
                            "kind_title": kind_title, "sites_shown": sites_shown, "edit_at": edit_at,
                            "kind_class": _kind_class, "max_edits": MAX_EDITS}


def render_html(d: ModelDiff) -> str:
    """The whole diff as one self-contained page."""
    return _page(f"ONNX diff: {Path(d.a).name} vs {Path(d.b).name}", d=d, groups=_groups(d, None))


def dir_diff_page(d: DirDiff, **rows: Any) -> str:
    """Two folders compared, as one self-contained page (``rows``: how ``dir_diff`` names statuses and details)."""
    return _page(f"ONNX folder diff: {Path(d.a).name} vs {Path(d.b).name}", dirs=d, **rows)


def diff_section_html(d: ModelDiff, max_changes: int | None = None, heading: str = "h3",
                      printing: bool = False, reviewed: Mapping[int, Reviewed] | None = None) -> Markup:
    """The verdict and the changes (at most ``max_changes``, the rest counted by the caller), for another page
    (``printing``: one Qt's printer lays out, ``report.html.render_html``); ``reviewed``: what the reviews of model
    A said of each change's body, by the change's ``id`` (``core.reviewed_changes``), shown under its detail."""
    # (here, not at import: a folder diff's workers never show reviews; imported with the module, these and the
    # diff's signature binding (``compare``) cost the zoo's folder diff 12 ms of its 0.21 s wall, 2 workers)
    from inspector.core.reviewed_changes import reviewed_place
    from inspector.report.data import BADGE_LABELS

    said = reviewed or {}
    macros: Any = template_environment(keep_newlines=False).get_template("diff.html.j2").make_module(
        {**_HELPERS, "reviews_of": lambda c: said.get(id(c), ()), "reviewed_place": reviewed_place,
         "badge_labels": BADGE_LABELS})
    return Markup(f"{macros.summary(d)}\n{macros.changes(_groups(d, max_changes), heading, printing)}")


def _page(title: str, **context: Any) -> str:
    return template_environment(keep_newlines=False).get_template("diff_page.html.j2").render(
        title=title, csp=Markup(CSP), css=Markup(_CSS), **_HELPERS, **context)


def _groups(d: ModelDiff, max_changes: int | None) -> list[tuple[str, str, list[Change]]]:
    """The changes by section and family, at most ``max_changes`` in all."""
    out: list[tuple[str, str, list[Change]]] = []
    left = len(d.changes) if max_changes is None else max_changes
    for section, family, changes in d.grouped():
        if left <= 0:
            break
        out.append((section, family, changes[:left]))
        left -= len(out[-1][2])
    return out
