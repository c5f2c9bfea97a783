"""Model strings made safe to show: the one place that decides how untrusted text reaches a terminal, HTML,
Markdown, SVG or a Qt widget.

Names, doc strings and metadata of a model file are untrusted: they may hold control characters (a terminal
obeys escape sequences), bidi overrides (which make a reader see other text than is there), markup, Markdown
syntax, mentions and URLs. Every writer goes through these functions:

- ``printable``: every character ``str.isprintable`` rejects (controls, bidi overrides, other format characters,
  lone surrogates) becomes a visible escape ``\\xNN`` / ``\\uNNNN``; tabs stay, newlines stay when asked to.
- ``one_line``: ``printable`` with newlines shown as ``⏎``, cut to a width.
- ``html_text``: HTML text or attribute value (``& < > " ' =`` as entities, so no tag and no attribute-like
  text survive verbatim); ``://`` becomes ``&#58;//``, so the page holds no URL.
- ``md_text``: inline Markdown (GitHub flavour) that stays inert: every character Markdown or inline HTML could
  read as syntax becomes an entity (no markup, links, images, code spans or table breaks), and ``unlink`` breaks
  what GitHub links in plain text: entities do not help there (GitHub decodes ``&#64;`` back to ``@`` before it
  looks for mentions, and cmark-gfm's autolink extension sees decoded text), so a WORD JOINER (U+2060, invisible)
  goes after every ``@`` (mentions, e-mail, ``mailto:``/``xmpp:``), inside ``://`` and after ``www``.
- ``md_html``: text for an HTML block inside Markdown (``<summary>``): ``html_text`` plus ``unlink``.
- ``xml_text`` / ``xml_attr``: SVG text and attributes (characters XML 1.0 cannot carry become U+FFFD).
- ``github_data`` / ``github_property``: the message and a property (``file=``, ``title=``) of a GitHub
  Actions workflow command (``::error file=F,title=T::MESSAGE``), escaped as the Actions runner decodes them
  (``%`` ``\r`` ``\n``, and in properties also ``:`` and ``,``), so model text never ends or adds a command.
"""

from __future__ import annotations

import functools
import re

__all__ = ["github_data", "github_property", "html_text", "md_html", "md_text", "one_line", "printable", "unlink",
           "xml_attr", "xml_text"]

WORD_JOINER = "\u2060"


def _shown(value: object) -> str:
    """``value`` as text: a model string that is not valid UTF-8 (protobuf hands it back as ``bytes``; models above
    ``EAGER_TEXT_CHECK_NODES`` nodes are not repaired up front) by its decoding, U+FFFD for each bad byte, never
    as ``b'...'``."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every non-printable character (controls, bidi overrides, lone surrogates) made a visible
    escape; tabs are kept, and newlines when ``keep_newlines``."""
    if text.isprintable():
        return text
    kept = text.replace("\t", "").replace("\n", "") if keep_newlines else text.replace("\t", "")
    if kept.isprintable():  # multi-line text (a tooltip) is not printable, yet has nothing to escape
        return text
    return "".join(c if c.isprintable() or c == "\t" or (keep_newlines and c == "\n")
                   else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}" for c in text)


def one_line(text: object, width: int = 0) -> str:
    """``text`` on one printable line (newlines shown as ⏎, tabs as spaces), cut to ``width`` characters when
    ``width`` > 0."""
    s = printable(_shown(text), keep_newlines=True).replace("\n", " ⏎ ").replace("\t", " ")
    if width and len(s) > width:
        s = s[: width - 1] + "…"
    return s


def html_text(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` as HTML text or attribute value: nothing in it is ever markup or a URL."""
    return _html_escape(printable(_shown(text), keep_newlines=keep_newlines)) \
        .replace("=", "&#61;").replace("://", "&#58;//")


# What html.escape(text, quote=True) does, written out: importing html builds its table of 2,231 named entities
# (html.entities), 8.4 million instructions of every command's start-up (callgrind), for five replacements
def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;") \
        .replace("'", "&#x27;")


# Every character Markdown (GitHub flavour) could read as syntax is escaped: ASCII punctuation by a backslash (any
# may be, CommonMark 0.31 section 2.4; in a GFM table ``\|`` too), so that the file reads as it renders
# (``gpt\_neox.onnx``, ``\[0, 2, 1, 3\]``; numeric entities made them ``gpt&#95;neox.onnx``, ``&#91;0, 2, 1, 3&#93;``),
# and what inline HTML could read by an entity. At a line's start, what could start a block (``- `` a list item, ``=``
# or ``-`` alone a heading's underline, ``1.`` an ordered list) is escaped too (``_block_start``); inside a line (a
# table cell) ``-1`` stays as it is.
_MD_ESCAPES = str.maketrans({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "`": "\\`", "\\": "\\\\", "*": "\\*",
    "_": "\\_", "[": "\\[", "]": "\\]", "#": "\\#", "~": "\\~", "!": "\\!",
    "$": "\\$", "{": "\\{", "}": "\\}", "\t": " ",
})


def md_text(text: object, width: int = 0, *, line_start: bool = False) -> str:
    """``text`` as inert inline Markdown (one line, cut to ``width`` when > 0): shown literally, never markup,
    link, autolink, code span, table break or mention; ``line_start``: where it starts a line (a quoted line, a list
    item's text), never a block either."""
    s = printable(_shown(text))
    if width and len(s) > width:
        s = s[: width - 1] + "…"
    s = s.translate(_MD_ESCAPES)
    return unlink(_block_start(s) if line_start else s)


def _block_start(text: str) -> str:
    """``text`` with what could start a block at a line's start escaped (a Markdown writer may put it there)."""
    if text[:1] in ("-", "+", "="):
        return "\\" + text
    if text[:1].isdigit():
        digits = len(text) - len(text.lstrip("0123456789"))
        if digits <= 9 and text[digits:digits + 1] in (".", ")"):
            return text[:digits] + "\\" + text[digits:]
    return text


def unlink(text: str) -> str:
    """``text`` with a WORD JOINER after every ``@``, ``:`` of ``://`` and ``www`` before a dot, so that neither
    cmark-gfm's autolinks (``http://``, ``www.``, e-mail) nor GitHub's ``@mentions`` find anything to link."""
    return _linkable().sub(lambda m: m.group(0) + WORD_JOINER, text)


def md_html(text: object, width: int = 0) -> str:
    """Model text for an HTML block inside Markdown (``<summary>``), on one line, cut to ``width`` when > 0."""
    return html_text(unlink(one_line(text, width)))


@functools.cache
def _linkable() -> re.Pattern[str]:
    """What a Markdown renderer would turn into a link, compiled on first use (the Markdown writers) rather than at
    import (start-up)."""
    return re.compile(r"@|:(?=//)|(?i:www)(?=\.)")


@functools.cache
def _not_xml() -> re.Pattern[str]:
    """Compiled on first use (the SVG writers): its character class of all surrogates is 4.3 million instructions
    to compile (callgrind), paid by every command's start-up at import."""
    return re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_clean(text: str) -> str:
    """Characters XML 1.0 cannot carry become U+FFFD."""
    return _not_xml().sub("\ufffd", text)


def xml_text(text: str) -> str:
    """``text`` as XML (SVG) character data."""
    return _xml_escape(_xml_clean(text))


def xml_attr(text: str) -> str:
    """``text`` as a quoted XML (SVG) attribute value, quotes included."""
    data = _xml_escape(_xml_clean(text)).replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    if '"' not in data:
        return f'"{data}"'
    if "'" not in data:
        return f"'{data}'"
    return '"{}"'.format(data.replace('"', "&quot;"))


# What xml.sax.saxutils.escape and quoteattr do, written out: importing saxutils imports urllib.request, http.client
# and email (20-25 ms, a fifth of a small model's whole summary; python -X importtime)
def _xml_escape(data: str) -> str:
    return data.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")


def github_data(text: object) -> str:
    """``text`` as the message of a GitHub Actions workflow command: printable, ``%``, CR and LF escaped."""
    return printable(_shown(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def github_property(text: object) -> str:
    """``text`` as a property value of a GitHub Actions workflow command: ``github_data`` plus ``:`` and ``,``."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")
