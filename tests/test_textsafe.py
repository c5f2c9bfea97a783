"""The one escaper's printable(): multi-line text takes a fast path (tooltips of graph boxes are multi-line, and
a character-by-character pass over each was most of the GUI thread's work when a graph was drawn); what it
escapes must not change."""

from __future__ import annotations

import pytest

from inspector.core.util.textsafe import html_text, printable

HOSTILE = ["a\nb\x1bc", "line1\nline2\u202eevil\u202c", "tab\there\nnext", "\n\n", "\t", "x\x00\ny", "\r\n",
           "ok\nok", "\ud800\nlone", "plain", "", "caf\u00e9\n\u2060joined", "bell\x07\n"]


def _by_character(text: str, keep_newlines: bool) -> str:
    return "".join(c if c.isprintable() or c == "\t" or (keep_newlines and c == "\n")
                   else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}" for c in text)


@pytest.mark.parametrize("keep_newlines", [True, False])
@pytest.mark.parametrize("text", HOSTILE)
def test_printable_escapes_exactly_what_each_character_needs(text: str, keep_newlines: bool) -> None:
    assert printable(text, keep_newlines=keep_newlines) == _by_character(text, keep_newlines)


def test_multi_line_text_keeps_its_lines_and_loses_its_controls() -> None:
    assert printable("a\nb\x1bc", keep_newlines=True) == "a\nb\\x1bc"
    assert printable("a\nb", keep_newlines=False) == "a\\x0ab"
    assert printable("op\n\tdetail", keep_newlines=True) == "op\n\tdetail"
    assert html_text("x\n\u202e<b>", keep_newlines=True) == "x\n\\u202e&lt;b&gt;"
