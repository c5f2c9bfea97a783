"""Values as JSON can carry them exactly, for every JSON this package writes (diffs, reports)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["json_safe"]


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
