"""Where the generated catalogues (aten schemas, torchlib functions) are found: package data, or the source tree.

An installed package reads ``inspector.resources``; a checkout run without installing reads ``resources/`` beside
``inspector/``. One home for both, so every catalogue is looked up the same way.
"""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

RESOURCE_PACKAGE = "inspector.resources"
# ``resources/`` beside the ``inspector`` package of a checkout (this file is inspector/core/aten/resources.py): what a
# script run from a checkout without installing reads (``make evidence`` runs the template generator in .venv-zoo,
# where the project is not installed; one level short, it looked in inspector/resources and found no catalogue)
CHECKOUT_RESOURCES = Path(__file__).resolve().parents[3] / "resources"


def resource_roots() -> list[Traversable]:
    """The places to look, package data first."""
    roots: list[Traversable] = []
    with contextlib.suppress(ImportError, TypeError, ValueError):
        spec = importlib.util.find_spec(RESOURCE_PACKAGE)
        if spec is not None and spec.origin and spec.submodule_search_locations:
            # a folder on disk (every install but a zipped one): read as such, since importing importlib.resources
            # and its readers took 20-55 ms of every command's start-up on this VM
            roots += [Path(p) for p in spec.submodule_search_locations]
        else:
            from importlib.resources import files

            roots.append(files(RESOURCE_PACKAGE))
    roots.append(CHECKOUT_RESOURCES)
    return roots


def read_resource_lines(file_name: str) -> list[str] | None:
    """The lines of ``file_name`` (or of ``file_name.gz``, decompressed) from the first root with it; None if none."""
    text = read_resource_text(file_name)
    return None if text is None else text.splitlines()


def read_resource_text(file_name: str) -> str | None:
    """The text of ``file_name`` (or of ``file_name.gz``, decompressed) from the first root with it; None if none."""
    for root in resource_roots():
        for name in (file_name, file_name + ".gz"):
            entry = root / name
            if entry.is_file():
                data = entry.read_bytes()
                if name.endswith(".gz"):
                    import gzip  # (a shipped catalogue is plain text: zlib and gzip are not start-up)

                    data = gzip.decompress(data)
                return data.decode("utf-8")
    return None
