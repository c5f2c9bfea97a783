"""Markdown as GitHub renders it (cmark-gfm, GitHub's own parser, with its autolink, table, strikethrough and tagfilter
extensions): what a Markdown test asserts on, rather than on the escapes that make it so."""

from __future__ import annotations

import html
import re

import pytest

cmarkgfm = pytest.importorskip("cmarkgfm")
from cmarkgfm.cmark import Options  # noqa: E402


def gfm(text: str) -> str:
    """HTML as GitHub renders a comment, before its sanitiser (raw HTML kept, so that nothing hides)."""
    return cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)


def tags(text: str) -> set[str]:
    """The HTML tags ``text`` renders to."""
    return {t.lower() for t in re.findall(r"<\s*/?\s*([A-Za-z][A-Za-z0-9-]*)", gfm(text))}


def shown(text: str) -> str:
    """What a reader sees of ``text`` rendered: its HTML's text, tags as spaces."""
    return html.unescape(re.sub(r"<[^>]*>", " ", gfm(text)))
