"""Human-readable quantities shared by the text, Markdown and HTML outputs and the app."""

from __future__ import annotations


def human_size(n: int) -> str:
    """``118644`` -> ``115.9 KiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 node``, ``2 nodes``, ``1,204 boxes``: a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"


def arrowed(text: str) -> str:
    """A change's text as a page or the app shows it: ``2 → 6 nodes``, ``1e-05 → 1e-06``. The command line's text and
    the JSON keep ``->``, plain ASCII to grep and compare."""
    return text.replace(" -> ", " → ")
