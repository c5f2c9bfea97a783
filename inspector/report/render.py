"""One entry for every report format, shared by ``onnx-inspector report`` and the app's File → Export Report."""

from __future__ import annotations

from inspector.report.data import Report

FORMATS = ("html", "md", "json", "pdf")
SUFFIXES = {".html": "html", ".htm": "html", ".md": "md", ".markdown": "md", ".json": "json", ".pdf": "pdf"}


def render_text(report: Report, fmt: str) -> str:
    """The report as text; for ``pdf`` the print HTML that ``inspector.pdf`` prints (the same view model and
    templates as ``html``, laid out for Qt's printer)."""
    if fmt in ("html", "pdf"):
        from inspector.report.html import render_html

        return render_html(report, printing=fmt == "pdf")
    if fmt == "md":
        from inspector.report.markdown import render_markdown

        return render_markdown(report)
    if fmt == "json":
        from inspector.report.jsonreport import render_json

        return render_json(report)
    raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
