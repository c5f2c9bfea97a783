"""Annotated reports over core results: one view model, and HTML, Markdown, JSON and print-HTML writers (no Qt).

``build_report(index, reviews, compare)`` (``build.py``) collects what a report shows into the view model
(``data.py``); ``render_html`` (Jinja2 templates, autoescaped), ``render_markdown`` and ``render_json`` format it, and
``render.render_text(report, "pdf")`` gives the print HTML that ``inspector.pdf`` prints with Qt. The writers, the
view model and its builder are imported lazily, so importing this package costs little. ``inspector.api`` is where
commands and callers get a report.

Diffs (``inspector.core.diff.ModelDiff``) have their own renderers, used by ``onnx-inspector diff`` and by the
comparison section of reports alike: ``diff_text`` (titles, the verdict, plain text), ``diff_markdown`` and
``diff_html``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inspector.report.build import build_report
    from inspector.report.data import Limits, Report
    from inspector.report.html import render_html
    from inspector.report.jsonreport import render_json, report_dict
    from inspector.report.markdown import render_markdown

__all__ = ["Limits", "Report", "build_report", "render_html", "render_json", "render_markdown", "report_dict"]

# (also the view model and its builder: `diff` and `check` import a renderer of this package and need neither; their
# imports were a tenth of those commands' start-up)
_LAZY = {
    "build_report": "inspector.report.build",
    "Limits": "inspector.report.data",
    "Report": "inspector.report.data",
    "render_html": "inspector.report.html",
    "render_markdown": "inspector.report.markdown",
    "render_json": "inspector.report.jsonreport",
    "report_dict": "inspector.report.jsonreport",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
