"""A folder diff (``onnx-inspector diff DIR_A DIR_B``) as text, Markdown, HTML or JSON: one summary table, a row
per relative path. Every path and name from the folders goes through ``inspector.core.util.textsafe``."""

from __future__ import annotations

from pathlib import Path

from inspector.core.diff.folders import DIR_STATUSES, DirDiff, DirRow, DirStatus
from inspector.core.util.jsonsafe import json_text
from inspector.core.util.textsafe import md_text as md
from inspector.core.util.textsafe import one_line
from inspector.core.util.units import plural
from inspector.report.diff_html import dir_diff_page
from inspector.report.diff_markdown import fit_markdown
from inspector.report.diff_text import KIND_TITLES

__all__ = ["DIR_DIFF_FORMATS", "STATUS_TITLES", "dir_diff_verdict", "render_dir_diff", "row_detail"]

DIR_DIFF_FORMATS = ("text", "md", "json", "html")
STATUS_TITLES: dict[DirStatus, str] = {"equal": "equal", "equivalent": "equivalent", "different": "different",
                                       "only_a": "only in A", "only_b": "only in B", "error": "error"}
_CLASSES: dict[DirStatus, str] = {"equal": "equal", "equivalent": "equivalent", "different": "different",
                                  "only_a": "different", "only_b": "different", "error": "different"}
_MARKS: dict[DirStatus, str] = {"equal": "✅", "equivalent": "🟰", "different": "❌", "only_a": "➖",
                                "only_b": "➕", "error": "⚠️"}


def render_dir_diff(d: DirDiff, fmt: str) -> str:
    """The folder diff as ``text``, ``md``, ``json`` or ``html``."""
    if fmt == "json":
        return json_text(d.to_json())
    if fmt == "md":
        return dir_diff_markdown(d)
    if fmt == "html":
        return dir_diff_html(d)
    if fmt == "text":
        return dir_diff_text(d)
    raise ValueError(f"unknown folder diff format {fmt!r}; expected one of {', '.join(DIR_DIFF_FORMATS)}")


def dir_diff_verdict(d: DirDiff) -> str:
    """One line: how many paths, and how many of each status."""
    counts = d.counts()
    parts = [f"{counts[s]} {STATUS_TITLES[s]}" for s in DIR_STATUSES if counts[s]]
    head = "equal" if d.equal else "different"
    return f"{head}: {plural(len(d.rows), 'path')}" + (f" ({', '.join(parts)})" if parts
                                                                             else "")


def _row_title(kind: str) -> str:
    """A kind's title on a row, where no section heading says what was ``retyped``: ``input retyped``, ``output
    retyped`` and ``initializer added`` (two kinds of one row read ``retyped 1, retyped 1`` before)."""
    title = {str(k): v for k, v in KIND_TITLES.items()}.get(kind, kind)
    section = kind.partition("_")[0]
    return f"{section} {title}" if section in ("initializer", "input", "output") else title


def row_detail(row: DirRow) -> str:
    """What a row adds to its status, as plain text (callers escape it): the error, or the changes by kind and
    the families they are in."""
    if row.status == "error":
        return row.error
    if not row.changes:
        return ""
    kinds = ", ".join(f"{_row_title(k)} {n}" for k, n in sorted(row.kinds.items()))
    text = f"{plural(row.changes, 'change')} ({kinds})"
    if row.families:
        text += " in " + ", ".join(row.families)
    return text


def dir_diff_text(d: DirDiff) -> str:
    lines = ["folder diff", f"  A  {one_line(d.a)}", f"  B  {one_line(d.b)}", ""]
    rows = [(STATUS_TITLES[r.status], one_line(r.path), one_line(row_detail(r), 200)) for r in d.rows]
    header = ("status", "path", "changes")
    w0 = max(len(header[0]), *(len(r[0]) for r in rows)) if rows else len(header[0])
    w1 = max(len(header[1]), *(len(r[1]) for r in rows)) if rows else len(header[1])
    for status, path, detail in [header, *rows]:
        lines.append(f"{status:<{w0}}  {path:<{w1}}  {detail}".rstrip())
    if not rows:
        lines.append("(no model files in either folder)")
    lines += ["", dir_diff_verdict(d)]
    return "\n".join(lines) + "\n"


def dir_diff_markdown(d: DirDiff) -> str:
    """One GitHub comment (cut to fit, saying so, on a very large table)."""
    out = [f"### ONNX folder diff: {md(Path(d.a).name, 80)} → {md(Path(d.b).name, 80)}", "",
           f"<b>A</b> <code>{md(d.a, 200)}</code><br>", f"<b>B</b> <code>{md(d.b, 200)}</code>", "",
           f"{'✅' if d.equal else '❌'} **{md(dir_diff_verdict(d))}**", "",
           "| | path | status | changes |", "| --- | --- | --- | --- |"]
    for r in d.rows:
        out.append(f"| {_MARKS[r.status]} | {md(r.path, 200)} | {STATUS_TITLES[r.status]} | "
                   f"{md(row_detail(r), 300)} |")
    return fit_markdown("\n".join(out) + "\n")


def dir_diff_html(d: DirDiff) -> str:
    """One self-contained page: light and dark, no scripts, no requests."""
    return dir_diff_page(d, dirs_verdict=dir_diff_verdict(d), status_classes=_CLASSES, status_titles=STATUS_TITLES,
                         row_detail=row_detail)
