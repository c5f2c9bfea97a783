"""``onnx-inspector diff A B [--format text|md|json|html] [-o FILE]``: what changed between two exports.

Exit code 0 when the models are equal (names aside), 1 when they differ (also when one is only the other
folded: equivalent, but not equal), 2 on error.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from inspector.core.diff import (
    KIND_TITLES,
    Change,
    ModelDiff,
    diff_dict,
    diff_files,
    diff_text,
    group_title,
    matched_line,
    printable,
    verdict,
)
from inspector.core.errors import InspectorError

FORMATS = ("text", "md", "json", "html")
MAX_SITES = 12  # sites listed per change in md/html (all of them are in the JSON)
MAX_EDITS = 40
MD_BUDGET = 60_000  # characters: GitHub refuses comments over 65,536
MAX_SUMMARY_ROWS = 60


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector diff", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="the old model (.onnx or ONNX text syntax)")
    p.add_argument("b", help="the new model")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (default), md (fits a GitHub comment), json (versioned), html (one page)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    d = diff_files(args.a, args.b)
    text = render(d, args.format)
    if args.output:
        write_atomically(Path(args.output), text)
        sys.stdout.write(f"{verdict(d)}; wrote {args.output}\n")
    else:
        sys.stdout.write(text)
    return 0 if d.equal else 1


def render(d: ModelDiff, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(diff_dict(d), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt == "md":
        return render_markdown(d)
    if fmt == "html":
        return render_html(d)
    return diff_text(d)


def write_atomically(path: Path, text: str) -> None:
    """Write next to the target and rename, so a failure never leaves half a report behind."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise InspectorError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a report is an ordinary file
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise InspectorError(f"cannot write {path}: {e.strerror or e}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _sites(c: Change) -> list[str]:
    return c.sites or ([c.where] if c.where else [])


def _sites_shown(c: Change) -> tuple[list[str], int]:
    sites = _sites(c)
    return sites[:MAX_SITES], max(0, len(sites) - MAX_SITES)


# --- Markdown --------------------------------------------------------------------------------------------------------

# Every character Markdown (GitHub flavour) or inline HTML could read as syntax becomes an entity.
_MD_ESCAPES = str.maketrans({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;", "`": "&#96;", "\\": "&#92;", "*": "&#42;",
    "_": "&#95;", "[": "&#91;", "]": "&#93;", "#": "&#35;", "@": "&#64;", "~": "&#126;", "!": "&#33;",
    "$": "&#36;", "{": "&#123;", "}": "&#125;", "=": "&#61;", "\n": " ", "\r": " ", "\t": " ",
})


def md(text: object) -> str:
    """A model string as inert Markdown text: no markup, links, code spans, table breaks or mentions."""
    return printable(str(text)).translate(_MD_ESCAPES)


def render_markdown(d: ModelDiff, budget: int = MD_BUDGET) -> str:
    """Markdown for a GitHub comment: a summary table, then one collapsed block per group, cut to ``budget``
    characters (GitHub refuses comments over 65,536) with a note of what was left out."""
    out = [f"### ONNX diff: {md(Path(d.a).name)} → {md(Path(d.b).name)}", ""]
    out.append(f"<b>A</b> <code>{md(d.a)}</code><br>")
    out.append(f"<b>B</b> <code>{md(d.b)}</code>")
    out.append("")
    mark = "✅" if d.equal else "🟰" if d.equivalent else "❌"
    out.append(f"**{mark} {md(verdict(d))}** · matched: {md(matched_line(d))}")
    if d.renamed:
        out.append("")
        out.append(f"{d.renamed} matched items have different names (names are not changes).")
    if d.fold is not None:
        out.append("")
        out.append(f"> {md(d.fold.explanation)}")
    groups = d.grouped()
    if not groups:
        return "\n".join(out) + "\n"
    out += ["", "| Group | Changes |", "|---|---:|"]
    for k, (section, family, changes) in enumerate(groups):
        if k == MAX_SUMMARY_ROWS:
            out.append(f"| … {len(groups) - k} more groups | {sum(len(g[2]) for g in groups[k:])} |")
            break
        out.append(f"| {md(group_title(section, family))} | {len(changes)} |")
    used = sum(len(line) + 1 for line in out)
    for k, (section, family, changes) in enumerate(groups):
        room = budget - 400 - used  # keep room for the note below
        block = _markdown_group(section, family, changes, room) if room > 1000 else ""
        if not block:
            left = groups[k:]
            out += ["", f"*{len(left)} more groups ({sum(len(g[2]) for g in left)} changes) are not shown here: "
                        "use `--format json` or `--format html` for the full list.*"]
            break
        out.append(block)
        used += len(block) + 1
    return "\n".join(out) + "\n"


def _markdown_group(section: str, family: str, changes: list[Change], room: int) -> str:
    """One collapsed group, at most ``room`` characters (rows that do not fit are counted, not shown)."""
    head = ["", f"<details><summary><b>{md(group_title(section, family))}</b>: {len(changes)} "
                f"change{'s' if len(changes) != 1 else ''}</summary>", "", "| Change | Detail | Where |",
            "|---|---|---|"]
    tail = ["", "</details>"]
    size = sum(len(x) + 1 for x in head + tail) + 120
    rows: list[str] = []
    shown: list[Change] = []
    for c in changes:
        sites, more = _sites_shown(c)
        where = ", ".join(md(s) for s in sites) + (f", … {more} more" if more else "")
        row = f"| {md(KIND_TITLES.get(c.kind, c.kind))} | {md(c.detail)} | {where} |"
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
        lines = ["", f"Node edits ({md(c.where)}):", ""]
        for e in c.edits[:MAX_EDITS]:
            at = " ".join(x for x in (f"A#{e.index_a}" if e.index_a is not None else "",
                                      f"B#{e.index_b}" if e.index_b is not None else "") if x)
            lines.append(f"- {md(e.op)} <code>{md(e.node)}</code> {md(at)}" + (f": {md(e.detail)}" if e.detail else ""))
        if len(c.edits) > MAX_EDITS:
            lines.append(f"- … {len(c.edits) - MAX_EDITS} more")
        extra = sum(len(x) + 1 for x in lines)
        if size + extra > room:
            break
        notes += lines
        size += extra
    return "\n".join(head + rows + notes + tail)


# --- HTML ------------------------------------------------------------------------------------------------------------

_CSS = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --border: #d1d9e0;
  --head: #f6f8fa; --add: #1a7f37; --del: #cf222e; --chg: #9a6700; --ok: #1a7f37; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --border: #3d444d; --head: #151b23;
    --add: #3fb950; --del: #f85149; --chg: #d29922; --ok: #3fb950; }
}
body { background: var(--bg); color: var(--fg); font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif;
  margin: 2rem auto; max-width: 72rem; padding: 0 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; border-bottom: 1px solid var(--border); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em;
  overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dt { font-weight: 600; } dd { margin: 0; }
.verdict { font-size: 1.1rem; font-weight: 600; }
.equal { color: var(--ok); } .equivalent { color: var(--chg); } .different { color: var(--del); }
.muted { color: var(--muted); }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0; }
th, td { border: 1px solid var(--border); padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
th { background: var(--head); }
.k-add { color: var(--add); } .k-del { color: var(--del); } .k-chg { color: var(--chg); }
details { margin: 0.3rem 0 0.6rem; } summary { cursor: pointer; color: var(--muted); }
ul.edits { margin: 0.2rem 0; padding-left: 1.2rem; }
"""


def h(text: object) -> str:
    """A model string as HTML text; ``=`` too is an entity, so no attribute-like text survives verbatim."""
    return html.escape(printable(str(text)), quote=True).replace("=", "&#61;")


def _kind_class(kind: str) -> str:
    if kind.endswith("_added"):
        return "k-add"
    if kind.endswith("_removed"):
        return "k-del"
    return "k-chg"


def render_html(d: ModelDiff) -> str:
    state = "equal" if d.equal else "equivalent" if d.equivalent else "different"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="color-scheme" content="light dark">',
        f"<title>ONNX diff: {h(Path(d.a).name)} vs {h(Path(d.b).name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>ONNX diff</h1>",
        f"<dl><dt>A</dt><dd><code>{h(d.a)}</code></dd><dt>B</dt><dd><code>{h(d.b)}</code></dd>",
        f"<dt>matched</dt><dd>{h(matched_line(d))}</dd></dl>",
        f'<p class="verdict {state}">{h(verdict(d))}</p>',
    ]
    if d.renamed:
        parts.append(f'<p class="muted">{d.renamed} matched items have different names (names are not '
                     "changes).</p>")
    if d.fold is not None:
        parts.append(f"<p>{h(d.fold.explanation)}</p>")
    for section, family, changes in d.grouped():
        parts.append(f"<section><h2>{h(group_title(section, family))}</h2>")
        parts.append("<table><thead><tr><th>Change</th><th>Detail</th><th>Where</th></tr></thead><tbody>")
        for c in changes:
            sites, more = _sites_shown(c)
            where = ", ".join(f"<code>{h(s)}</code>" for s in sites) + (f", … {more} more" if more else "")
            edits = ""
            if c.edits:
                items = []
                for e in c.edits[:MAX_EDITS]:
                    at = " ".join(x for x in (f"A#{e.index_a}" if e.index_a is not None else "",
                                              f"B#{e.index_b}" if e.index_b is not None else "") if x)
                    items.append(f'<li><span class="{_kind_class("_" + e.op)}">{h(e.op)}</span> '
                                 f"<code>{h(e.node)}</code> {h(at)}" + (f": {h(e.detail)}" if e.detail else "")
                                 + "</li>")
                if len(c.edits) > MAX_EDITS:
                    items.append(f"<li>… {len(c.edits) - MAX_EDITS} more</li>")
                edits = (f"<details><summary>{len(c.edits)} node edits</summary><ul class=\"edits\">"
                         + "".join(items) + "</ul></details>")
            parts.append(f'<tr><td class="{_kind_class(c.kind)}">{h(KIND_TITLES.get(c.kind, c.kind))}</td>'
                         f'<td class="mono">{h(c.detail)}{edits}</td><td>{where}</td></tr>')
        parts.append("</tbody></table></section>")
    parts.append('<p class="muted">onnx-inspector diff</p></body></html>')
    return "\n".join(parts) + "\n"
