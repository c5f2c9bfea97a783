"""One entry for every diff format, for the app's compare window (``commands/diff.py`` has the same table)."""

from __future__ import annotations

import json

from inspector.core.diff import ModelDiff, diff_dict

DIFF_SUFFIXES = {".json": "json", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".txt": "text"}


def render_diff(d: ModelDiff, fmt: str) -> str:
    """The diff as ``text``, ``md``, ``json`` or ``html``."""
    if fmt == "json":
        return json.dumps(diff_dict(d), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt == "md":
        from inspector.report.diff_markdown import render_markdown

        return render_markdown(d)
    if fmt == "html":
        from inspector.report.diff_html import render_html

        return render_html(d)
    from inspector.report.diff_text import diff_text

    return diff_text(d)
