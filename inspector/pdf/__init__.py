"""PDF reports, printed by Qt from the report's print HTML (``render_text(report, "pdf")``), outside the GUI package.

Qt, because the app already depends on it and it lays out HTML without a browser: ``QTextDocument`` paginates the
report and ``QPdfWriter`` writes it, both of QtGui (a ``QGuiApplication``, headless when there is no display; no
widgets). The fonts are the system's (fontconfig), so model text in any script prints, where a pure-Python PDF
library would need font files shipped for it. ``inspector.report`` stays Qt-free: it makes the print HTML from the
same view model and templates as the HTML report, and this package only prints it. PySide6 is imported when a PDF is
written, so importing this package costs nothing; without PySide6 that is a one-line error.
"""

from __future__ import annotations

from inspector.pdf.qt import html_to_pdf, html_to_pdf_bytes, require_qt, write_report

__all__ = ["html_to_pdf", "html_to_pdf_bytes", "require_qt", "write_report"]
