"""Safe text for Qt: model strings are untrusted, and Qt renders tooltips that look like markup as rich text.
The escaping itself is ``inspector.core.util.textsafe.html_text``, the one used by every HTML writer."""

from __future__ import annotations

from typing import Any

from inspector.core.util.textsafe import html_text


def esc(value: Any) -> str:
    """``value`` as Qt rich text: shown literally (newlines kept for ``<pre>`` blocks)."""
    return html_text(value, keep_newlines=True)


def tooltip(value: Any) -> str:
    """A tooltip that always shows ``value`` literally (escaped inside explicit rich text)."""
    return f"<p style='white-space:pre'>{esc(value)}</p>"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 node``, ``2 nodes``, ``1,204 boxes``: a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"
