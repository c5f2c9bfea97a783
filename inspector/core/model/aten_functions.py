"""Aten functions: local functions that implement an aten overload, known by evidence, whoever produced them.

The seed's representation (trace_only aten ops as model-local functions keyed (domain, name, overload)) is
written by more than one producer, each with its own naming: ``fold`` writes ``pkg.torch.aten.view`` with the
catalogued schema as doc string; another exporter writes ``pkg.torch.aten.aten_view`` overload
``default_1b05ea4a`` with the doc string ``aten.view.default`` and the FX node on every call node; a hand-made
library may write ``aten.view`` with nothing but attributes at its call sites. A function is read as an aten
overload from any of these kinds of evidence:

- *doc*: its doc string is a catalogued schema (``aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)``) or a
  qualified name (``aten.view.default``, ``aten::view.default``, ``torch.ops.aten.view.default``);
- *fx*: the ``pkg.torch.onnx.fx_node`` metadata of its call nodes names the target;
- *name*: its domain is an aten domain (``pkg.torch.aten``, ``pkg.onnxscript.torch_lib``, ``aten``, ``*.aten``)
  and its name is the op (``view``) or the torchlib function (``aten_view``); this names the op, and the
  overload follows when exactly one catalogued overload that torchlib lowers fits the attributes passed at the
  call sites (names and kinds).

Evidence that names two targets (a doc string saying ``aten::view`` on a function whose calls say
``aten::mul.Tensor``, or calls of one function with two targets) is a finding, and the function is not read as an
aten function: a conflict is reported, never resolved by a guess.

Threat: doc strings, names and metadata come from an untrusted file; every text is length-bounded before it is
parsed, and the results are only looked up in the shipped catalogues (nothing from the file is evaluated).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import onnx

from inspector.core.aten.schemas import AtenSchema, SchemaCatalogue
from inspector.core.model.calls import FX_NODE, split_target
from inspector.core.model.fx import fx_head, op_target
from inspector.core.model.walk import as_text

EvidenceKind = Literal["doc", "fx", "name"]
ATEN_DOMAINS = frozenset({"pkg.torch.aten", "pkg.onnxscript.torch_lib", "aten", "pkg.torch.ops.aten"})
MAX_DOC = 400  # a schema is at most a few hundred characters; longer doc strings are prose, not evidence


@functools.cache
def _qualified() -> re.Pattern[str]:
    """A qualified aten or prims name in a doc string (``aten::add.Tensor``, ``torch.ops.aten.add.Tensor``); compiled
    on first use, for a model with local functions (start-up)."""
    return re.compile(r"^(?:torch\.ops\.)?(aten|prims)(?:\.|::)([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?$", re.ASCII)


@functools.cache
def _hashed() -> re.Pattern[str]:
    """An overload name that is (or ends in) a made-up hash; compiled on first use, for a model with local functions
    (start-up)."""
    return re.compile(r"^(?P<base>[A-Za-z0-9_]*?)_?(?P<hash>[0-9a-f]{8,})$")


@dataclass(frozen=True, slots=True)
class Recognised:
    """What the evidence says a function implements: ``target`` (``aten::view``) when it agrees, with the kinds of
    evidence that named it; ``conflict`` says in words which evidence disagreed (then ``target`` is None);
    ``candidates``, the overloads that fit when the name alone names an op of several (then ``target`` is None)."""

    target: str | None
    evidence: tuple[EvidenceKind, ...] = ()
    conflict: str | None = None
    candidates: tuple[str, ...] = ()


NOT_RECOGNISED = Recognised(None)  # what a function the evidence names no target for is read as


def is_aten_domain(domain: str) -> bool:
    return domain in ATEN_DOMAINS or domain.endswith(".aten")


def doc_target(f: onnx.FunctionProto) -> str | None:
    """The target a doc string names: a schema's head, or a qualified name (catalogued or not)."""
    doc = as_text(f.doc_string).strip()
    if not doc or len(doc) > MAX_DOC:
        return None
    if "(" in doc:  # a schema: its head names the target, catalogued or not (then there is no signature)
        m = _qualified().match(doc.partition("(")[0].strip())
        return op_target(f"{m.group(1)}::{m.group(2)}" + (f".{m.group(3)}" if m.group(3) else "")) if m else None
    m = _qualified().match(doc)
    if m is None:
        return None
    return op_target(f"{m.group(1)}::{m.group(2)}" + (f".{m.group(3)}" if m.group(3) else ""))


def call_fx_target(node: onnx.NodeProto) -> str | None:
    """The aten target the FX metadata of a call node names, None without readable metadata."""
    for p in node.metadata_props:
        if p.key == FX_NODE:
            head = fx_head(as_text(p.value))
            return op_target(head[1]) if head is not None else None
    return None


def name_op(f: onnx.FunctionProto) -> str | None:
    """The op an aten domain's function name names: ``view`` for ``aten_view`` or ``view``; None elsewhere."""
    domain, name = as_text(f.domain), as_text(f.name)
    if not is_aten_domain(domain) or not name or len(name) > 200:
        return None
    return name[len("aten_"):] if name.startswith("aten_") and len(name) > 5 else name


def recognise(f: onnx.FunctionProto, calls: Sequence[onnx.NodeProto], fx: Iterable[str] | None = None,
              catalogue: SchemaCatalogue | None = None) -> Recognised:
    """What ``f`` implements, from its doc string, name and domain, and its call nodes ``calls`` (their
    attributes; their FX metadata too, unless ``fx`` gives the targets every call's metadata names)."""
    cat = catalogue or SchemaCatalogue.default()
    doc = doc_target(f)
    found = fx if fx is not None else (call_fx_target(n) for n in calls)
    fx_targets = sorted({t for t in found if t is not None})
    op = name_op(f)
    named: list[tuple[EvidenceKind, str]] = []
    if doc is not None:
        named.append(("doc", doc))
    named += [("fx", t) for t in fx_targets]
    targets = sorted({t for _k, t in named})
    if len(targets) > 1:
        said = "; ".join(f"{kind} says {t}" for kind, t in named)
        return Recognised(None, (), f"evidence disagrees: {said}")
    kinds: list[EvidenceKind] = list(dict.fromkeys(k for k, _t in named))
    if targets:
        target = targets[0]
        if op is not None:
            if not _names(op, target):
                return Recognised(None, (), f"its name names op {op}, but its {kinds[0]} says {target}")
            kinds.append("name")
        return Recognised(target, tuple(kinds))
    if op is None:
        return Recognised(None)
    fitting = _fitting(op, f, calls, cat)
    if len(fitting) == 1:
        return Recognised(fitting[0].target, ("name",))
    # several overloads that fit are not a conflict, only too little evidence: not read as any of them, and said
    return Recognised(None, candidates=tuple(sorted(s.target for s in fitting)))


def _names(op: str, target: str) -> bool:
    """Whether a function named after ``op`` may implement ``target``: the target's op, or a target that the
    torchlib function ``aten_<op>`` lowers (``aten_view`` lowers ``aten::_unsafe_view`` too)."""
    from inspector.core.aten.torchlib import torchlib_for  # (a model with local functions: start-up)

    return split_target(target)[1] == op or any(e.function == f"aten_{op}" for e in torchlib_for(target))


_ATTRIBUTE_KINDS = {
    onnx.AttributeProto.INT: "int", onnx.AttributeProto.INTS: "int[]", onnx.AttributeProto.FLOAT: "float",
    onnx.AttributeProto.FLOATS: "float[]", onnx.AttributeProto.STRING: "str", onnx.AttributeProto.STRINGS: "str[]",
}


def _fitting(op: str, f: onnx.FunctionProto, calls: Iterable[onnx.NodeProto],
             cat: SchemaCatalogue) -> list[AtenSchema]:
    """The catalogued overloads of ``aten::op`` that torchlib lowers and whose parameters take every attribute
    the function declares and its calls pass, each of a kind the parameter accepts."""
    from inspector.core.aten.torchlib import torchlib_for  # (a model with local functions: start-up)

    passed: dict[str, str] = {}
    for node in calls:
        for a in node.attribute:
            if not a.ref_attr_name:
                passed.setdefault(a.name, _ATTRIBUTE_KINDS.get(a.type, "?"))
    declared = set(f.attribute) | {a.name for a in f.attribute_proto}
    out = []
    for schema in cat.overloads(f"aten::{op}"):
        if not torchlib_for(schema.target):
            continue
        params = {p.name: p for p in schema.parameters}
        if not declared <= set(params) or not set(passed) <= set(params):
            continue
        if all(_accepts(params[name].type, kind) for name, kind in passed.items()):
            out.append(schema)
    return out


def _accepts(param_type: str, kind: str) -> bool:
    """Whether an attribute of ``kind`` can carry a value of the aten type ``param_type``."""
    t = param_type.rstrip("?")
    listed = "[" in t
    base = t.split("[", 1)[0]
    if kind == "?" or listed != kind.endswith("[]"):
        return kind == "?" or (base == "Tensor" and not listed)
    kind = kind.removesuffix("[]")
    if base in ("int", "SymInt", "bool", "ScalarType", "Layout", "MemoryFormat", "Device"):
        return kind == "int" or (base == "Device" and kind == "str")
    if base in ("float", "Scalar", "Tensor"):
        return kind in ("float", "int")
    if base in ("str", "Dimname"):
        return kind == "str"
    return False


def hash_overload(overload: str) -> bool:
    """Whether an overload name is (or ends in) a hash a producer made up (``default_1b05ea4a``, ``1b05ea4a9c``):
    such names say nothing to a reader, so a description of what differs is shown beside them."""
    return _hashed().match(overload) is not None
