"""The evidence catalogue: for each aten overload and non-tensor parameter, the literal place of torchlib's lowering
that moves with the argument, and by which relation (``Transpose.perm`` by ``swap`` for ``aten::transpose.int``'s
``dim0``).

``resources/aten_evidence.txt`` is learned, not written: ``scripts/gen_evidence.py`` (run by hand with torch and
onnxscript) exports one-op modules of each torchlib overload, varies one argument at a time, and records which
literal slot of the body moved and which relation of ``core.specialise.relations`` explains every value it took.
Reading it needs neither torch nor onnxscript; an op's lines are read on its first look-up. It is package data, not
model input, but a line that does not have its four fields is skipped rather than trusted.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from inspector.core.aten.resources import read_resource_text

CATALOGUE_FILE = "aten_evidence.txt"
_PLACE = re.compile(r"^(?P<op>[A-Za-z][A-Za-z0-9_]*)(?:\.(?P<attr>[A-Za-z_][A-Za-z0-9_]*)|\[(?P<slot>\d{1,2})\])$")


@dataclass(frozen=True, slots=True)
class Evidence:
    """``parameter`` of ``target`` reaches ``op_type``'s attribute ``attribute`` (or its operand ``slot``), where
    the lowering puts what ``relation`` makes of the argument."""

    target: str  # "aten::transpose.int"
    parameter: str  # "dim0"
    op_type: str  # "Transpose"
    attribute: str | None  # "perm"; None for an operand
    slot: int  # the operand a constant reaches (-1 for an attribute)
    relation: str  # a name of core.specialise.relations: "swap", "pads", "at:1", "map:sum=add"

    @property
    def place(self) -> str:
        return f"{self.op_type}.{self.attribute}" if self.attribute is not None else f"{self.op_type}[{self.slot}]"


def parse_place(text: str) -> tuple[str, str | None, int] | None:
    """``Conv.strides`` -> ("Conv", "strides", -1); ``Reshape[1]`` -> ("Reshape", None, 1); None otherwise."""
    m = _PLACE.match(text)
    if m is None:
        return None
    if m.group("attr") is not None:
        return m.group("op"), m.group("attr"), -1
    return m.group("op"), None, int(m.group("slot"))


def parse_catalogue(lines: list[str]) -> tuple[str, dict[str, tuple[Evidence, ...]]]:
    """(the versions the catalogue was learned from, target -> its evidence in file order)."""
    versions = ""
    out: dict[str, list[Evidence]] = {}
    for line in lines:
        if line.startswith("#"):
            if not versions and "from " in line:
                versions = line.split("from ", 1)[1].split(";", 1)[0].strip()
            continue
        parts = line.split("\t")
        if len(parts) != 4 or not all(parts):
            continue
        target, parameter, place, relation = parts
        where = parse_place(place)
        if where is None:
            continue
        out.setdefault(target, []).append(Evidence(target, parameter, where[0], where[1], where[2], relation))
    return versions, {t: tuple(es) for t, es in out.items()}


@functools.cache
def _text() -> str:
    """The catalogue file's text; "" when the file is missing."""
    return read_resource_text(CATALOGUE_FILE) or ""


def _lines_with(name: str) -> list[str]:
    """The catalogue's lines that hold ``name`` (every line of an overload of op ``name`` does), in file order."""
    text, lines, pos = _text(), [], 0
    while name:
        found = text.find(name, pos)
        if found < 0:
            break
        start = text.rfind("\n", 0, found) + 1
        end = text.find("\n", found)
        pos = end if end >= 0 else len(text)
        lines.append(text[start:pos])
    return lines if name else text.splitlines()


def op_name(target: str) -> str:
    """``aten::mean.dim`` -> ``mean``."""
    return target.split("::", 1)[-1].split(".", 1)[0]


@functools.lru_cache(maxsize=1024)
def evidence_for(target: str) -> tuple[Evidence, ...]:
    """The evidence of ``target``; a parameter its own overload has none for takes the evidence another overload
    of the op learned for a parameter of the same name (overloads of one op share their lowering's places:
    ``mean.dim`` and ``mean.names_dim``).

    Read from the lines of the op's overloads, found in the file's text on the first look-up of the op: a command
    asks for a few ops of the 341 lines, and making evidence of each was 10 of the 355 million instructions of
    ``onnx-inspector summary`` on a 15-node export (callgrind). Read as ``parse_catalogue`` reads the whole file
    (tested)."""
    name = op_name(target)
    by_target = parse_catalogue(_lines_with(name))[1]
    own = by_target.get(target, ())
    covered = {e.parameter for e in own}
    seen = {(e.parameter, e.place, e.relation) for e in own}
    borrowed: list[Evidence] = []
    for e in (e for t, es in sorted(by_target.items()) if op_name(t) == name for e in es):
        key = (e.parameter, e.place, e.relation)
        if e.parameter not in covered and key not in seen:
            seen.add(key)
            borrowed.append(e)
    return own + tuple(borrowed)


def covered_parameters(target: str) -> frozenset[str]:
    """The parameters of ``target`` (or of its op's other overloads) the catalogue has evidence for."""
    return frozenset(e.parameter for e in evidence_for(target))


def evidence_versions() -> str:
    """What the catalogue was learned from (``torch 2.13.0+cpu, onnxscript 0.7.2``), or ""."""
    return parse_catalogue([line for line in _text().splitlines() if line.startswith("#")])[0]
