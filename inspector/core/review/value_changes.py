"""One value of a reviewed body that changed since its review, made where ``check`` finds one.

Apart from ``check`` for start-up: a check that finds no changed value (most runs of a CI gate) does not make this
class (about 4 million instructions a dataclass, callgrind, ``benchmarks/bench_startup.py --instructions``). The
values come from the model and the sidecar (untrusted) and are escaped where they are shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ValueChange:
    """One value of a changed body: where it sits, the value recorded by the earlier review, the value now."""

    where: str
    old: Any
    new: Any
