"""Which torchlib (onnxscript) function lowers each aten overload, from a catalogue shipped as package data.

``resources/torchlib_functions.txt`` is generated from onnxscript's torchlib registry by ``scripts/gen_torchlib.py``
(run by hand with torch and onnxscript installed); reading it needs neither. ``torchlib_source.py`` is the other half:
the live source of a function, when onnxscript happens to be installed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from inspector.core.aten.resources import read_resource_text

CATALOGUE_FILE = "torchlib_functions.txt"


@dataclass(frozen=True, slots=True)
class TorchlibEntry:
    """One torchlib function registered for an aten overload."""

    target: str  # "aten::transpose.int"
    function: str  # "aten_transpose"
    trace_only: bool  # runs as Python at export time: the values it computes are baked into the ONNX
    complex: bool  # the variant for complex inputs
    source: str  # "function_libs/torch_lib/ops/core.py:10114", relative to the onnxscript package

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "trace_only": self.trace_only, "source": self.source}

    @property
    def label(self) -> str:
        """``torchlib aten_transpose, trace_only``."""
        return f"torchlib {self.function}, {'trace_only' if self.trace_only else 'script'}"


@functools.cache
def _text() -> str:
    """The catalogue file's text with a line break before its first line; "" when the file is missing."""
    text = read_resource_text(CATALOGUE_FILE)
    return "" if text is None else "\n" + text


def _parse(lines: list[str]) -> tuple[str, dict[str, tuple[TorchlibEntry, ...]]]:
    version = ""
    out: dict[str, list[TorchlibEntry]] = {}
    for line in lines:
        if line.startswith("#"):
            version = version or line[1:].split(":", 1)[0].strip()
            continue
        parts = line.split("\t")
        if len(parts) != 5:
            continue
        target, function, kind, variant, source = parts
        out.setdefault(target, []).append(TorchlibEntry(target, function, kind == "trace_only", variant == "complex",
                                                        source))
    return version, {t: tuple(sorted(es, key=lambda e: e.complex)) for t, es in out.items()}


@functools.lru_cache(maxsize=1024)
def torchlib_for(target: str) -> tuple[TorchlibEntry, ...]:
    """The functions torchlib registers for ``aten::op.overload`` (the real-valued one first); () if none.

    Read from the lines that start with the target, found in the file's text on its first look-up: a command asks
    for a few of the 557 lines, and making an entry of each was 12 of the 355 million instructions of
    ``onnx-inspector summary`` on a 15-node export (callgrind). Read as ``_parse`` reads the whole file (tested)."""
    text, lines = _text(), []
    start = text.find(f"\n{target}\t")
    while start >= 0:
        end = text.find("\n", start + 1)
        lines.append(text[start + 1 : end if end >= 0 else len(text)])
        start = text.find(f"\n{target}\t", start + 1)
    return _parse(lines)[1].get(target, ())


def torchlib_version() -> str:
    """The onnxscript version the catalogue was generated from (``onnxscript 0.7.2``), or ""."""
    return _parse([line for line in _text().splitlines() if line.startswith("#")])[0]


def torchlib_json(target: str) -> dict[str, Any] | None:
    """For the summary JSON of an aten overload: the real-valued lowering, or None when torchlib has none."""
    entries = [e for e in torchlib_for(target) if not e.complex]
    return entries[0].to_json() if entries else None
