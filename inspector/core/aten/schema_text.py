"""The text of aten schemas: tokens, literals and operator names, as ``str(torch._C.FunctionSchema)`` prints them.

The schema catalogue (``resources/aten_schemas.txt``) and the FX metadata of a model (its targets and the defaults
its arguments are compared with) are text; this module reads that text and builds no schema objects, so the grammar
in ``schemas.py`` stays with the data model it builds. The text may come from a model file (a target in
``pkg.torch.onnx.fx_node``), so it is untrusted: nesting is bounded (32 levels), errors quote at most
``MAX_SNIPPET`` characters, and nothing here evaluates it beyond ``ast.literal_eval`` of one string literal.
"""

from __future__ import annotations

import functools
import re

__all__ = ["MAX_SNIPPET", "SchemaScanner", "normalize_target", "parse_literal", "split_op_name"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Dotted names occur for TorchScript classes, e.g. ``__torch__.torch.classes.rnn.CellParamsBase``.
_TYPE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_OP_NAME = re.compile(r"(?:([A-Za-z_][A-Za-z0-9_]*)::)?([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z0-9_]+))?")
_WS = re.compile(r"\s*")
_LIST_SUFFIX = re.compile(r"\[\s*(\d*)\s*\]")
# Type constructors written with parentheses; any other ``Name(`` is an alias annotation.
_GENERIC_TYPES = frozenset({"Dict", "Future", "RRef", "Await", "Tuple", "Union", "Optional", "List"})
_BRACKETS = {"[": "]", "(": ")", "{": "}"}
MAX_SNIPPET = 80
_MAX_NESTING = 32


@functools.cache
def _literals() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The int, float and quoted string of a default; compiled on first use (a diff reads no default: start-up)."""
    return (re.compile(r"[+-]?\d+"),
            re.compile(r"[+-]?(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|inf|nan)"),
            re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'", re.DOTALL))


@functools.cache
def _alias_body() -> re.Pattern[str]:
    """Alias annotations: ``(a)``, ``(a!)``, ``(a -> *)``, ``(b|a)``, ``(*)``; compiled on first use (the schemas a
    command reads have none, mostly: start-up)."""
    return re.compile(r"[A-Za-z0-9_*|!\s>-]+")


def split_op_name(text: str) -> tuple[str, str] | None:
    """(name, overload) when ``text`` is an operator name (``aten::add.out`` -> ``aten::add``, ``out``), else None."""
    match = _OP_NAME.fullmatch(text)
    return None if match is None else _name_overload(match)


def is_op_name(text: str) -> bool:
    """Whether ``text`` is an operator name as ``split_op_name`` reads one (then ``name.overload`` as written)."""
    return _OP_NAME.fullmatch(text) is not None


def _name_overload(match: re.Match[str]) -> tuple[str, str]:
    namespace, op, overload = match.groups()
    return (f"{namespace}::{op}" if namespace else op), overload or ""


class SchemaScanner:
    """The lexical half of the recursive-descent schema parser: position, tokens, types and raw defaults as text.

    Types and defaults are kept as the schema spells them (they are shown as written); ``schemas._SchemaParser``
    adds the grammar that builds parameters and returns.
    """

    __slots__ = ("depth", "pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def fail(self, reason: str) -> ValueError:
        start = max(0, self.pos - MAX_SNIPPET // 2)
        snippet = self.text[start : start + MAX_SNIPPET]
        if start:
            snippet = "..." + snippet
        if start + MAX_SNIPPET < len(self.text):
            snippet += "..."
        return ValueError(f"malformed aten schema at column {self.pos}: {reason}: near {snippet!r}")

    def skip_ws(self) -> None:
        match = _WS.match(self.text, self.pos)
        assert match is not None
        self.pos = match.end()

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def startswith(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def expect(self, token: str) -> None:
        self.skip_ws()
        if not self.startswith(token):
            raise self.fail(f"expected {token!r}")
        self.pos += len(token)

    def ident(self, what: str) -> str:
        match = _IDENT.match(self.text, self.pos)
        if match is None:
            raise self.fail(f"expected {what}")
        self.pos = match.end()
        return match.group()

    def op_name(self) -> tuple[str, str]:
        """(name, overload) of the operator name here."""
        self.skip_ws()
        match = _OP_NAME.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected an operator name")
        self.pos = match.end()
        return _name_overload(match)

    def at_ident(self) -> bool:
        return _IDENT.match(self.text, self.pos) is not None

    def type_(self) -> str:
        if self.depth >= _MAX_NESTING:
            raise self.fail("types nested too deeply")
        self.depth += 1
        start = self.pos
        self.base_type()
        self.type_suffixes()
        self.depth -= 1
        return self.text[start : self.pos]

    def base_type(self) -> None:
        if self.peek() == "(":  # tuple type: (Tensor, t)
            self.pos += 1
            self.type_list()
            return
        match = _TYPE_NAME.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected a type")
        self.pos = match.end()
        if match.group() in _GENERIC_TYPES and self.peek() == "(":
            self.pos += 1
            self.type_list()

    def type_list(self) -> None:
        """Comma-separated types up to and including the closing ')'."""
        self.skip_ws()
        if self.peek() == ")":
            self.pos += 1
            return
        while True:
            self.skip_ws()
            self.type_()
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() == ")":
                self.pos += 1
                return
            raise self.fail("expected ',' or ')' in a type list")

    def type_suffixes(self) -> None:
        while True:
            char = self.peek()
            if char == "(":
                end = self.text.find(")", self.pos)
                if end < 0 or not _alias_body().fullmatch(self.text, self.pos + 1, end):
                    raise self.fail("malformed alias annotation")
                self.pos = end + 1
            elif char == "[":
                match = _LIST_SUFFIX.match(self.text, self.pos)
                if match is None:
                    raise self.fail("malformed list type")
                self.pos = match.end()
            elif char == "?":
                self.pos += 1
            else:
                return

    def default_text(self) -> str:
        """Raw default up to the next top-level ',' or ')', honouring brackets and strings."""
        start = self.pos
        closers: list[str] = []
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in "\"'":
                match = _literals()[2].match(text, self.pos)
                if match is None:
                    raise self.fail("unterminated string in a default")
                self.pos = match.end()
                continue
            if char in _BRACKETS:
                closers.append(_BRACKETS[char])
            elif char in "])}":
                if not closers and char == ")":
                    break
                if not closers or closers.pop() != char:
                    raise self.fail("unbalanced brackets in a default")
            elif char == "," and not closers:
                break
            self.pos += 1
        if closers:
            raise self.fail("unbalanced brackets in a default")
        default = text[start : self.pos].strip()
        if not default:
            raise self.fail("empty default")
        return default


def _split_top_level(body: str) -> list[str] | None:
    """Split a list body at top-level commas; None when brackets or strings are unbalanced."""
    parts: list[str] = []
    depth = 0
    start = 0
    pos = 0
    while pos < len(body):
        char = body[pos]
        if char in "\"'":
            match = _literals()[2].match(body, pos)
            if match is None:
                return None
            pos = match.end()
            continue
        if char in "[({":
            depth += 1
        elif char in "])}":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            parts.append(body[start:pos])
            start = pos + 1
        pos += 1
    if depth:
        return None
    parts.append(body[start:])
    return parts


def parse_literal(text: str, depth: int = 0) -> tuple[bool, object]:
    """(True, value) for None/bool/int/float/str/list literals, else (False, text)."""
    raw = text.strip()
    if depth > _MAX_NESTING:
        return False, raw
    if raw == "None":
        return True, None
    if raw in ("True", "False"):
        return True, raw == "True"
    integer, floating, string = _literals()
    if integer.fullmatch(raw):
        return True, int(raw)
    if floating.fullmatch(raw):
        return True, float(raw)
    if string.fullmatch(raw):
        if "\\" not in raw and raw[1:-1].isprintable():  # no escape, no control: the text between the quotes
            return True, raw[1:-1]
        import ast  # (an escaped string default; ast is 14 million instructions of start-up, callgrind)

        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            return False, raw
        return (True, value) if isinstance(value, str) else (False, raw)
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1].strip()
        if not inner:
            return True, []
        parts = _split_top_level(inner)
        if parts is None:
            return False, raw
        items: list[object] = []
        for part in parts:
            ok, item = parse_literal(part, depth + 1)
            if not ok:
                return False, raw
            items.append(item)
        return True, items
    return False, raw


def normalize_target(target: str) -> str:
    """Canonical catalogue key for any common spelling of an operator.

    ``torch.ops.aten.transpose.int``, ``aten.transpose.int`` and ``aten::transpose.int`` all give
    ``aten::transpose.int``; the ``default`` overload is dropped (``aten.relu.default`` ->
    ``aten::relu``). Raises ValueError for text that names no operator.
    """
    raw = target.strip() if isinstance(target, str) else ""
    text = raw.removeprefix("torch.ops.")
    if "::" in text:
        namespace, _, rest = text.partition("::")
    else:
        namespace, sep, rest = text.partition(".")
        if not sep:
            raise ValueError(f"not an operator target (no namespace): {raw[:MAX_SNIPPET]!r}")
    name, _, overload = rest.partition(".")
    if (
        not _IDENT.fullmatch(namespace)
        or not _IDENT.fullmatch(name)
        or (overload and not re.fullmatch(r"[A-Za-z0-9_]+", overload))
    ):
        raise ValueError(f"not an operator target: {raw[:MAX_SNIPPET]!r}")
    if overload == "default":
        overload = ""
    return f"{namespace}::{name}.{overload}" if overload else f"{namespace}::{name}"
