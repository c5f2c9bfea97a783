"""The PDF report Qt prints (``report --format pdf``): each graph is drawn inside one page, never wider than the page
nor taller, so none is cut at the right edge or at a page break (a line taller than a page cannot move to the next
one: Qt drew ts_functions' 1140 px tall graph across two pages and lost its middle). The document Qt lays out is
recorded as it is given its HTML, and its page is what the graphs are held to.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import inspector
from tests.conftest import ZOO

pytest.importorskip("PySide6")


def test_every_graph_of_the_qt_pdf_fits_one_page(monkeypatch: pytest.MonkeyPatch, qapp: object) -> None:
    import PySide6.QtGui
    from PySide6.QtCore import QByteArray
    from PySide6.QtSvg import QSvgRenderer

    laid_out: list[tuple[Any, str]] = []

    class Recording(PySide6.QtGui.QTextDocument):
        def setHtml(self, html: str) -> None:
            laid_out.append((self, html))
            super().setHtml(html)

    monkeypatch.setattr(PySide6.QtGui, "QTextDocument", Recording)
    html = inspector.report(ZOO / "ts_functions.onnx", format="html").text
    svgs = re.findall(r"<svg\b.*?</svg>", html, re.S)
    assert len(svgs) == 2
    sizes = [QSvgRenderer(QByteArray(s.encode("utf-8"))).defaultSize() for s in svgs]
    inspector.report(ZOO / "ts_functions.onnx", format="pdf").data  # noqa: B018 (printed when asked for)
    ((doc, printed),) = laid_out
    margin = doc.documentMargin()
    width, height = doc.pageSize().width() - 2 * margin, doc.pageSize().height() - 2 * margin
    assert 600 < width < height  # an A4 page at 96 dpi, less its margins
    drawn = re.findall(r'<img src="svg\d+\.png" width="(\d+)" height="(\d+)"/>', printed)
    images = [(int(w), int(h)) for w, h in drawn]
    assert len(images) == len(svgs)
    assert any(s.width() > width for s in sizes) and any(s.height() > height for s in sizes)  # both edges tested
    for (w, h), s in zip(images, sizes, strict=True):
        assert w <= width and h <= height, (w, h, width, height)
        assert abs(w / h - s.width() / s.height()) < 0.01  # scaled, not squeezed


def test_the_qt_pdf_puts_a_changes_node_edits_on_a_line_of_their_own(monkeypatch: pytest.MonkeyPatch,
                                                                     qapp: object) -> None:
    # Qt's rich text knows no <details>: the summary "1 node edits" ran into the change's detail ("-1 (constant
    # INT64[4])1 node edits"); printed, the count is a line of its own. llama_gqa against its unoptimised export
    import PySide6.QtGui

    laid_out: list[Any] = []

    class Recording(PySide6.QtGui.QTextDocument):
        def setHtml(self, html: str) -> None:
            laid_out.append(self)
            super().setHtml(html)

    monkeypatch.setattr(PySide6.QtGui, "QTextDocument", Recording)
    html = inspector.report(ZOO / "llama_gqa.onnx", format="html", compare=ZOO / "llama_gqa_noopt.onnx").text
    assert "<summary>1 node edit</summary>" in html  # (a browser's page keeps them folded)
    inspector.report(ZOO / "llama_gqa.onnx", format="pdf", compare=ZOO / "llama_gqa_noopt.onnx",  # noqa: B018
                     graphs=False).data
    (doc,) = laid_out
    lines = doc.toPlainText().splitlines()
    assert "1 node edit:" in lines and "2 → 1 node: -1 (constant FLOAT[])" in lines  # (as the app reads it)
    assert not any("node edit" in line and not line.endswith(":") for line in lines)
