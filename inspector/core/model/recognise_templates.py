"""What the matcher (``recognise``) knows of the templates before it sees a graph: each node's key, which templates
are one structure (tried once, as a group), which are connected from their last node, which constant operands may be
computed in the graph, and which bodies are no evidence of one call (``_chain_of_calls``). Pure functions of the
shipped catalogue (``core.aten.templates``), which is package data, not model input.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import onnx

from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.aten.templates import (
    Slot,
    Template,
    TemplateNode,
    canonical_float,
    list_template,
    with_list_length,
)
from inspector.core.aten.torchlib import torchlib_for
from inspector.core.model.onnx_operators import ATTRIBUTE_DEFAULTS, OLDEST_OPSETS

Key = tuple[str, str, int, int, tuple[str, ...]]  # domain, op type, operands (trailing absent ones cut), outputs,
# attribute names
INDEX_TYPES = frozenset({onnx.TensorProto.INT32, onnx.TensorProto.INT64})


def computable(slot: Slot) -> bool:
    """Whether a constant operand in this slot may be computed by shaping ops in the graph: a masked index operand
    (starts, axes, a shape: integer), which torchlib casts and reshapes from Python ints (the optimizer folds that
    away, an export without it keeps it). A float scalar it writes as a constant: a Cast to float before a Div is
    another call's (t5_noopt's ``scalar_tensor`` then ``div.Tensor``, read as one ``div.Tensor``)."""
    kind = slot.value
    return slot.masked and isinstance(kind, dict) and kind.get("t") in INDEX_TYPES


def chain_of_calls(t: Template, alone: dict[Key, list[Template]]) -> bool:
    """Whether ``t`` is, node for node, what lone calls of other overloads lower to (each node fits a one-node
    template, wiring and literals alike), with a literal that any value fits: ``add.Tensor`` with ``alpha`` (a Mul by
    a scalar, then an Add: also ``mul.Tensor`` then ``add.Tensor``, as gpt2's tanh gelu is written), ``softmax.int``
    with a dtype (``_softmax`` then ``_to_copy``), ``stack`` (``unsqueeze`` twice, then ``cat``). Nothing in the graph
    tells one call from several, so such a body is no evidence of one: a match of it (and of the other templates that
    fit the same nodes: ``stack``'s body is ``complex``'s too) is refused, and its nodes are left to the one-node
    templates. A body with fixed literals only (gelu's constants) is evidence, and is kept."""
    free = any(c.masked for c in t.constants) or any(s.masked for n in t.nodes for _k, s in n.attributes)
    return len(t.nodes) > 1 and free and all(
        any(_fits_alone(t, n, u) for u in alone.get(template_key(n), ())) for n in t.nodes)


def _fits_alone(t: Template, n: TemplateNode, u: Template) -> bool:
    """Whether node ``n`` of ``t`` is what one-node template ``u`` lowers to: its literals are ``u``'s (or ``u``
    masks them), and what ``u`` reads from outside or as a tensor argument (a masked constant of a Tensor parameter:
    ``mul.Tensor``'s ``other``, exported as a number) may be anything."""
    un = u.nodes[0]
    for r, ur in zip(n.inputs, un.inputs):
        if ur.kind == "x" or (r.kind != "-" and ur.kind == "c" and _tensor_slot(u, ur.a)):
            continue
        if r.kind != ur.kind or (r.kind == "c" and not _same_literal(t.constants[r.a], u.constants[ur.a])):
            return False
    mine = dict(n.attributes)
    return all(name in mine and _same_literal(mine[name], slot) for name, slot in un.attributes)


def _same_literal(mine: Slot, alone: Slot) -> bool:
    return alone.masked or (not mine.masked and mine.value == alone.value)


def _tensor_slot(u: Template, k: int) -> bool:
    schema = SchemaCatalogue.default().get(u.target)
    tensors = {p.name for p in schema.parameters if p.is_tensor} if schema is not None else set()
    return bool(tensors & set(u.constants[k].moves_with))


def without_aliases(templates: list[Template]) -> list[Template]:
    """Overloads that torchlib registers one function for (``multiply.Tensor`` and ``mul.Tensor``: ``aten_mul``)
    are one candidate: the one the function is named after (the exporter's FX graph holds the canonical op, never
    its public alias); a private op (``_unsafe_view`` under ``aten_view``) is one torch keeps in its FX graphs, so it
    stays a candidate; where none is named after the function, all stay."""
    by_function: dict[str, list[Template]] = {}
    for t in templates:
        entries = [e for e in torchlib_for(t.target) if not e.complex]
        by_function.setdefault(entries[0].function if entries else t.target, []).append(t)
    out: list[Template] = []
    for function, group in by_function.items():
        ops = [t.target.split("::", 1)[-1].split(".", 1)[0] for t in group]
        named = [t for t, op in zip(group, ops) if "aten_" + op == function or op.startswith("_")]
        out += named if named and len({t.target for t in group}) > 1 else group
    return out


def most_specific(templates: list[Template]) -> list[Template]:
    """Of templates of one target that fit one body, those that read the most operands as constants: ``mul.Tensor``
    with a number ``other`` reads the constant as its argument, with a tensor ``other`` as any value (both fit a Mul
    by a constant; the first explains more, and gives ``other`` back)."""
    most = max(_constant_reads(t) for t in templates)
    return [t for t in templates if _constant_reads(t) == most]


def _constant_reads(t: Template) -> int:
    return sum(1 for n in t.nodes for r in n.inputs if r.kind == "c")


def matched_as(t: Template) -> str:
    """What matching looks at (a masked slot is only masked: which argument moves it matters to the arguments)."""
    def slot(x: Slot) -> object:
        return "?" if x.masked else x.value

    nodes = [(n.domain, n.op_type, n.inputs, n.outputs, [(k, slot(v)) for k, v in n.attributes]) for n in t.nodes]
    return repr((nodes, [slot(c) for c in t.constants], t.outputs))


def leaf(t: Template, j: int) -> bool:
    """Node ``j`` of ``t`` reads only outside values and constants."""
    return all(r.kind != "n" for r in t.nodes[j].inputs)


def foldable(n: TemplateNode, several: bool) -> bool:
    """Whether the optimizer may have folded node ``n`` of a body into a constant, where what it reads is constant in
    the graph: a one-operand node of an outside value or constant (a weight's Transpose); with ``several`` (a match
    that keeps at least two other nodes), a node reading only outside values and constants (SDPA's
    ``Where(mask, 0, -inf)`` of a static causal mask: folded in the optimised zoo exports with a bool mask)."""
    if several:
        return bool(n.inputs) and all(r.kind != "n" for r in n.inputs)
    return len(n.inputs) == 1 and n.inputs[0].kind != "n"


def template_key(n: TemplateNode) -> Key:
    k = len(n.inputs)
    while k and n.inputs[k - 1].kind == "-":
        k -= 1
    return (n.domain, n.op_type, k, n.outputs, tuple(sorted(name for name, _s in n.attributes)))


def connected(t: Template) -> bool:
    """Every node of ``t`` reaches its last one (the matcher walks backwards from there)."""
    seen = {t.sink}
    for j in range(t.sink, -1, -1):
        if j in seen:
            seen.update(r.a for r in t.nodes[j].inputs if r.kind == "n")
    return len(seen) == len(t.nodes)


def reads(t: Template, slot: int) -> int:
    return sum(1 for n in t.nodes for r in n.inputs if r.kind == "c" and r.a == slot)


@functools.lru_cache(maxsize=512)
def attribute_defaults(domain: str, op_type: str, opset: int | None) -> tuple[tuple[str, Any], ...]:
    """The attributes of ``op_type`` that have a default at ``opset``, with it in the catalogue's canonical form
    (``canonical_attribute``): an attribute at its default is the same as the attribute left out (llama's Reshapes
    without ``allowzero``, the one-op exports' with ``allowzero=0``), so both sides of a match are read with the
    defaults filled in. From onnx's schemas as the package ships them (``onnx_operators``, generated); none for an
    opset past what they cover (or None), where nothing is filled in, as before."""
    domain = "" if domain == "ai.onnx" else domain
    if opset is None or opset > OLDEST_OPSETS.get(domain, 0):
        return ()
    found: dict[str, str] = {}
    for since, keys in ATTRIBUTE_DEFAULTS.get((domain, op_type), ()):
        if since <= opset:
            found = keys
    out = []
    for name, key in sorted(found.items()):
        value = _default_value(key)
        if value is not None:
            out.append((name, value))
    return tuple(out)


def _default_value(key: str) -> Any:
    """A default's key as ``literals.attribute_value`` writes it (``i:0``, ``f:9.9999997e-06``, ``s:'NOTSET'``,
    ``is:[1, 1]``) in the canonical form; None for another kind. Package data, not model input."""
    kind, _, text = key.partition(":")
    try:
        if kind == "i":
            return int(text)
        if kind == "f":
            return canonical_float(float(text))
        if kind in ("s", "is", "ss"):
            return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return None


def with_defaults(t: Template, opset: int | None) -> Template:
    """``t`` with each attribute its nodes leave out at its default filled in, as a fixed literal (see
    ``attribute_defaults``); ``t`` itself when there is none."""
    nodes = list(t.nodes)
    changed = False
    for j, n in enumerate(t.nodes):
        have = {name for name, _slot in n.attributes}
        extra = [(name, Slot(value)) for name, value in attribute_defaults(n.domain, n.op_type, opset)
                 if name not in have]
        if extra:
            nodes[j] = dataclasses.replace(n, attributes=tuple(sorted((*n.attributes, *extra), key=_name)))
            changed = True
    return dataclasses.replace(t, nodes=tuple(nodes)) if changed else t


def _name(item: tuple[str, Slot]) -> str:
    return item[0]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the matcher reads of a catalogue, worked out once per catalogue (not per model)."""

    by_sink: dict[Key, list[list[Template]]]  # groups of one structure, by their last node's key, larger first
    keys: dict[str, list[Key]]  # template -> its nodes' keys
    chains: set[str]  # templates that are no evidence of one call (``chain_of_calls``)
    foldable: dict[str, list[bool]]  # template -> which of its nodes the optimizer may fold (``foldable``)
    written: dict[str, list[frozenset[str]]]  # template -> the attributes each node writes (before ``with_defaults``)
    leaves: dict[str, list[bool]]  # template -> which of its nodes read only outside values and constants (``leaf``)


_PREPARED: list[tuple[Sequence[Template], int | None, tuple[str, ...], Prepared]] = []
_LISTS: list[tuple[Sequence[Template], int | None, list[tuple[Template, Key]]]] = []


def list_lengths(templates: Sequence[Template], present: Collection[Key], opset: int | None = None) -> list[Template]:
    """The list templates of ``templates`` (``list_template``: cat's Concat, einsum's Einsum, stack's Unsqueezes and
    Concat) at each other length that a node key of ``present`` has for their last node (a Concat of four operands:
    ``aten::cat#0[4]``, ``aten::stack#0[4]``), so that ``prepare`` keys them as it keys the rest."""
    if not (_LISTS and _LISTS[0][0] is templates and _LISTS[0][1] == opset):
        lists = [(t, template_key(with_defaults(t, opset).nodes[-1])) for t in templates if list_template(t)]
        _LISTS[:] = [(templates, opset, lists)]
    return sorted((with_list_length(t, key[2]) for t, k in _LISTS[0][2] for key in present
                   if key[2] != k[2] and key[2] >= 1 and key[:2] == k[:2] and key[3:] == k[3:]),
                  key=lambda t: t.name)


def prepare(templates: Sequence[Template], opset: int | None = None, extra: Sequence[Template] = ()) -> Prepared:
    """Templates by their last node's key (op, operands, outputs, attribute names): a node tries only those whose
    last node could be it (at 10k nodes: 9 tries a node by op type alone, 1-2 by key); templates of one structure (a
    lone Add: add.Tensor, add.Scalar, ...) are tried once, as a group. ``extra``: the list templates at the lengths a
    graph has (``list_lengths``). Kept for the last catalogue seen (the shipped one is one object,
    ``load_templates``)."""
    names = tuple(t.name for t in extra)
    if _PREPARED and _PREPARED[0][0] is templates and _PREPARED[0][1] == opset and _PREPARED[0][2] == names:
        return _PREPARED[0][3]
    given = templates
    templates = [*templates, *extra] if extra else templates
    written = {t.name: [frozenset(name for name, _s in n.attributes) for n in t.nodes] for t in templates}
    templates = [with_defaults(t, opset) for t in templates]  # (the attributes left out at their defaults)
    by_sink: dict[Key, list[list[Template]]] = {}
    keys: dict[str, list[Key]] = {}
    groups: dict[str, list[Template]] = {}
    alone: dict[Key, list[Template]] = {}
    for t in templates:
        if len(t.nodes) == 1 and not t.form:  # (a fused body is no lone call's: ``Template.form``)
            alone.setdefault(template_key(t.nodes[0]), []).append(t)
    for t in sorted(templates, key=lambda t: (-len(t.nodes), t.name)):
        if connected(t):
            keys[t.name] = [template_key(n) for n in t.nodes]
            shape = matched_as(t)
            if shape not in groups:
                groups[shape] = []
                by_sink.setdefault(keys[t.name][t.sink], []).append(groups[shape])
            groups[shape].append(t)
    # a template counts as absent from a graph without one of its nodes' keys unless the optimizer may have folded
    # that node as a match keeps it (``foldable``): a multi-operand node of outside values and constants only where
    # two other nodes are left. A group norm's ``Unsqueeze(weight, axes)`` is folded wherever the weight is a module's
    # parameter (wav2vec2's, a UNet's): counted as one operand's, every such group norm went unrecognised.
    folds = {t.name: [foldable(n, len(t.nodes) > 2) for n in t.nodes] for t in templates}
    leaves = {t.name: [leaf(t, j) for j in range(len(t.nodes))] for t in templates}
    got = Prepared(by_sink, keys, {t.name for t in templates if chain_of_calls(t, alone)}, folds, written, leaves)
    _PREPARED[:] = [(given, opset, names, got)]
    return got
