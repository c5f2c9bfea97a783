"""A diff as Markdown for a GitHub comment (``onnx-inspector diff --format md``, and the comparison section of the
Markdown report): the verdict, a summary table, then one collapsed block per group, cut to a character budget
(GitHub refuses comments over 65,536) with a note of what was left out; ``fit_markdown`` is the last guard of
both Markdown writers (never more than 65,536 characters, and it says what it cut). Every model string goes through
``inspector.core.util.textsafe.md_text``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from inspector.core.diff import Change, ModelDiff, Section
from inspector.core.util.textsafe import md_html
from inspector.core.util.textsafe import md_text as md
from inspector.core.util.units import arrowed, plural
from inspector.report.diff_text import group_title, kind_title, matched_line, verdict

if TYPE_CHECKING:  # (the reviews of a report's diff: a diff's own page never reads them)
    from inspector.core.reviewed_changes import Reviewed

__all__ = ["GITHUB_LIMIT", "MD_BUDGET", "changes_markdown", "fit_markdown", "render_markdown", "sites_shown",
           "summary_markdown"]

MAX_SITES = 12  # sites listed per change in md/html (all of them are in the JSON)
MAX_EDITS = 40
MD_BUDGET = 60_000  # characters: GitHub refuses comments over 65,536
MAX_SUMMARY_ROWS = 60
GITHUB_LIMIT = 65_536  # characters GitHub accepts in a comment
TITLE = 200  # characters of model text in a title, a site or a name
DETAIL = 400  # characters of model text in a change's detail


def sites_shown(c: Change) -> tuple[list[str], int]:
    """The sites listed for a change (at most ``MAX_SITES``) and how many more there are; for an initializer the
    optimizer named, the call that reads it (``Change.read_by``), not its name again."""
    if c.read_by:
        return [c.read_by], 0
    sites = c.sites or ([c.where] if c.where else [])
    return sites[:MAX_SITES], max(0, len(sites) - MAX_SITES)


def edit_at(index_a: int | None, index_b: int | None) -> str:
    """``A#3 B#4``: where a node edit sits on each side."""
    return " ".join(x for x in (f"A#{index_a}" if index_a is not None else "",
                                f"B#{index_b}" if index_b is not None else "") if x)


def render_markdown(d: ModelDiff, budget: int = MD_BUDGET) -> str:
    """The whole diff as one Markdown comment of at most ``budget`` characters."""
    out = [f"### ONNX diff: {md(Path(d.a).name, TITLE)} → {md(Path(d.b).name, TITLE)}", ""]
    out.append(f"<b>A</b> <code>{md(d.a, TITLE)}</code><br>")
    out.append(f"<b>B</b> <code>{md(d.b, TITLE)}</code>")
    out.append("")
    out += summary_markdown(d)
    used = sum(len(line) + 1 for line in out)
    return fit_markdown("\n".join(out + changes_markdown(d, budget - used)) + "\n")


def fit_markdown(text: str, limit: int = GITHUB_LIMIT) -> str:
    """``text`` when it has at most ``limit`` characters; otherwise cut at a line end, with open code fences and
    ``<details>`` blocks closed and a last line saying how much was cut (the result has at most ``limit``)."""
    if len(text) <= limit:
        return text
    kept = text[: max(0, limit - 600)].rsplit("\n", 1)[0]
    tail: list[str] = []
    fence = None
    for line in kept.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("```"):
            ticks = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            fence = ticks if fence is None else (None if stripped.rstrip() == fence else fence)
    if fence is not None:
        tail.append(fence)
    tail += ["</details>"] * max(0, kept.count("<details>") - kept.count("</details>"))
    cut = len(text) - len(kept)
    lines = text.count("\n") - kept.count("\n")
    tail += ["", f"*Cut to fit a GitHub comment: the last {cut:,} characters ({lines:,} lines) are not shown; "
                 "use `--format json` or `--format html` for everything.*", ""]
    return kept + "\n" + "\n".join(tail)


def summary_markdown(d: ModelDiff) -> list[str]:
    """The verdict line, the renamed count and the fold explanation."""
    mark = "✅" if d.equal else "🟰" if d.equivalent else "❌"
    out = [f"**{mark} {md(verdict(d))}** · matched: {md(matched_line(d))}"]
    if d.renamed:
        out.append("")
        out.append(f"{plural(d.renamed, 'matched item')} named differently (names are not changes).")
    if d.fold is not None:
        out.append("")
        out.append(f"> {md(d.fold.explanation, line_start=True)}")
    return out


def changes_markdown(d: ModelDiff, budget: int, reviewed: Mapping[int, Reviewed] | None = None) -> list[str]:
    """The summary table and the collapsed groups, in at most ``budget`` characters; ``reviewed``: what the reviews of
    model A said of each change's body, by the change's ``id`` (``core.reviewed_changes``), under its detail."""
    groups = d.grouped()
    if not groups:
        return []
    out = ["", "| Group | Changes |", "|---|---:|"]
    for k, (section, family, changes) in enumerate(groups):
        if k == MAX_SUMMARY_ROWS:
            out.append(f"| … {len(groups) - k} more groups | {sum(len(g[2]) for g in groups[k:])} |")
            break
        out.append(f"| {md(group_title(section, family), TITLE)} | {len(changes)} |")
    used = sum(len(line) + 1 for line in out)
    for k, (section, family, changes) in enumerate(groups):
        room = budget - 400 - used  # keep room for the note below
        block = _markdown_group(section, family, changes, room, reviewed or {}) if room > 1000 else ""
        if not block:
            left = groups[k:]
            out += ["", f"*{plural(len(left), 'more group')} ({plural(sum(len(g[2]) for g in left), 'change')}) "
                        "not shown here: "
                        "use `--format json` or `--format html` for the full list.*"]
            break
        out.append(block)
        used += len(block) + 1
    return out


def _said(reviewed: Reviewed | None) -> str:
    """What A's reviews said of a change's body, on lines of its table cell (``<br>``: a cell is one line)."""
    if not reviewed:
        return ""
    return "".join(f"<br>reviewed in A: {md(what, TITLE)}: **{md(r.status)}**"
                   + (f" — {md(r.note, DETAIL)}" if r.note else "") for what, r in reviewed)


def _markdown_group(section: Section, family: str, changes: list[Change], room: int,
                    reviewed: Mapping[int, Reviewed]) -> str:
    """One collapsed group, at most ``room`` characters (rows that do not fit are counted, not shown)."""
    head = ["", f"<details><summary><b>{md_html(group_title(section, family), TITLE)}</b>: "
                f"{plural(len(changes), 'change')}</summary>", "", "| Change | Detail | Where |",
            "|---|---|---|"]
    tail = ["", "</details>"]
    size = sum(len(x) + 1 for x in head + tail) + 120
    rows: list[str] = []
    shown: list[Change] = []
    for c in changes:
        sites, more = sites_shown(c)
        where = ", ".join(md(s, TITLE) for s in sites) + (f", … {more} more" if more else "")
        row = f"| {md(kind_title(c.kind))} | {md(arrowed(c.detail), DETAIL)}{_said(reviewed.get(id(c)))} | {where} |"
        if size + len(row) + 1 > room:
            break
        rows.append(row)
        shown.append(c)
        size += len(row) + 1
    if not rows:
        return ""
    if len(shown) < len(changes):
        rows.append(f"| … | {len(changes) - len(shown)} more changes in this group | |")
    notes: list[str] = []
    for c in shown:
        if not c.edits:
            continue
        lines = ["", f"Node edits ({md(c.where, TITLE)}):", ""]
        for e in c.edits[:MAX_EDITS]:
            at = edit_at(e.index_a, e.index_b)
            lines.append(f"- {md(e.op, line_start=True)} <code>{md(e.node, TITLE)}</code> {md(at)}"
                         + (f": {md(arrowed(e.detail), DETAIL)}" if e.detail else ""))
        if len(c.edits) > MAX_EDITS:
            lines.append(f"- … {len(c.edits) - MAX_EDITS} more")
        extra = sum(len(x) + 1 for x in lines)
        if size + extra > room:
            break
        notes += lines
        size += extra
    return "\n".join(head + rows + notes + tail)
