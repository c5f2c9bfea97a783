"""Parse the FX node text that dynamo exports keep in ``pkg.torch.onnx.fx_node``.

Example: ``%transpose_2 : [num_users=1] = call_function[target=torch.ops.aten.transpose.int](args =
(%gelu, 1, 2), kwargs = {})``. Arguments become Python literals, ``TensorRef`` for ``%names`` and
``Symbol`` for anything else (``torch.float32``, ``device(type='cpu')``). Damaged text degrades to what
could be read; nothing here raises on model input.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

_HEAD = re.compile(
    r"^\s*%(?P<name>[^\s:]+)\s*:\s*(?:\[[^\]]*\]\s*)?=\s*(?P<op>[A-Za-z_]+)\[target=(?P<target>.*?)\]\s*(?=\(|$)",
    re.S,
)
_TARGET_ONLY = re.compile(r"\[target=(?P<target>[^\]]*)\]")
_OPS_PREFIX = "torch.ops."
_NAME = re.compile(r"\s*%([^\s:]+)")


@dataclass(frozen=True, slots=True)
class TensorRef:
    """A reference to another FX node's output (``%gelu``)."""

    name: str

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True, slots=True)
class Symbol:
    """A value printed by FX that is not a Python literal: ``torch.float32``, ``cpu``, ``device(...)``."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class FxNode:
    name: str
    op: str  # "call_function", "placeholder", ...
    target: str  # raw target text, e.g. "torch.ops.aten.transpose.int"
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    complete: bool = True  # False when the arguments could not be fully parsed

    @property
    def aten_target(self) -> str | None:
        """``aten::transpose.int`` (or ``prims::...``); ``None`` for targets that are not torch ops."""
        return op_target(self.target)


def op_target(raw: str) -> str | None:
    """Normalise ``torch.ops.aten.relu.default`` to ``aten::relu``; None for non-op targets."""
    t = raw.strip()
    if t.startswith(_OPS_PREFIX):
        t = t[len(_OPS_PREFIX):]
    elif "::" in t:
        ns, _, rest = t.partition("::")
        t = f"{ns}.{rest}"
    else:
        return None
    parts = t.split(".")
    if len(parts) < 2 or not all(parts):
        return None
    ns, name = parts[0], parts[1]
    overload = ".".join(parts[2:])
    if overload in ("", "default"):
        return f"{ns}::{name}"
    return f"{ns}::{name}.{overload}"


def target_of(text: str) -> str | None:
    """Only the raw target of an FX node text: cheap, used while indexing large models."""
    m = _TARGET_ONLY.search(text)
    return m.group("target").strip() if m else None


def fx_head(text: str) -> tuple[str, str] | None:
    """``(name, raw target)`` of well-formed FX text with one regex match; None otherwise."""
    if not text.startswith("%"):
        return None
    colon = text.find(" : ")
    start = text.find("[target=", colon)
    end = text.find("]", start)
    if colon < 2 or start < 0 or end < 0 or " " in text[1:colon]:
        return None
    return text[1:colon], text[start + 8 : end].strip()


def fx_name_of(text: str) -> str | None:
    m = _NAME.match(text)
    return m.group(1) if m else None


@lru_cache(maxsize=4096)
def parse_fx_node(text: str) -> FxNode | None:
    """Parse one FX node text; None when it is not FX text at all."""
    m = _HEAD.match(text)
    if not m:
        return None
    rest = text[m.end():].strip()
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    complete = True
    if rest:
        try:
            p = _Parser(rest)
            args, kwargs = p.call_arguments()
        except _ParseError:
            complete = False
    return FxNode(m.group("name"), m.group("op"), m.group("target").strip(), args, kwargs, complete)


class _ParseError(Exception):
    pass


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<num>-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+))
      | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<ref>%[A-Za-z0-9_.]+)
      | (?P<name>-?[A-Za-z_][A-Za-z0-9_.]*)
      | (?P<punct>[()\[\]{},:=])
      | (?P<other><[^>]*>|\S)
    )""",
    re.X,
)


class _Parser:
    """A small recursive-descent reader for FX's repr of arguments, with a nesting bound."""

    MAX_DEPTH = 64

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                break
            pos = m.end()
            kind = m.lastgroup
            if kind is None:
                continue
            self.tokens.append((kind, m.group(kind)))
        self.i = 0
        self.depth = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("eof", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok[0] == "eof" or (value is not None and tok[1] != value):
            raise _ParseError(f"expected {value!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def call_arguments(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``(args = (...), kwargs = {...})``."""
        self.take("(")
        args: tuple[Any, ...] = ()
        kwargs: dict[str, Any] = {}
        while self.peek()[1] != ")":
            kind, word = self.take()
            if kind != "name":
                raise _ParseError(word)
            self.take("=")
            value = self.value()
            if word == "args":
                args = tuple(value) if isinstance(value, (tuple, list)) else (value,)
            elif word == "kwargs" and isinstance(value, dict):
                kwargs = value
            if self.peek()[1] == ",":
                self.take(",")
        self.take(")")
        return args, kwargs

    def value(self) -> Any:
        self.depth += 1
        if self.depth > self.MAX_DEPTH:
            raise _ParseError("nested too deeply")
        try:
            return self._value()
        finally:
            self.depth -= 1

    def _value(self) -> Any:
        kind, word = self.take()
        if kind == "num":
            return float(word) if any(c in word for c in ".eE") else int(word)
        if kind == "str":
            return _unquote(word)
        if kind == "ref":
            return TensorRef(word[1:])
        if kind == "punct" and word in "([":
            close = ")" if word == "(" else "]"
            items = self._sequence(close)
            return tuple(items) if word == "(" else items
        if kind == "punct" and word == "{":
            return self._mapping()
        if kind == "name":
            literal = _NAMES.get(word, _MISSING)
            if literal is not _MISSING:
                return literal
            if self.peek()[1] == "(":  # a call such as device(type='cpu') or slice(None, None)
                start = self.i
                self.take("(")
                self._sequence(")", allow_kw=True)
                inner = " ".join(t[1] for t in self.tokens[start:self.i])
                return Symbol(f"{word}{_tidy(inner)}")
            return Symbol(word)
        return Symbol(word)

    def _sequence(self, close: str, allow_kw: bool = False) -> list[Any]:
        items: list[Any] = []
        while self.peek()[1] != close:
            if allow_kw and self.peek()[0] == "name" and self.tokens[self.i + 1:self.i + 2] == [("punct", "=")]:
                self.take()
                self.take("=")
            items.append(self.value())
            if self.peek()[1] == ",":
                self.take(",")
            elif self.peek()[1] != close:
                raise _ParseError(f"expected ',' or {close!r}")
        self.take(close)
        return items

    def _mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while self.peek()[1] != "}":
            kind, key = self.take()
            if kind == "str":
                key = _unquote(key)
            self.take(":")
            out[key] = self.value()
            if self.peek()[1] == ",":
                self.take(",")
            elif self.peek()[1] != "}":
                raise _ParseError("expected ',' or '}'")
        self.take("}")
        return out


_MISSING = object()
_NAMES: dict[str, Any] = {
    "None": None, "True": True, "False": False,
    "inf": math.inf, "-inf": -math.inf, "nan": math.nan,
}


def _unquote(word: str) -> str:
    body = word[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _tidy(text: str) -> str:
    return text.replace("( ", "(").replace(" )", ")").replace(" ,", ",").replace(" = ", "=")
