"""The call sites and families of a model's local functions, made only for a model that has some.

Split from ``functions`` for start-up: a flat export (most of what a command reads) has no local function, and each
dataclass costs its process about 4 million instructions to make (one ``exec`` per generated method, Python 3.11;
callgrind, ``benchmarks/bench_startup.py --instructions``), the two patterns about 1 million more. Function names and
doc strings come from the model (untrusted): they are matched here with anchored, bounded patterns, never shown.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import onnx

from inspector.core.model.keys import FunctionKey, GraphScope
from inspector.core.model.walk import NodePath

_VARIANT = re.compile(r"^(?P<base>.+)\.(?P<n>\d+)$")
# How ``fold --modules`` notes, in a variant's doc string, the overload name it would have had (onnxruntime resolves
# calls inside function bodies without their overload, so a family called there is written as TorchScript-style
# variants ``T5Attention``, ``T5Attention.1``): written by ``variant_note``, read back as the variant's label.
_VARIANT_NOTE = re.compile(r"\(overload (?P<name>[A-Za-z0-9_]{1,80}), named as a variant: ")


def variant_note(overload: str) -> str:
    """The doc-string note of a variant that stands for ``overload`` (see ``_VARIANT_NOTE``)."""
    return (f" (overload {overload}, named as a variant: onnxruntime resolves calls inside function bodies without "
            "their overload)")


@dataclass(frozen=True, slots=True)
class CallSite:
    """A node that resolves to a local function."""

    callee: FunctionKey
    caller: GraphScope
    path: NodePath
    node_name: str
    where: str  # readable path, e.g. "main/If_0.then_branch/n3"


@dataclass(slots=True)
class FunctionFamily:
    """All functions sharing ``(domain, name)``; TorchScript variants join their base's family."""

    domain: str
    name: str
    members: list[FunctionKey] = field(default_factory=list)
    torchscript_variants: bool = False
    noted: dict[FunctionKey, str] = field(default_factory=dict)  # variants' overload names (``variant_note``)

    def label(self, key: FunctionKey) -> str:
        """The overload as a user reads it: the overload field, the overload name a variant notes, or the
        TorchScript suffix."""
        if key.overload:
            return key.overload
        if key in self.noted:
            return self.noted[key]
        if self.torchscript_variants and key.name != self.name:
            return key.name[len(self.name) + 1 :]
        return ""


def function_families(functions: dict[FunctionKey, onnx.FunctionProto]) -> dict[tuple[str, str], FunctionFamily]:
    names_by_domain: dict[str, set[str]] = defaultdict(set)
    for k in functions:
        names_by_domain[k.domain].add(k.name)
    families: dict[tuple[str, str], FunctionFamily] = {}
    for key in functions:
        fam_name = key.name
        variant = False
        m = _VARIANT.match(key.name)
        if not key.overload and m and m.group("base") in names_by_domain[key.domain]:
            fam_name = m.group("base")
            variant = True
        fam = families.setdefault((key.domain, fam_name), FunctionFamily(key.domain, fam_name))
        fam.members.append(key)
        fam.torchscript_variants |= variant
        note = _VARIANT_NOTE.search(functions[key].doc_string) if not key.overload else None
        if note is not None:
            fam.noted[key] = note.group("name")
    for fam in families.values():
        fam.members.sort(key=lambda k: (k.overload, _variant_number(k.name)))
    return families


def _variant_number(name: str) -> int:
    m = _VARIANT.match(name)
    return int(m.group("n")) if m else -1
