"""Aten schemas: the data model, its grammar, the catalogue, and binding a call's arguments to the parameters.

Dynamo exports record only the aten *target* of each FX node (``aten::transpose.int``) and its raw
arguments; the parameter names, types and defaults live in the operator schema. The schemas are
generated once from torch into ``resources/aten_schemas.txt`` (see ``scripts/gen_aten_schemas.py``)
so that reviewing a model never needs torch installed. This module parses that text format
(exactly what ``str(torch._C.FunctionSchema)`` prints; its tokens and literals are read by ``schema_text.py``)
in pure Python and binds a call's arguments to the parameters.
"""

from __future__ import annotations

import enum
import functools
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from inspector.core.aten.resources import read_resource_text
from inspector.core.aten.schema_text import (
    MAX_SNIPPET,
    SchemaScanner,
    is_op_name,
    normalize_target,
    parse_literal,
)

__all__ = [
    "AtenSchema",
    "BoundArgument",
    "Parameter",
    "Return",
    "SchemaCatalogue",
    "bind",
    "format_signature",
    "parse_schema",
]

CATALOGUE_FILE = "aten_schemas.txt"

_TENSOR_LIKE = re.compile(r"Tensor(?:\([^()]*\)|\?|\[\d*\])*")


# --------------------------------------------------------------------------------------------
# Data model


@functools.cache
def _fixed_list() -> re.Pattern[str]:
    """A fixed-size list type (``int[2]``, ``SymInt[3]?``), whose scalar default stands for the repeated value;
    compiled on first use (start-up)."""
    return re.compile(r".*\[(\d+)\](?:\([^()]*\))?\??")


@dataclass(frozen=True, slots=True)
class Parameter:
    """One schema argument; ``type`` and ``default`` keep the schema's own spelling for display."""

    name: str
    type: str
    default: str | None
    kwarg_only: bool

    @property
    def is_tensor(self) -> bool:
        """True for Tensor-valued parameters (incl. optional, aliased and Tensor lists).

        Such arguments are graph values at export time, so they are never *specialised* values.
        """
        return _TENSOR_LIKE.fullmatch(self.type) is not None

    @property
    def has_default(self) -> bool:
        """True when the schema gives a default, so a call may omit this parameter."""
        return self.default is not None

    @property
    def default_value(self) -> object:
        """The default as a Python literal where possible, else the raw schema text.

        Enum-like defaults (``contiguous_format``) stay text. A scalar default of a fixed-size
        list type (``int[2] stride=1``) is broadcast to a list, exactly as torch does.
        """
        if self.default is None:
            return None
        ok, value = parse_literal(self.default)
        if not ok:
            return self.default
        fixed = _fixed_list().fullmatch(self.type)
        if fixed and isinstance(value, (bool, int, float)):
            return [value] * int(fixed.group(1))
        return value


@dataclass(frozen=True, slots=True)
class Return:
    """One schema return; ``name`` is None for unnamed returns."""

    name: str | None
    type: str


@dataclass(frozen=True, slots=True)
class AtenSchema:
    """A parsed operator schema.

    ``is_vararg`` / ``is_varret`` mark TorchScript builtins such as ``aten::format(str self, ...)``
    that accept (or return) any number of extra values.
    """

    name: str
    overload: str
    parameters: tuple[Parameter, ...]
    returns: tuple[Return, ...]
    text: str
    is_vararg: bool = False
    is_varret: bool = False

    @property
    def target(self) -> str:
        """The key used by FX nodes and the catalogue, e.g. ``aten::transpose.int``."""
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def parameter(self, name: str) -> Parameter | None:
        """The parameter called ``name``, or None."""
        for param in self.parameters:
            if param.name == name:
                return param
        return None


@dataclass(frozen=True, slots=True)
class BoundArgument:
    """A parameter together with the value a particular call gave it (or its default)."""

    parameter: Parameter
    value: object
    is_default: bool
    provided: bool


# --------------------------------------------------------------------------------------------
# Parsing


class _SchemaParser(SchemaScanner):
    """The grammar over ``SchemaScanner``'s tokens: a schema, its parameters and its returns."""

    __slots__ = ()

    def schema(self) -> AtenSchema:
        name, overload = self.op_name()
        self.expect("(")
        parameters, is_vararg = self.arguments()
        self.expect(")")
        self.expect("->")
        returns, is_varret = self.returns()
        self.skip_ws()
        if self.pos != len(self.text):
            raise self.fail("unexpected text after the returns")
        return AtenSchema(
            name=name,
            overload=overload,
            parameters=tuple(parameters),
            returns=tuple(returns),
            text=self.text,
            is_vararg=is_vararg,
            is_varret=is_varret,
        )

    def arguments(self) -> tuple[list[Parameter], bool]:
        params: list[Parameter] = []
        seen: set[str] = set()
        kwarg_only = False
        self.skip_ws()
        if self.peek() == ")":
            return params, False
        while True:
            self.skip_ws()
            if self.startswith("..."):
                self.pos += 3
                self.skip_ws()
                if self.peek() != ")":
                    raise self.fail("'...' must be the last argument")
                return params, True
            if self.peek() == "*":
                if kwarg_only:
                    raise self.fail("duplicate '*'")
                kwarg_only = True
                self.pos += 1
            else:
                params.append(self.argument(kwarg_only))
                if params[-1].name in seen:
                    raise self.fail(f"duplicate argument {params[-1].name!r}")
                seen.add(params[-1].name)
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() == ")":
                return params, False
            raise self.fail("expected ',' or ')' after an argument")

    def argument(self, kwarg_only: bool) -> Parameter:
        type_text = self.type_()
        if not self.text[self.pos : self.pos + 1].isspace():
            raise self.fail("expected whitespace between argument type and name")
        self.skip_ws()
        name = self.ident("an argument name")
        self.skip_ws()
        default: str | None = None
        if self.peek() == "=":
            self.pos += 1
            self.skip_ws()
            default = self.default_text()
        return Parameter(name=name, type=type_text, default=default, kwarg_only=kwarg_only)

    def returns(self) -> tuple[list[Return], bool]:
        self.skip_ws()
        if self.startswith("..."):
            self.pos += 3
            return [], True
        if self.peek() != "(":
            return [self.return_()], False
        self.pos += 1
        rets: list[Return] = []
        self.skip_ws()
        if self.peek() == ")":
            self.pos += 1
            return rets, False
        while True:
            self.skip_ws()
            if self.startswith("..."):
                self.pos += 3
                self.expect(")")
                return rets, True
            rets.append(self.return_())
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() == ")":
                self.pos += 1
                return rets, False
            raise self.fail("expected ',' or ')' after a return")

    def return_(self) -> Return:
        type_text = self.type_()
        name: str | None = None
        if self.text[self.pos : self.pos + 1].isspace():
            self.skip_ws()
            if self.at_ident():
                name = self.ident("a return name")
        return Return(name=name, type=type_text)


def parse_schema(text: str) -> AtenSchema:
    """Parse one schema line such as ``aten::relu(Tensor self) -> Tensor``.

    Raises ValueError with a one-line message when the text is not a schema.
    """
    if not isinstance(text, str):
        raise ValueError(f"aten schema must be a string, not {type(text).__name__}")
    return _SchemaParser(text.strip()).schema()


# --------------------------------------------------------------------------------------------
# Catalogue


class SchemaCatalogue:
    """Schemas keyed by target; lines are parsed on first lookup so loading stays cheap.

    The shipped catalogue (``default``) is kept as the file's text and a target's line is found on its first
    look-up (``from_text``): a command reads a handful of the 3,880 schemas, and keying, checking and grouping every
    line was 36 of the 439 million instructions of ``onnx-inspector summary`` on a 15-node export (callgrind). The
    whole map is made only when something asks for all of it (``overloads``, ``len``, iteration)."""

    __slots__ = ("_by_name", "_parsed", "_text", "_texts")

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts: dict[str, str] | None = dict(texts)
        self._text = ""  # with ``_texts`` None: the catalogue file, each line after a line break (``from_text``)
        self._parsed: dict[str, AtenSchema] = {}
        self._by_name: dict[str, list[str]] | None = None  # op -> its targets, made by the first ``overloads``

    @classmethod
    def default(cls) -> SchemaCatalogue:
        """The catalogue shipped in ``resources/`` (read once per process)."""
        return _default_catalogue()

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> SchemaCatalogue:
        """Build from schema lines; blank lines and ``#`` comments are skipped.

        Only the operator name of each line is checked here; the rest is parsed on lookup. The lines are split and
        checked by C loops (``map``) rather than a Python step per line (3.7 -> 3.0 ms of CPU for the shipped
        3,880 lines in a fresh process, median of six), and the op -> targets map is made by the first
        ``overloads``."""
        numbered = [(n, t) for n, t in enumerate(map(str.strip, lines), start=1) if t and t[0] != "#"]
        kept = [t for _n, t in numbered]
        heads = [h.rstrip() for h, _p, _r in map(_partition_paren, kept)]
        if not all(map(is_op_name, heads)) or any(map(str.__eq__, heads, kept)):
            number, text = next((n, t) for (n, t), h in zip(numbered, heads, strict=True)
                                if h == t or not is_op_name(h))
            raise ValueError(f"line {number}: not an aten schema: {text[:MAX_SNIPPET]!r}")
        # an operator name as written is its key, ``name.overload`` (a third of the time)
        return cls(dict(zip(heads, kept, strict=True)))

    @classmethod
    def from_text(cls, text: str) -> SchemaCatalogue:
        """The shipped catalogue's text, unchecked: a target's schema is the line that starts with the target and
        ``(`` (found by ``str.find``, parsed and kept on first look-up). That the file is such lines, each target
        once, and that this reads it as ``from_lines`` does, is checked by its test (``tests/test_aten_schema.py``),
        not in every process."""
        catalogue = cls({})
        catalogue._texts = None
        catalogue._text = "\n" + text
        return catalogue

    def _line(self, key: str) -> str | None:
        """The schema text of catalogue key ``key`` (a normalized target), or None."""
        if self._texts is not None:
            return self._texts.get(key)
        start = self._text.find(f"\n{key}(")
        if start < 0:
            return None
        end = self._text.find("\n", start + 1)
        return self._text[start + 1 : end if end >= 0 else len(self._text)].strip()

    def _keyed(self) -> dict[str, str]:
        """Every target's schema text in catalogue order (made once, when something asks for all of them)."""
        if self._texts is None:
            self._texts = SchemaCatalogue.from_lines(self._text.splitlines())._texts
            assert self._texts is not None
            self._text = ""
        return self._texts

    def get(self, target: str) -> AtenSchema | None:
        """The schema for any spelling :func:`normalize_target` accepts, or None."""
        try:
            key = normalize_target(target)
        except ValueError:
            return None
        schema = self._parsed.get(key)
        if schema is None:
            text = self._line(key)
            if text is None:
                return None
            schema = parse_schema(text)
            self._parsed[key] = schema
        return schema

    def overloads(self, name: str) -> list[AtenSchema]:
        """All overloads of ``aten::transpose`` (any spelling; an overload suffix is ignored)."""
        try:
            base = normalize_target(name).partition(".")[0]
        except ValueError:
            return []
        if self._by_name is None:
            self._by_name = {}
            for target in self._keyed():
                self._by_name.setdefault(target.partition(".")[0], []).append(target)
        result: list[AtenSchema] = []
        for target in self._by_name.get(base, ()):
            schema = self.get(target)
            if schema is not None:
                result.append(schema)
        return result

    def __len__(self) -> int:
        return len(self._keyed())

    def __bool__(self) -> bool:
        """Whether it holds any schema, without keying it (``catalogue or SchemaCatalogue.default()`` asks)."""
        if self._texts is not None:
            return bool(self._texts)
        start = 0
        while start < len(self._text):
            end = self._text.find("\n", start + 1)
            line = self._text[start : end if end >= 0 else len(self._text)].strip()
            if line and line[0] != "#":
                return True
            start = len(self._text) if end < 0 else end
        return False

    def __contains__(self, target: object) -> bool:
        if not isinstance(target, str):
            return False
        try:
            return self._line(normalize_target(target)) is not None
        except ValueError:
            return False

    def __iter__(self) -> Iterator[str]:
        """Targets in catalogue order."""
        return iter(self._keyed())


def _partition_paren(text: str) -> tuple[str, str, str]:
    return text.partition("(")


def _read_catalogue_lines() -> list[str]:
    return _read_catalogue_text().splitlines()


def _read_catalogue_text() -> str:
    text = read_resource_text(CATALOGUE_FILE)
    if text is None:
        raise FileNotFoundError(f"aten schema catalogue {CATALOGUE_FILE} not found in package resources")
    return text


@functools.cache
def _default_catalogue() -> SchemaCatalogue:
    return SchemaCatalogue.from_text(_read_catalogue_text())


# --------------------------------------------------------------------------------------------
# Binding and display


def bind(schema: AtenSchema, args: Sequence[object], kwargs: Mapping[str, object]) -> list[BoundArgument]:
    """Bind a call's arguments to the schema's parameters, in schema order.

    Positional args fill the non-kwarg-only parameters in order, kwargs match by name and the
    rest take their defaults. Parameters with neither are returned with ``provided=False`` so
    the caller can flag them. Extra positional args of a vararg schema are bound to a synthetic
    ``...`` parameter holding a tuple. Raises ValueError on too many positional args, unknown
    kwargs or a parameter given twice.
    """
    positional = [p for p in schema.parameters if not p.kwarg_only]
    extra: tuple[object, ...] = ()
    if len(args) > len(positional):
        if not schema.is_vararg:
            raise ValueError(
                f"{schema.target} takes at most {len(positional)} positional arguments "
                f"but {len(args)} were given"
            )
        extra = tuple(args[len(positional) :])
    given: dict[str, object] = {p.name: value for p, value in zip(positional, args, strict=False)}
    names = {p.name for p in schema.parameters}
    for key, value in kwargs.items():
        if key not in names:
            raise ValueError(f"{schema.target} got an unexpected keyword argument {key!r}")
        if key in given:
            raise ValueError(f"{schema.target} got multiple values for argument {key!r}")
        given[key] = value

    bound: list[BoundArgument] = []
    for param in schema.parameters:
        if param.name in given:
            bound.append(BoundArgument(param, given[param.name], is_default=False, provided=True))
        elif param.default is not None:
            bound.append(BoundArgument(param, param.default_value, is_default=True, provided=True))
        else:
            bound.append(BoundArgument(param, None, is_default=False, provided=False))
    if extra:
        varargs = Parameter(name="...", type="Any", default=None, kwarg_only=False)
        bound.append(BoundArgument(varargs, extra, is_default=False, provided=True))
    return bound


def _render_value(value: object, depth: int = 0) -> str:
    """Python-like text for a bound value; graph values (objects with a ``name``) become %name."""
    if depth > 20:
        return "..."
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_render_value(v, depth + 1) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_render_value(v, depth + 1) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        items = (f"{_render_value(k, depth + 1)}: {_render_value(v, depth + 1)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    name = getattr(value, "name", None)
    if isinstance(name, str) and not isinstance(value, enum.Enum):
        return name if name.startswith("%") else f"%{name}"
    return repr(value)


def _render_returns(schema: AtenSchema) -> str:
    parts = [f"{r.type} {r.name}" if r.name else r.type for r in schema.returns]
    if schema.is_varret:
        parts.append("...")
    if len(parts) == 1 and not schema.is_varret and not parts[0].startswith("("):
        return parts[0]
    return "(" + ", ".join(parts) + ")"


def format_signature(schema: AtenSchema, bound: Sequence[BoundArgument] | None = None) -> str:
    """One-line signature; with ``bound``, each parameter is shown as ``name=value``.

    Unbound it reads like the schema (``type name=default``, ``*`` before kwarg-only
    parameters). Bound parameters that were neither given nor defaulted show ``name=<missing>``.
    """
    parts: list[str] = []
    if bound is None:
        star_done = False
        for param in schema.parameters:
            if param.kwarg_only and not star_done:
                parts.append("*")
                star_done = True
            text = f"{param.type} {param.name}"
            parts.append(f"{text}={param.default}" if param.default is not None else text)
        if schema.is_vararg:
            parts.append("...")
    else:
        for arg in bound:
            if arg.parameter.name == "..." and isinstance(arg.value, tuple):
                parts.extend(_render_value(v) for v in arg.value)
            elif arg.provided:
                parts.append(f"{arg.parameter.name}={_render_value(arg.value)}")
            else:
                parts.append(f"{arg.parameter.name}=<missing>")
    return f"{schema.target}({', '.join(parts)}) -> {_render_returns(schema)}"
