"""The torchlib (onnxscript) implementation behind an aten target, when torch and onnxscript are installed.

Importing torchlib takes seconds, so callers run this off the GUI thread; nothing here is needed otherwise.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TorchlibFunction:
    name: str
    trace_only: bool
    source: str


def torchlib_functions(target: str) -> list[TorchlibFunction] | None:
    """Implementations registered for ``aten::op.overload``; None when onnxscript's torchlib is unavailable."""
    try:
        from onnxscript.function_libs.torch_lib import (
            ops,  # noqa: F401  (registers the functions)
            registration,
        )
    except Exception:
        return None
    registry = getattr(getattr(registration, "default_registry", None), "_registry", None)
    if not isinstance(registry, dict):
        return None
    names = [target] if "." in target.split("::")[-1] else [target, f"{target}.default"]
    out: list[TorchlibFunction] = []
    for name in names:
        overloaded = registry.get(name)
        for fn in getattr(overloaded, "overloads", ()) or ():
            func = getattr(fn, "func", None) or getattr(fn, "function", None)
            try:
                source = inspect.getsource(func) if func is not None else ""
            except (OSError, TypeError):
                source = ""
            traced = type(fn).__name__ == "TracedOnnxFunction"
            out.append(TorchlibFunction(getattr(fn, "name", name), traced, source))
    return out
