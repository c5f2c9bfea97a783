"""PDF reports with Qt (no browser): the HTML report laid out by QTextDocument and printed by QPdfWriter.

QTextDocument does not draw inline SVG, so each ``<svg>`` is rendered to an image resource first.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

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


def html_to_pdf(html: str, path: Path) -> None:
    """Write ``html`` as a paginated A4 PDF to ``path`` (atomically: temp file, then rename)."""
    _app = _application()
    from PySide6.QtCore import QByteArray, QMarginsF, QSizeF, QUrl
    from PySide6.QtGui import QImage, QPageLayout, QPageSize, QPainter, QPdfWriter, QTextDocument
    from PySide6.QtSvg import QSvgRenderer

    doc = QTextDocument()
    images: list[tuple[str, QImage]] = []

    def replace(match: re.Match[str]) -> str:
        renderer = QSvgRenderer(QByteArray(match.group(0).encode("utf-8")))
        if not renderer.isValid():
            return "<p><i>(graph could not be drawn)</i></p>"
        size = renderer.defaultSize()
        scale = min(1.0, 700 / max(size.width(), 1))
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
    doc.setHtml(body)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        writer = QPdfWriter(tmp)
        writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
        writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter)
        writer.setResolution(96)
        writer.setTitle("ONNX Inspector report")
        doc.setPageSize(QSizeF(writer.width(), writer.height()))
        doc.print_(writer)
        del writer  # flushes the file
        if os.path.getsize(tmp) == 0:
            raise OSError("Qt wrote an empty PDF")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
