"""Values as JSON can carry them exactly, for every JSON this package writes (summaries, diffs, reports, checks),
and the one way that JSON becomes text: ``json_text`` / ``json_chunks``.

Threat: model strings are untrusted, and Python strings read from a model (an fx text's ``'\\ud800'``) or from a
file name (bytes that are not UTF-8 arrive as lone surrogates) may hold lone surrogates, which UTF-8 cannot carry:
``report --format json`` died with ``UnicodeEncodeError``, and a diff's JSON on stdout was not valid UTF-8. Each
lone surrogate is written as the visible text ``\\udXXX`` (in JSON: an escaped backslash and five characters), as
the terminal and HTML writers show it (``textsafe.printable``), so every JSON output is valid UTF-8.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["json_chunks", "json_safe", "json_text"]

_CHUNK = 1 << 16  # characters per piece of a streamed document


@functools.cache
def _lone_surrogate() -> re.Pattern[str]:
    """Compiled on first use, for text that is not ASCII: 2.3 million instructions at import otherwise (callgrind)."""
    return re.compile("[\ud800-\udfff]")


def _inert(text: str) -> str:
    """JSON text with each (raw) lone surrogate written as an escaped backslash and ``udXXX``."""
    if text.isascii():
        return text
    return _lone_surrogate().sub(lambda m: f"\\\\u{ord(m.group()):04x}", text)


def json_text(value: Any, indent: int | None = 2) -> str:
    """``value`` as JSON text (UTF-8 safe, no NaN), ending in a newline."""
    import json  # (here, as every importer of json in a command's process: 5.6 million instructions of start-up)

    return _inert(json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)) + "\n"


def json_chunks(value: Any, indent: int | None = 2) -> Iterator[str]:
    """``json_text(value)`` in pieces of about 64k characters, encoded as it is written (a 200k-node diff is never
    one string)."""
    import json

    encoder = json.JSONEncoder(indent=indent, ensure_ascii=False, allow_nan=False)
    buffered: list[str] = []
    size = 0
    for piece in encoder.iterencode(value):
        buffered.append(piece)
        size += len(piece)
        if size > _CHUNK:
            yield _inert("".join(buffered))
            buffered, size = [], 0
    yield _inert("".join(buffered)) + "\n"


def json_safe(v: Any, depth: int = 0) -> Any:
    """``v`` as JSON can carry it: non-finite floats as text, tuples as lists, numpy scalars as numbers,
    dataclasses as objects, other objects as their text; nesting is cut at 64 levels."""
    if depth > 64:
        return "…"
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, (list, tuple)):
        return [json_safe(x, depth + 1) for x in v]
    if isinstance(v, Mapping):
        return {str(k): json_safe(x, depth + 1) for k, x in v.items()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return json_safe(dataclasses.asdict(v), depth + 1)
    item = getattr(v, "item", None)  # numpy scalars
    if callable(item):
        try:
            return json_safe(item(), depth + 1)
        except Exception:
            pass
    return str(v)
