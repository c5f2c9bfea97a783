"""Parse the FX node text that dynamo exports keep in ``pkg.torch.onnx.fx_node``.

Example: ``%transpose_2 : [num_users=1] = call_function[target=torch.ops.aten.transpose.int](args =
(%gelu, 1, 2), kwargs = {})``. Arguments become Python literals, ``TensorRef`` for ``%names`` and
``Symbol`` for anything else (``torch.float32``, ``device(type='cpu')``). Damaged text degrades to what
could be read; nothing here raises on model input.
"""

from __future__ import annotations

# ``_ast``: the node classes, and the flag ``ast.parse`` compiles with (``_parse`` below is its whole body for a
# string); the ``ast`` module itself (its unparser's classes and enums) is 14 million instructions of a command's
# start-up (callgrind) and is imported only where a source segment is cut
import _ast
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

_HEAD = re.compile(
    r"^\s*%(?P<name>[^\s:]+)\s*:\s*(?:\[[^\]]*\]\s*)?=\s*(?P<op>[A-Za-z_]+)\[target=(?P<target>.*?)\]\s*(?=\(|$)",
    re.S,
)
_OPS_PREFIX = "torch.ops."


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
    """One ``pkg.torch.onnx.fx_node`` text, read: the FX node's name, op, target and arguments."""

    name: str
    op: str  # "call_function", "placeholder", ...
    target: str  # raw target text, e.g. "torch.ops.aten.transpose.int"
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    complete: bool = True  # False when the arguments could not be fully parsed
    unread: tuple[str, ...] = ()  # the pieces of the argument text that could not be read (for the finding)

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
    """Only the raw target of an FX node text: cheap, used while indexing large models.

    Two ``str.find`` calls, linear in the text: a regex search for ``[target=…]`` restarts at every
    ``[target=`` and rescans to the end when no ``]`` follows, which is quadratic on hostile text (a 320 KB
    value took 40 s). Only the first ``[target=`` matters: if no ``]`` follows it, none follows a later one.
    """
    start = text.find("[target=")
    if start < 0:
        return None
    start += len("[target=")
    end = text.find("]", start)
    return text[start:end].strip() if end >= 0 else None


def fx_head(text: str) -> tuple[str, str] | None:
    """``(name, raw target)`` of well-formed FX text (the name between ``%`` and the first `` : `` before the first
    ``[target=``, the target up to the next ``]``); None otherwise. Three ``str.find``, no copy of the text's parts:
    the 79,670 texts of a 100k-node export in 42 ms against 50 ms for a ``partition`` of each (CPU, best of 5)."""
    start = text.find("[target=")
    colon = text.find(" : ", 0, start) if start > 0 else -1
    end = text.find("]", start + 8) if colon >= 2 else -1
    if end < 0 or text[0] != "%":
        return None
    name = text[1:colon]
    return (name, text[start + 8:end].strip()) if " " not in name else None


@lru_cache(maxsize=1)
def _name() -> re.Pattern[str]:
    """The FX node's name at the head of a text; compiled on first use, for a text that is not well-formed FX
    (start-up)."""
    return re.compile(r"\s*%([^\s:]+)")


def fx_name_of(text: str) -> str | None:
    m = _name().match(text)
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
    unread: tuple[str, ...] = ()
    if rest:
        try:
            args, kwargs = _arguments_via_pattern(rest)
        except (SyntaxError, ValueError, RecursionError, MemoryError, _ParseError):
            args, kwargs, unread = _arguments_piecewise(rest)
    return FxNode(m.group("name"), m.group("op"), m.group("target").strip(), args, kwargs, not unread, unread)


class _ParseError(Exception):
    pass


FX_REF = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)")  # a %reference (signature forms and body keys read them too)
_REF_PREFIX = "__fx_ref__"
_MAX_TEXT = 1 << 16


def _arguments_via_pattern(text: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Calls differ mostly in the names they reference: parse each argument *pattern* once, then fill in names."""
    names = FX_REF.findall(text)
    if not names:
        return _call_arguments(text)
    args, kwargs, slots = _pattern(FX_REF.sub("%_", text))
    if slots != len(names):  # a reference inside a Symbol: parse this text directly
        return _call_arguments(text)
    it = iter(names)
    return _fill(args, it), _fill(kwargs, it)


@lru_cache(maxsize=2048)
def _pattern(text: str) -> tuple[tuple[Any, ...], dict[str, Any], int]:
    args, kwargs = _call_arguments(text)
    return args, kwargs, _count_refs((args, kwargs))


def _count_refs(value: Any) -> int:
    if isinstance(value, TensorRef):
        return 1
    if isinstance(value, (list, tuple)):
        return sum(_count_refs(v) for v in value)
    if isinstance(value, dict):
        return sum(_count_refs(v) for v in value.values())
    return 0


def _fill(value: Any, names: Iterator[str]) -> Any:
    """A copy of ``value`` with each placeholder reference replaced by the next name, in text order."""
    if isinstance(value, TensorRef):
        return TensorRef(next(names))
    if isinstance(value, tuple):
        return tuple(_fill(v, names) for v in value)
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    return value


def _parse(source: str) -> _ast.Expression:
    """``ast.parse(source, mode="eval")``: Python's own parser, nothing evaluated."""
    return cast(_ast.Expression, compile(source, "<unknown>", "eval", _ast.PyCF_ONLY_AST))


def _call_arguments(text: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args = (...), kwargs = {...})`` read with Python's own parser; nothing is evaluated."""
    if len(text) > _MAX_TEXT:
        raise _ParseError("too long")
    source = "f" + FX_REF.sub(_REF_PREFIX + r"\1", text)
    tree = _parse(source)
    call = tree.body
    if not isinstance(call, _ast.Call):
        raise _ParseError("not a call")
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    for kw in call.keywords:
        value = _literal(kw.value, source)
        if kw.arg == "args":
            args = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        elif kw.arg == "kwargs" and isinstance(value, dict):
            kwargs = value
    return args, kwargs


def _literal(node: _ast.AST, source: str) -> Any:
    if isinstance(node, _ast.Constant):
        return node.value
    if isinstance(node, _ast.Name):
        if node.id.startswith(_REF_PREFIX):
            return TensorRef(node.id[len(_REF_PREFIX):])
        if node.id in _NAMES:
            return _NAMES[node.id]
        return Symbol(node.id)
    if isinstance(node, _ast.UnaryOp) and isinstance(node.op, _ast.USub):
        inner = _literal(node.operand, source)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
        return Symbol(f"-{inner!r}")
    if isinstance(node, _ast.Tuple):
        return tuple(_literal(e, source) for e in node.elts)
    if isinstance(node, _ast.List):
        return [_literal(e, source) for e in node.elts]
    if isinstance(node, _ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise _ParseError("dict unpacking")
            key = k.id if isinstance(k, _ast.Name) else _literal(k, source)
            out[str(key)] = _literal(v, source)
        return out
    import ast  # (a value that is no literal, ``torch.float32``: its text; start-up, see the imports)

    segment = ast.get_source_segment(source, node) or type(node).__name__
    return Symbol(segment.replace(_REF_PREFIX, "%"))


_NAMES: dict[str, Any] = {"inf": math.inf, "nan": math.nan}

# --- text Python cannot parse -----------------------------------------------------------------------------------
# FX prints a string argument without quotes: ``args = (bij,bjk->bik, [%a, %b])`` (einsum's equation). FX joins
# arguments with ", ", so the text is split there (outside brackets) and each piece read on its own; a piece
# Python cannot read that has no brackets, quotes or references is such a string.

_OPEN, _CLOSE = "([{", ")]}"
_MAX_PIECES = 256


def _arguments_piecewise(text: str) -> tuple[tuple[Any, ...], dict[str, Any], tuple[str, ...]]:
    """``(args, kwargs, unread pieces)`` of an argument text read piece by piece; never raises."""
    if len(text) > _MAX_TEXT:
        return (), {}, (text[:60] + "…",)
    inner = text.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        return (), {}, (inner[:60],)
    parts = dict(_keyword_parts(inner[1:-1]))
    unread: list[str] = []
    args: list[Any] = []
    body = parts.get("args", "").strip()
    if body.startswith("(") and body.endswith(")"):
        for piece in _split_top(body[1:-1]):
            args.append(_piece(piece, unread))
    elif body:
        unread.append(body[:60])
    kwargs: dict[str, Any] = {}
    body = parts.get("kwargs", "").strip()
    if body.startswith("{") and body.endswith("}"):
        for piece in _split_top(body[1:-1]):
            key, sep, value = piece.partition(": ")
            if sep and key.strip().isidentifier():
                kwargs[key.strip()] = _piece(value, unread)
            elif piece.strip():
                unread.append(piece[:60])
    elif body:
        unread.append(body[:60])
    if len(unread) > 8:
        unread = [*unread[:8], f"and {len(unread) - 8} more"]
    return tuple(args), kwargs, tuple(unread)


def _keyword_parts(text: str) -> Iterator[tuple[str, str]]:
    """``args = (...), kwargs = {...}`` -> ("args", "(...)"), ("kwargs", "{...}")."""
    for piece in _split_top(text):
        key, sep, value = piece.partition("=")
        if sep:
            yield key.strip(), value.strip()


def _split_top(text: str) -> list[str]:
    """``text`` split at ", " outside brackets and quotes (at most ``_MAX_PIECES`` pieces)."""
    out: list[str] = []
    depth, start, quote, i = 0, 0, "", 0
    while i < len(text) and len(out) < _MAX_PIECES:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif c == "," and depth == 0 and text.startswith(", ", i):
            out.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    out.append(text[start:])
    return [p for p in out if p.strip()] if len(out) > 1 or text.strip() else []


def _piece(piece: str, unread: list[str]) -> Any:
    """One argument: read by Python when it can; else an unquoted string; else recorded as unread."""
    piece = piece.strip()
    try:
        source = "f(" + FX_REF.sub(_REF_PREFIX + r"\1", piece) + ")"
        call = _parse(source).body
        if isinstance(call, _ast.Call) and len(call.args) == 1 and not call.keywords:
            return _literal(call.args[0], source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _ParseError):
        pass
    if piece and not any(c in piece for c in "()[]{}%'\"") and piece.isprintable():
        return Symbol(piece)
    unread.append(piece[:60])
    return Symbol(piece[:200])
