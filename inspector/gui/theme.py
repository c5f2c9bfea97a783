"""Follow the system's light or dark colour scheme (or ONNX_INSPECTOR_THEME=light|dark)."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from inspector.gui.text import Rich, tag

# a review's status as the review panel, its list and the Functions tree's Review column draw it
STATUS_COLOURS = {"ok": "#6aa84f", "suspicious": "#e69138", "wrong": "#cc0000", "unreviewed": "#999999",
                  "changed": "#8e44ad"}  # (changed since reviewed on an earlier body: ``reviewing.carried_reviews``)


def status_colour(status: str) -> str:
    return STATUS_COLOURS.get(status, STATUS_COLOURS["unreviewed"])


def status_brush(status: str) -> QBrush:
    return QBrush(QColor(status_colour(status)))


def status_text(status: str) -> Rich:
    """A review's status as rich text, in its colour (the Signature tab's values, a comparison's reviews)."""
    return tag("span", status, style=f"color:{status_colour(status)}")


def wants_dark(app: QGuiApplication) -> bool:
    choice = os.environ.get("ONNX_INSPECTOR_THEME", "").lower()
    if choice in ("dark", "light"):
        return choice == "dark"
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def dark_palette() -> QPalette:
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: "#2b2b2b", QPalette.ColorRole.WindowText: "#e6e6e6",
        QPalette.ColorRole.Base: "#1e1e1e", QPalette.ColorRole.AlternateBase: "#2b2b2b",
        QPalette.ColorRole.ToolTipBase: "#3a3a3a", QPalette.ColorRole.ToolTipText: "#f0f0f0",
        QPalette.ColorRole.Text: "#e6e6e6", QPalette.ColorRole.Button: "#353535",
        QPalette.ColorRole.ButtonText: "#e6e6e6", QPalette.ColorRole.BrightText: "#ff6b6b",
        QPalette.ColorRole.Link: "#7fb2ff", QPalette.ColorRole.Highlight: "#3d6fb4",
        QPalette.ColorRole.HighlightedText: "#ffffff", QPalette.ColorRole.PlaceholderText: "#8c8c8c",
    }
    for role, colour in roles.items():
        p.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#7a7a7a"))
    return p


def apply_theme(app: QApplication) -> None:
    """Fusion with the system's palette, or a dark palette when the system (or the user) asks for dark."""
    app.setStyle("Fusion")
    app.setPalette(dark_palette() if wants_dark(app) else app.style().standardPalette())
    hints = app.styleHints()
    if hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(
            lambda _s: app.setPalette(dark_palette() if wants_dark(app) else app.style().standardPalette()))
