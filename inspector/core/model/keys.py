"""Function keys and scopes: the names every other module uses to refer to functions and graphs."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple, TypeAlias


class FunctionKey(NamedTuple):
    """``(domain, name, overload)``: how ONNX IR v10 identifies a local function."""

    domain: str
    name: str
    overload: str = ""

    def __str__(self) -> str:
        domain, name, overload = (_text(x) for x in self)
        base = f"{domain}.{name}" if domain else name
        return f"{base}:{overload}" if overload else base

    @property
    def family(self) -> tuple[str, str]:
        return (self.domain, self.name)


class MainGraph(NamedTuple):
    """The model's top-level graph, as a scope."""

    name: str = "main"

    def __str__(self) -> str:
        return self.name


MAIN = MainGraph()
GraphScope: TypeAlias = MainGraph | FunctionKey
"""A graph that holds nodes: the main graph or a local function's body (an aten call's ``scope``)."""


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@functools.cache
def _ident() -> re.Pattern[str]:
    """An identifier as the ONNX text parser reads an overload; compiled on first use (start-up)."""
    return re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_identifier(text: str) -> bool:
    return bool(_ident().match(text))
