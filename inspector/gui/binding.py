"""Refuse a Qt binding that would crash the app later: checked once when the app starts.

The threat: PySide6 6.12.0 on Python 3.11 returns ``None`` from every void Qt method (``setPen``, ``setPos``,
``setToolTip``...) without taking a reference to it. Before Python 3.12 ``None`` is reference counted like any
object, so each call takes one reference away; drawing a 300-box graph makes about 5,000 such calls, and after a few
dozen graphs the count reaches zero and the interpreter aborts ("Fatal Python error: none_dealloc") in the middle of
a review. Found by counting ``sys.getrefcount(None)`` around a drawn graph. pyproject.toml keeps PySide6 below 6.12;
this check turns a binding installed some other way into one clear line at start (exit code 2) instead of a crash
whose cause nobody could see. From Python 3.12 on ``None`` is immortal and the check has nothing to find.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from PySide6 import __version__ as PYSIDE_VERSION
from PySide6.QtCore import QPointF

from inspector.core.util.errors import InspectorError

PROBE_CALLS = 200


def none_references_lost(call: Callable[[], object], calls: int = PROBE_CALLS) -> int:
    """How many references to ``None`` ``calls`` calls of ``call`` take away (0 for a sound binding)."""
    if sys.version_info >= (3, 12):
        return 0  # None is immortal: its count never moves
    before = sys.getrefcount(None)
    for _ in range(calls):
        call()
    return max(0, before - sys.getrefcount(None))


def _void_qt_call() -> Callable[[], object]:
    point = QPointF()
    return lambda: point.setX(1.0)


def check_binding(call: Callable[[], object] | None = None) -> None:
    """Raise ``InspectorError`` when void Qt calls take references to ``None`` away (see the module docstring)."""
    lost = none_references_lost(call or _void_qt_call())
    if lost >= PROBE_CALLS // 2:
        raise InspectorError(
            f"PySide6 {PYSIDE_VERSION} on Python {sys.version_info.major}.{sys.version_info.minor} loses a "
            "reference to None on every Qt call, which crashes the app after a few graphs; install "
            "PySide6-Essentials<6.12 (make run does) or use Python 3.12 or later")
