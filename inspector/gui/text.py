"""Safe text for Qt: model strings are untrusted, and Qt renders tooltips that look like markup as rich text."""

from __future__ import annotations

import html
from typing import Any


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def tooltip(value: Any) -> str:
    """A tooltip that always shows ``value`` literally (escaped inside explicit rich text)."""
    return f"<p style='white-space:pre'>{esc(value)}</p>"
