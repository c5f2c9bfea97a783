"""Where the generated catalogues (aten schemas, torchlib functions) are found: package data, or the source tree.

An installed package reads ``inspector.resources``; a checkout run without installing reads ``resources/`` beside
``inspector/``. One home for both, so every catalogue is looked up the same way.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

RESOURCE_PACKAGE = "inspector.resources"


def resource_roots() -> list[Traversable]:
    """The places to look, package data first."""
    roots: list[Traversable] = []
    with contextlib.suppress(ImportError, TypeError, ValueError):
        roots.append(importlib.resources.files(RESOURCE_PACKAGE))
    roots.append(Path(__file__).resolve().parents[2] / "resources")
    return roots


def read_resource_lines(file_name: str) -> list[str] | None:
    """The lines of ``file_name`` (or of ``file_name.gz``, decompressed) from the first root with it; None if none."""
    for root in resource_roots():
        for name in (file_name, file_name + ".gz"):
            entry = root / name
            if entry.is_file():
                data = entry.read_bytes()
                if name.endswith(".gz"):
                    data = gzip.decompress(data)
                return data.decode("utf-8").splitlines()
    return None
