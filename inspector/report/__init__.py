"""Annotated reports over core results: HTML, Markdown and JSON writers (no Qt; PDF lives in the GUI package).

``build_report(index, reviews, compare)`` collects what a report shows; ``render_html``, ``render_markdown`` and
``render_json`` format it. The writers are imported lazily, so importing this package costs little.

Diffs (``inspector.core.diff.ModelDiff``) have their own renderers, used by ``onnx-inspector diff`` and by the
comparison section of reports alike: ``diff_text`` (titles, the verdict, plain text), ``diff_markdown`` and
``diff_html``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inspector.report.build import build_report
from inspector.report.data import Limits, Report

if TYPE_CHECKING:
    from inspector.report.html import render_html
    from inspector.report.jsonreport import render_json, report_dict
    from inspector.report.markdown import render_markdown

__all__ = ["Limits", "Report", "build_report", "render_html", "render_json", "render_markdown", "report_dict"]

_LAZY = {
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
