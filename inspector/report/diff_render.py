"""One entry for every diff format: ``onnx-inspector diff``, the app's compare window and the Python API all
render a diff here."""

from __future__ import annotations

from collections.abc import Iterator

from inspector.core.diff import ModelDiff, diff_dict
from inspector.core.util.jsonsafe import json_chunks

DIFF_FORMATS = ("text", "md", "json", "html")
DIFF_SUFFIXES = {".json": "json", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".txt": "text"}


def render_diff(d: ModelDiff, fmt: str) -> str:
    """The diff as ``text``, ``md``, ``json`` or ``html``."""
    return "".join(diff_chunks(d, fmt))


def diff_chunks(d: ModelDiff, fmt: str) -> Iterator[str]:
    """The diff in one of ``DIFF_FORMATS``, in pieces: JSON is encoded as it is written, so that a diff of a
    large model is never held as one string (on 200k removed nodes that string and its bytes doubled the peak)."""
    if fmt == "json":
        yield from _json_chunks(d)
    elif fmt == "md":
        from inspector.report.diff_markdown import render_markdown

        yield render_markdown(d)
    elif fmt == "html":
        from inspector.report.diff_html import render_html

        yield render_html(d)
    elif fmt == "text":
        from inspector.report.diff_text import diff_text

        yield diff_text(d)
    else:
        raise ValueError(f"unknown diff format {fmt!r}; expected one of {', '.join(DIFF_FORMATS)}")


def _json_chunks(d: ModelDiff) -> Iterator[str]:
    return json_chunks(diff_dict(d))
