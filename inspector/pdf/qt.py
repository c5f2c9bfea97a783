"""The report's print HTML laid out by ``QTextDocument`` and printed by ``QPdfWriter`` (QtGui only, no widgets).

The HTML comes from ``inspector.report`` (``render_text(report, "pdf")``), escaped there like the HTML report, so no
model text reaches Qt's rich-text parser as markup. QTextDocument does not draw inline SVG, so each ``<svg>``
(from ``to_svg``, model strings XML-escaped) is rendered to an image resource first. Every line wraps at the page
edge (``white-space: pre-wrap`` in the print CSS; before it, the SDPA signature was cut at ``attn_mask=Non``).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from inspector.core.util.errors import InspectorError
from inspector.core.util.fileio import write_atomic

if TYPE_CHECKING:
    from PySide6.QtGui import QTextDocument

_SVG = re.compile(r"<svg\b.*?</svg>", re.S | re.I)


def _application() -> object:
    """A QGuiApplication for painting; headless when there is no display."""
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance()
    if app is None:
        if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QGuiApplication(sys.argv[:1])
    return app


def require_qt() -> None:
    """A one-line ``InspectorError`` when PySide6 (Qt's printing) is missing, before any work is done."""
    try:
        import PySide6.QtGui  # noqa: F401
    except ImportError as e:
        raise InspectorError(f"PDF reports need PySide6 (the 'gui' extra): {e.name or e}; use --format html and "
                             "print it from a browser") from None


def html_to_pdf(html: str, path: Path) -> None:
    """Write ``html`` as a paginated A4 PDF to ``path`` (atomically, with ``fileio.write_atomic``)."""
    write_atomic(path, html_to_pdf_bytes(html), make_parents=True)


def html_to_pdf_bytes(html: str) -> bytes:
    """``html`` as a paginated A4 PDF."""
    require_qt()
    _app = _application()
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QSizeF, QUrl
    from PySide6.QtGui import QImage, QPageLayout, QPageSize, QPainter, QPdfWriter, QTextDocument
    from PySide6.QtSvg import QSvgRenderer

    doc = QTextDocument()
    images: list[tuple[str, QImage]] = []

    def replace(match: re.Match[str]) -> str:
        renderer = QSvgRenderer(QByteArray(match.group(0).encode("utf-8")))
        if not renderer.isValid():
            return "<p><i>(graph could not be drawn)</i></p>"
        size = renderer.defaultSize()
        # inside one page: A4 less its 15 mm margins and the document's 4 px margin is 671 x 1000 px at 96 dpi (at
        # 700 px wide whisper's graphs were cut at the right edge; ts_functions' 1140 px tall one lost its middle)
        scale = min(1.0, 670 / max(size.width(), 1), 960 / max(size.height(), 1))
        w, h = max(int(size.width() * scale), 1), max(int(size.height() * scale), 1)
        image = QImage(w * 2, h * 2, QImage.Format.Format_ARGB32)
        image.fill(0xFFFFFFFF)
        painter = QPainter(image)
        renderer.render(painter)
        painter.end()
        name = f"svg{len(images)}.png"
        images.append((name, image))
        return f'<img src="{name}" width="{w}" height="{h}"/>'

    body = _SVG.sub(replace, html)
    for name, image in images:
        doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), image)
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter)
    writer.setResolution(96)
    writer.setTitle("ONNX Inspector report")
    doc.setHtml(body)
    doc.setPageSize(QSizeF(writer.width(), writer.height()))
    keep_headings_with_next(doc)
    doc.print_(writer)
    del writer  # finishes the document
    data = bytes(buffer.data().data())
    buffer.close()
    if not data:
        raise InspectorError("cannot write the PDF: Qt made an empty one")
    return data


# A heading ending this close to its page's foot starts the next page: the room of three lines of the print CSS's 9 pt
# text at 96 dpi. Qt's rich text reads no ``break-after: avoid``: 5 of gpt2's 18 pages ended on a heading whose table
# or body began the page after (its aten::embedding family's title alone at page 3's foot).
KEEP_WITH_NEXT = 48.0
# headings moved at most: each move lays out the rest of the document again (gpt2's 18 pages: 0.036 s for all of it)
MAX_MOVES = 100


def keep_headings_with_next(doc: QTextDocument) -> int:
    """Give each heading of ``doc`` (laid out on its pages) that would end within ``KEEP_WITH_NEXT`` of a page's foot a
    page break before it; how many it moved. One at a time from the top, the document laid out again from the moved
    heading on each time: a move shifts what follows it, and may bring a later heading to a foot or take it from one
    (moved all at once, gpt2's 18 pages became 19 and llama_gqa_noopt's 37 became 43, with breaks a move before had
    made needless). Qt lays out again only the block whose format changed: the blocks after it kept their places
    until the next full layout (decisions taken on them moved other headings than these, and changed in place
    without it, gpt2's 18 pages were printed as 13 with text lost)."""
    from PySide6.QtGui import QTextCursor, QTextFormat

    layout, height = doc.documentLayout(), doc.pageSize().height()
    moved, block = 0, doc.begin()
    while block.isValid() and moved < MAX_MOVES:
        if block.blockFormat().headingLevel() and block.next().isValid():
            rect = layout.blockBoundingRect(block)
            page = int(rect.top() // height)
            if rect.top() - page * height > KEEP_WITH_NEXT and (page + 1) * height - rect.bottom() < KEEP_WITH_NEXT:
                fmt = block.blockFormat()
                fmt.setPageBreakPolicy(QTextFormat.PageBreakFlag.PageBreak_AlwaysBefore)
                QTextCursor(block).setBlockFormat(fmt)
                at = block.position()
                layout.documentChanged(at, 0, doc.characterCount() - at)  # (the rest of the document, again)
                moved += 1
        block = block.next()
    return moved


def write_report(text: str, fmt: str, path: Path) -> None:
    """Write rendered report text: printed by Qt for ``pdf`` (``text`` is then HTML), atomically otherwise."""
    if fmt == "pdf":
        html_to_pdf(text, path)
    else:
        write_atomic(path, text.encode("utf-8"))
