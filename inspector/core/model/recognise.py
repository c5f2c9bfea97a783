"""Recognised calls: aten calls recovered, by matching torchlib body templates, from main-graph nodes that carry no
fx metadata: dynamo exports whose metadata was stripped, or nodes the exporter left bare (``applies``: TorchScript and
other producers lower differently and are left alone).

The templates (``core.aten.templates``) come from one-op exports of each overload. Matching is our own, not
onnxscript's rewriter ``pattern`` module: onnxscript is not a runtime dependency (it pulls in onnx_ir and an object
per node, ~10x the cost of reading the protobuf, DESIGN.md), and what we need is narrower than a rewrite rule:
anchor each template on its last node, walk operands backwards through the graph's producer map, and check op types,
attributes and constants (by value when they have one element; a longer one is a shape or mask made for the one-op
export's shapes, compared by type and rank), with values made inside the body read by nobody outside it. A node
tries only the templates its key and its operands' producers allow, worked out once per node *signature*
(``recognise_nodes``: its key and attributes, what makes each operand, a constant's value), so the pass is linear in
the graph; what fits one node alone depends on its signature alone where no operand is computed, so it is found once
per signature (``Matcher._alike``). Multi-node templates are tried from the graph's end backwards, larger ones
first, and take their nodes; every node left is matched against the one-node templates, and a body that fits several
overloads (a lone ``Reshape``: view, _unsafe_view) keeps them all as candidates and gets no aten target. What the
exporter or its optimizer does to a body is allowed for: a one-operand node of a constant may be folded away (a
weight's Transpose), a masked constant may be computed by Cast/Reshape/Concat nodes (export without the optimizer,
symbolic sizes), a Constant node, a common subexpression or a size list several views read belongs to the call of its
first reader, and an attribute left out at its schema default is the attribute written at it
(``recognise_attributes``; where overloads differ only there, the one whose template writes what the node writes is
kept). A body that is node for node a chain of lone calls is no evidence of one call (``chain_of_calls``) unless one
of its nodes is a Cast to its operand's own type, which no lone call lowers to.

Arguments come back (``recognise_args``) only where the template's evidence names the relation that put them into a
masked slot (``Transpose.perm`` by ``swap`` -> ``dim0, dim1``; the SDPA scale by ``sqrt``; ``eps`` by ``scalar``),
in the form of the schema's type; a ``dim`` comes back as the slot holds it (the optimizer may have made it
non-negative). The threat is a hostile model: values read from it reach the synthesised FX text only through
``repr`` (parsed back by ``core.model.fx``, never evaluated), and every template, target and candidate name comes
from the catalogue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import compress
from operator import itemgetter
from typing import Any

import onnx

from inspector.core.aten.templates import (
    Ref,
    Template,
    load_templates,
)
from inspector.core.model.calls import AtenCall, add_rules
from inspector.core.model.graph import GraphMaps
from inspector.core.model.keys import MAIN
from inspector.core.model.recognise_args import template_arguments
from inspector.core.model.recognise_attributes import NodeAttributes, as_written
from inspector.core.model.recognise_call import recognised_call
from inspector.core.model.recognise_constants import CONSTANT, SHAPING, GraphConstants
from inspector.core.model.recognise_lengths import ListLengths
from inspector.core.model.recognise_names import ConstantNames, inside_named, output_name, splits_calls
from inspector.core.model.recognise_narrow import ByName, Verdict, by_name, narrowed, reads_keep
from inspector.core.model.recognise_nodes import NodeSignatures, node_keys
from inspector.core.model.recognise_shared import FirstReaders, twin_escapes, unshare
from inspector.core.model.recognise_templates import (
    Key,
    computable,
    foldable,
    list_lengths,
    most_specific,
    prepare,
    reads,
    without_aliases,
)
from inspector.core.model.scan import applies as applies  # (its home: the index asks it of every model)

AMBIGUOUS_NAMESPACE = "recognised"  # the pseudo target of a body that fits several overloads


@dataclass(frozen=True, slots=True)
class Recognised:
    """One recovered call: its nodes (main-graph indices, Constant feeders included), the templates that fit, their
    targets (one, or the candidates of an ambiguous body), the arguments their evidence gives back, and the targets
    the body fits too that the name of its output rules out (``recognise_names``)."""

    nodes: tuple[int, ...]
    templates: tuple[str, ...]
    candidates: tuple[str, ...]
    arguments: tuple[tuple[str, Any], ...]
    ruled_out: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return target_of(self.candidates)


def target_of(candidates: tuple[str, ...]) -> str:
    """The target of a call with these candidates: the one, or a pseudo target naming them all."""
    if len(candidates) == 1:
        return candidates[0]
    return AMBIGUOUS_NAMESPACE + "::" + "_or_".join(c.split("::", 1)[-1].replace(".", "_") for c in candidates)


@dataclass(slots=True)
class _Match:
    """One template matched at one place of a graph: which graph node each template node is, and its values."""

    nodes: dict[int, int]  # template node -> graph node
    folded: set[int]
    constants: dict[int, str]  # constant slot -> graph value
    attributes: dict[tuple[int, str], Any]  # masked attribute values
    extra: set[int]  # nodes that compute a masked constant operand in the graph (Constant, folded or symbolic)
    shared: set[int] = field(default_factory=set)  # template nodes another call computed (common subexpressions)
    outside: dict[int, str] = field(default_factory=dict)  # outside tensor (``x`` operand) -> graph value


class Matcher:
    """Templates matched against one graph; ``taken`` are the nodes that belong to calls already (fx metadata)."""

    def __init__(self, graph: onnx.GraphProto, maps: GraphMaps, taken: set[int],
                 templates: Sequence[Template], opset: int | None = None, bare: Sequence[object] = ()) -> None:
        """``opset``: the graph's ONNX opset, whose attribute defaults are filled in on both sides of a match
        (``recognise_templates.attribute_defaults``; None: none are); ``bare``: the nodes as the scan read them
        (``ScanResult.bare``, ``node_keys``)."""
        self.graph, self.maps, self.taken, self.opset = graph, maps, set(taken), opset
        self._keys, kinds, full = node_keys(graph, maps, opset, bare)
        present = set(self._keys)
        prepared = prepare(templates, opset, list_lengths(templates, present, opset))
        self.by_sink, self._template_keys, self._chains = prepared.by_sink, prepared.keys, prepared.chains
        self.written, self._leaves, self._lengths = prepared.written, prepared.leaves, ListLengths()
        self.attributes = NodeAttributes(graph, opset, full, self._keys)
        self.constants = GraphConstants(graph, maps, self.taken, self._keys)
        self._signatures = NodeSignatures(maps, kinds, full, self.constants)
        self._sids = self._signatures.of  # each node's signature as a number (``recognise_nodes``)
        # a multi-node template one of whose nodes (other than one the optimizer may fold) has a key no node of this
        # graph has cannot match here (the 100k Llama replica's residual Adds tried 9 templates each, 6 of them so)
        self._absent = {name for name, keys in self._template_keys.items() if len(keys) > 1 and any(
            k not in present for k, f in zip(keys, prepared.foldable[name]) if not f)}
        count = len(self._signatures.first)
        self._contexts: list[tuple[object, ...] | None] = [None] * count  # per signature: what makes each operand
        self._plausible: tuple[list[list[list[Template]] | None], ...] = ([None] * count, [None] * count)
        self._one_node: list[bool | None] = [None] * count  # per signature: whether a one-node match is one per node
        self._aliases: dict[tuple[str, ...], list[Template]] = {}
        self._types: dict[str, dict[str, str]] = {}  # target -> parameter -> schema type
        self._verdicts: dict[tuple[object, ...], Verdict] = {}  # (``_verdict``)
        self._deep: dict[tuple[int, tuple[int, ...]], list[tuple[list[Template], tuple[int, ...]]]] = {}
        self._readers = FirstReaders(maps)  # value -> the first node reading it
        self._later: set[int] = set()  # anchors of calls that reuse a common subexpression of an earlier call
        self._twins: dict[tuple[str, frozenset[tuple[Key, int]]], list[int]] = {}  # (``twin_escapes``)
        self._verdict_of = partial(_verdict, self)  # (what ``recognise_narrow`` narrows a verdict with, and by what
        self._says = ConstantNames(self.constants.is_constant, self.maps.parameters)  # a constant's name says)
        self.wiring: dict[int, tuple[str, dict[int, str]]] = {}  # first node -> template, x -> value (as matched)

    def run(self) -> list[Recognised]:
        return [Recognised(n, *v) for n, v in zip(*self.calls())]

    def calls(self) -> tuple[list[tuple[int, ...]], list[Verdict]]:
        """The calls found, in graph order: each call's nodes, and its verdict (one object for the calls of one
        signature): ``run`` without an object per call (``recognised_calls`` makes the AtenCall)."""
        found_nodes: list[tuple[int, ...] | None] = [None] * len(self.graph.node)  # by a call's first node
        found: list[Verdict | None] = [None] * len(self.graph.node)
        sids = self._sids
        # where a multi-node template could end, per signature (``_groups`` of its last node, which the backward pass
        # meets first), picked out in C: 9.4k of the 100k Llama replica's nodes, not a Python loop over each
        last = dict(zip(sids, range(len(sids))))
        ending: list[list[list[Template]]] = [[]] * len(self._signatures.first)
        for sid, g in sorted(last.items(), key=itemgetter(1), reverse=True):
            ending[sid] = self._groups(g)
        for i in reversed(list(compress(range(len(sids)), map(ending.__getitem__, sids)))):
            if i not in self.taken:
                self._call_at(i, ending[sids[i]], found_nodes, found)
        for i in sorted(self._later, reverse=True):  # the calls that reuse what an earlier call computed (the later
            if i not in self.taken:  # reader of a common subexpression: ``recognise_shared``), once that call is taken
                self._call_at(i, ending[sids[i]], found_nodes, found, reuse=True)
        self._one_node_calls(found_nodes, found)
        # (placed by first node: graph order without a sort; a call's nodes are no other call's)
        return [n for n in found_nodes if n is not None], [v for v in found if v is not None]

    def _call_at(self, i: int, groups: list[list[Template]], found_nodes: list[tuple[int, ...] | None],
                 found: list[Verdict | None], reuse: bool = False) -> None:
        """The multi-node call ending at node ``i``, if one of ``groups`` fits there, placed by its first node."""
        fits: list[tuple[Template, _Match]] = []
        for group in self._feeders(i, groups):
            t = group[0]
            if fits and len(t.nodes) < len(fits[0][0].nodes):
                break
            m = self._match(t, i, 1 if reuse else 2, reuse)
            if m is not None and (not fits or _same_nodes(m, fits[0][1])):
                fits += [(u, m) for u in group if self._lengths.fit(u, m.attributes)]  # (same body: candidates)
        if fits and (not any(t.name in self._chains for t, _m in fits)  # (chains: left to the one-node pass, unless
                     or any(map(self.attributes.casts_to_its_own_type, fits[0][1].nodes.values()))  # a Cast to its
                     or inside_named(self.maps.outputs, fits[0][0], fits[0][1].nodes)):  # type, or named inside)
            first = fits[0][1]
            members = self._take(set(first.nodes.values()) | first.extra)
            verdict = _verdict(self, [t for t, _ in fits], first)
            if len(verdict[1]) > 1:  # (narrowed by the names of its output and of the constants it reads)
                verdict = narrowed(self._verdict_of, fits, output_name(self.maps.outputs, fits[0][0], first.nodes),
                                   reads_keep(fits, self.maps.inputs, self._says)) or verdict
            found_nodes[members[0]], found[members[0]], self.wiring[members[0]] = members, verdict, (fits[0][0].name,
                                                                                              first.outside)

    def _one_node_calls(self, found_nodes: list[tuple[int, ...] | None], found: list[Verdict | None]) -> None:
        """The one-node calls, placed in ``found_nodes`` and ``found`` by their first node."""
        seen: dict[int, Verdict | ByName | None] = {}
        # signatures whose every node is a call of their verdict, of the node alone (no Constant node read: ``_take``),
        # known after their first node: one look-up each other node (0.026 -> 0.017 s at 100k nodes, CPU, best of 5);
        # a body that fits several targets is narrowed at each node by the names of its values (``ByName``)
        alone: dict[int, Verdict | ByName] = {}
        sids, signatures, keys, taken = self._sids, self._signatures, self._keys, self.taken
        for i in range(len(found) - 1, -1, -1):  # backwards: a Reshape takes the Concat that computes its shape
            if i in taken or keys[i][1] == CONSTANT:
                continue
            verdict = alone.get(sids[i])
            if verdict is not None:
                taken.add(i)
                found_nodes[i], found[i] = (i,), verdict.at(i) if isinstance(verdict, ByName) else verdict
                continue
            # a one-node body, or a longer one whose other nodes the optimizer folded (a MatMul reading a constant
            # weight is matmul, or linear without bias whose Transpose was folded): every such template is a candidate.
            # What fits depends on the node's signature alone where no operand is computed (``_alike``): found once
            # per signature (the 100k Llama replica: 79,669 one-node calls, of 46 signatures in all)
            sid = sids[i]
            alike = self._alike(sid)
            verdict = seen.get(sid, _UNSEEN) if alike else _UNSEEN
            fits: list[tuple[Template, _Match]] = []  # (none where the verdict is read again: it computes nothing)
            if verdict is _UNSEEN:
                fits = [(u, m) for group in self._groups(i, single=True) for m in [self._match(group[0], i, 1)]
                        if m is not None and len(m.nodes) == 1 for u in group if self._lengths.fit(u, m.attributes)]
                verdict = by_name(self._verdict_of, fits, _verdict(self, [t for t, _ in fits], fits[0][1]), self._says,
                                  self.maps.inputs, self.maps.outputs) if fits else None
                if alike:
                    seen[sid] = verdict
                    if verdict is not None and not signatures.reads_constant_node(sid):
                        alone[sid] = verdict
            if verdict is not None:
                nodes = self._take({i} | (fits[0][1].extra if fits else set()))
                found_nodes[nodes[0]], found[nodes[0]] = nodes, _at(verdict, i)

    def _take(self, members: set[int]) -> tuple[int, ...]:
        """A call's nodes, taken: ``members`` and the Constant nodes that belong to it (a Constant node belongs to
        the call of its first reader: the exporter makes it there, and later calls reuse it: a noopt slice's bound,
        read again by the next Sub)."""
        for g in list(members):
            for value in self.maps.inputs[g]:
                k = self.constants.nodes.get(value)
                if k is not None and k not in self.taken and k not in members \
                        and self._readers.first(value, g) in members:
                    members.add(k)
        self.taken |= members
        return tuple(sorted(members))

    # --- matching ---------------------------------------------------------------------------------------------------

    def _match(self, t: Template, anchor: int, least: int = 2, reuse: bool = False) -> _Match | None:
        """``t`` matched with its last node at ``anchor``, keeping at least ``least`` of its nodes (or all, if
        fewer): the others may be folded. ``reuse``: nodes another call took may be matched too, as a part shared
        with it (``recognise_shared``), and the rest kept."""
        last = len(t.nodes) - 1
        m = _Match({last: anchor}, set(), {}, {}, set())
        used = {anchor: last}
        outside = m.outside
        stack = [last]
        while stack:
            j = stack.pop()
            g = m.nodes[j]
            if not self._node_fits(t, j, g, m):
                return None
            tin = t.nodes[j].inputs
            for ref, value in zip(tin, self.maps.inputs[g]):
                if ref.kind == "-":
                    if value:
                        return None
                elif ref.kind == "x":
                    if outside.setdefault(ref.a, value) != value or not value:
                        return None
                elif ref.kind == "c":
                    if m.constants.setdefault(ref.a, value) != value:
                        return None
                    if self.constants.fits(t.constants[ref.a], value):
                        continue
                    computed = (self.constants.computed(value, reads(t, ref.a), self._readers.first(value, g) == g)
                                if computable(t.constants[ref.a]) else None)
                    if computed is None or computed & m.extra:
                        return None
                    m.extra |= computed
                else:
                    h = self.maps.producer.get(value)
                    if h is None or value in self.constants.nodes:
                        if not self.constants.is_constant(value) or not foldable(t.nodes[ref.a], least > 1):
                            return None
                        m.folded.add(ref.a)
                        continue
                    if h in self.taken and self._leaves[t.name][ref.a] and self._node_fits(t, ref.a, h, m):
                        m.shared.add(ref.a)  # made by another call from the same operands, and reused here
                        continue
                    if (h in self.taken and not reuse) or self.maps.outputs[h].index(value) != ref.b:
                        return None
                    if ref.a in m.nodes:
                        if m.nodes[ref.a] != h:
                            return None
                    elif used.setdefault(h, ref.a) != ref.a:
                        return None
                    else:
                        m.nodes[ref.a] = h
                        stack.append(ref.a)
        if reuse and not _reused(self.taken, t, m):
            return None
        unshare(self.maps, t, m.nodes, m.shared, self._leaves[t.name], self._readers)
        if len(m.nodes) + len(m.folded - m.nodes.keys()) + len(m.shared - m.nodes.keys()) != len(t.nodes) \
                or m.folded & m.nodes.keys() or len(m.nodes) < min(least, len(t.nodes)):
            return None
        for j in m.folded:  # folded: its operand was a constant (silu's Sigmoid reads what its Mul reads: not one)
            if any(r.kind == "x" and r.a in outside and not self.constants.is_constant(outside[r.a])
                   for r in t.nodes[j].inputs):
                return None
        if len(m.nodes) > 1 and splits_calls(self.maps.outputs, t, m.nodes):
            return None  # a value made and read inside is named as a call's output: two calls (``recognise_names``)
        if _closed(self.maps, t, m, self._leaves[t.name]):
            return m
        twins = twin_escapes(self.maps, self._keys, t, self._template_keys[t.name], m.nodes, self._readers,
                             self._twins) if least > 1 and not reuse else False
        if twins is None:  # a later reader of an earlier call's common subexpression: matched again after the pass
            self._later.add(anchor)
        return m if twins else None

    def _groups(self, g: int, single: bool = False) -> list[list[Template]]:
        """The template groups whose last node could be node ``g``, judged by its key and what makes each of its
        operands (the key of the producing node, a constant, an outside value): a function of its signature, so
        worked out once per signature (a model's repeated layers share theirs) and most nodes try one group or none
        (at 10k nodes: 86k tries before, 9k after). ``single``: the groups of a one-node match (every node of the
        template but the last folded), else the multi-node groups alone."""
        sid = self._sids[g]
        cached = self._plausible[single]
        got = cached[sid]
        if got is None:
            ctx = self._context(sid)
            got = cached[sid] = [
                group for group in self.by_sink.get(self._keys[g], ())
                if (single or (len(group[0].nodes) > 1 and group[0].name not in self._absent))
                and _plausible(group[0], self._template_keys[group[0].name], list(ctx), single)
                and self.attributes.fixed_fit(group[0], g)]
        return got

    def _feeders(self, g: int, groups: list[list[Template]]) -> list[list[Template]]:
        """Of the multi-node groups plausible at node ``g`` (``_groups``), those whose nodes feeding the last one could
        be the nodes making ``g``'s operands: their key and fixed attributes, what makes their own operands and their
        constants (``_plausible`` one node up). A function of the signatures of ``g`` and of the nodes making its
        operands, worked out once per such tuple (the 100k Llama replica's rotary Adds: 15.6k tries of five templates
        that could not fit, out of 21.9k); a leaf that cannot fit may be another call's, shared, so its group is tried
        where it is taken (add.Tensor with alpha at those Adds, whose Mul reads a cos table: 3.1k tries fewer)."""
        producer, nodes, sids, ins = self.maps.producer, self.constants.nodes, self._sids, self.maps.inputs[g]
        makers = tuple([sids[h] if (h := producer.get(v)) is not None and v not in nodes else -1 for v in ins])
        key = (sids[g], makers)
        got = self._deep.get(key)
        if got is None:
            got = self._deep[key] = [(gr, n) for gr in groups if (n := self._feeders_fit(gr[0], g)) is not None]
        return [group for group, need in got if all(producer[ins[k]] in self.taken for k in need)]

    def _feeders_fit(self, t: Template, g: int) -> tuple[int, ...] | None:
        """None if ``t`` cannot fit at ``g``, else the operands whose makers must be taken (shared) for it to fit."""
        keys, leaves, need = self._template_keys[t.name], self._leaves[t.name], []
        for k, (ref, value) in enumerate(zip(t.nodes[-1].inputs, self.maps.inputs[g])):
            h = self.maps.producer.get(value) if ref.kind == "n" else None
            if h is None or value in self.constants.nodes:
                continue  # (not a node's: folded, or no match, as ``_match`` decides)
            if self._keys[h] != keys[ref.a] or not self.attributes.fixed_fit(t, h, ref.a):
                return None
            if not _plausible(t, keys, list(self._context(self._sids[h])), node=ref.a) \
                    or not _constants_fit(t, ref.a, self.maps.inputs[h], self.constants):
                need.append(k)  # (where a leaf: it must be taken)
                if not leaves[ref.a]:
                    return None
        return tuple(need)

    def _context(self, sid: int) -> tuple[object, ...]:
        """What makes each operand of the nodes of signature ``sid``: the producer's key, a constant ``c``, an
        outside value ``x``, nothing ``-`` (read off the first such node: the signature holds it)."""
        ctx = self._contexts[sid]
        if ctx is None:
            producer, initializers = self.maps.producer, self.maps.initializers
            ctx = self._contexts[sid] = tuple(
                self._keys[h] if (h := producer.get(value)) is not None else "c" if value in initializers
                else "-" if not value else "x" for value in self.maps.inputs[self._signatures.first[sid]])
        return ctx

    def _alike(self, sid: int) -> bool:
        """Whether a one-node match at any node of signature ``sid`` reads only what the signature holds (the node's
        key and attributes, each operand as a constant's value or as which operand it repeats, which outputs nobody
        reads): not where a template may take an operand made by shaping ops as a computed constant (the match walks
        the graph there)."""
        got = self._one_node[sid]
        if got is None:
            g = self._signatures.first[sid]
            constant_at = {k for group in self._groups(g, single=True) for k, r in enumerate(group[0].nodes[-1].inputs)
                           if r.kind == "c"}
            got = True
            for k, (value, made_by) in enumerate(zip(self.maps.inputs[g], self._context(sid))):
                if k in constant_at and value and not self.constants.is_constant(value) \
                        and isinstance(made_by, tuple) and made_by[1] in SHAPING:
                    got = False
            self._one_node[sid] = got
        return got

    def _node_fits(self, t: Template, j: int, g: int, m: _Match) -> bool:
        if self._keys[g] != self._template_keys[t.name][j]:
            return False
        tn = t.nodes[j]
        if not tn.attributes:
            return True
        attrs = self.attributes.of(g)
        for name, slot in tn.attributes:
            if slot.masked:
                m.attributes[(j, name)] = attrs[name]
            elif attrs[name] != slot.value:
                return False
        return True


_UNSEEN: Any = object()


def _at(verdict: Verdict | ByName, i: int) -> Verdict:
    """The verdict of the call of graph node ``i``: a body's, or narrowed by the names of node ``i``'s values."""
    return verdict.at(i) if isinstance(verdict, ByName) else verdict


def _verdict(matcher: Matcher, templates: list[Template], first: _Match) -> Verdict:
    """The templates that fit one body (public aliases dropped), their targets, and the arguments the first one's
    evidence gives back where there is one target."""
    names, base = tuple(t.name for t in templates), templates[0]
    if names not in matcher._aliases:
        matcher._aliases[names] = without_aliases(templates)
    templates = matcher._aliases[names]
    targets = tuple(sorted({t.target for t in templates}))
    if len(targets) > 1:
        templates = as_written(templates, base, first.nodes, matcher.written, matcher._template_keys,
                               matcher.attributes)
        targets = tuple(sorted({t.target for t in templates}))
    if len(targets) != 1:
        return tuple(t.name for t in templates), targets, (), ()
    # one verdict for the calls of one body whose masked literals are alike (a constant's code says its canonical
    # value: ``recognise_nodes``): the 100k Llama replica's 6.2k multi-node calls are 5 verdicts
    code = matcher._signatures.code
    key = (tuple(t.name for t in templates), tuple([(k, code.get(v)) for k, v in first.constants.items()]),
           repr(sorted(first.attributes.items())) if first.attributes else "")
    got = matcher._verdicts.get(key)
    if got is None:
        templates = most_specific(templates)
        t = templates[0]
        constants = {k: matcher.constants.value(v) for k, v in first.constants.items()
                     if t.constants[k].masked and matcher.constants.is_constant(v)}
        args = tuple(sorted(template_arguments(t, constants, first.attributes, matcher._types).items()))
        got = matcher._verdicts[key] = (tuple(t.name for t in templates), targets, args, ())
    return got


def _plausible(t: Template, keys: list[Key], ctx: list[object], single: bool = False, node: int = -1) -> bool:
    """Whether the last node of ``t`` (or ``node``) could read what ``ctx`` says its operands are (see
    ``Matcher._groups``); ``single``: with every other node of ``t`` folded into a constant; else another node must be
    there, so one operand at least of the last node is made by a node of the template's kind (a MatMul of a weight is
    no linear of two nodes: at 100k nodes, 11k tries of the Llama replica's MatMuls saved)."""
    made = single or len(t.nodes) < 2 or node != -1
    operands = t.nodes[node].inputs
    for ref, what in zip(operands, ctx):
        if ref.kind == "n":
            constant = _constant(what)
            if (what != keys[ref.a] or single) and not constant:
                return False
            made = made or what == keys[ref.a]
            if constant and what != keys[ref.a] and not _folded_fits(t.nodes[ref.a].inputs, operands, ctx):
                return False
        elif (ref.kind == "-" and what != "-") or (ref.kind == "x" and what == "-"):
            return False
        elif ref.kind == "c" and what != "c" and not (isinstance(what, tuple) and (
                what[1] == CONSTANT or (computable(t.constants[ref.a]) and what[1] in SHAPING))):
            return False  # a constant operand: an initializer, a Constant node, or computed by shaping ops
    return made


def _constant(what: object) -> bool:
    return what == "c" or (isinstance(what, tuple) and what[1] == CONSTANT)


def _folded_fits(folded: Sequence[Ref], operands: Sequence[Ref], ctx: list[object]) -> bool:
    """Whether a node reading ``operands`` (made as ``ctx`` says) can read a template node folded into a constant
    whose own operands are ``folded``: an outside value both read is a constant (``Matcher._match`` checks this of the
    match; here it is known of a signature, before any try: a residual ``Add`` of the Llama replica whose ``Mul`` reads
    a weight tried ``add.Tensor`` with ``alpha`` and its folded ``CastLike`` of the ``Mul``'s other operand, 3.1k
    tries at 100k nodes, none fitting)."""
    outside = {r.a for r in folded if r.kind == "x"}
    return not outside or all(_constant(what) for r, what in zip(operands, ctx) if r.kind == "x" and r.a in outside)


def _constants_fit(t: Template, j: int, values: list[str], constants: GraphConstants) -> bool:
    """Whether node ``j`` of ``t`` could read ``values`` where it reads a constant: it fits, or may be computed."""
    return all(r.kind != "c" or computable(t.constants[r.a]) or constants.fits(t.constants[r.a], v)
               for r, v in zip(t.nodes[j].inputs, values))


def _same_nodes(a: _Match, b: _Match) -> bool:
    return set(a.nodes.values()) | a.extra == set(b.nodes.values()) | b.extra


def _reused(taken: set[int], t: Template, m: _Match) -> bool:
    """Whether the nodes of ``m`` that another call took (``taken``) are a part of the body the rest reads (each of its
    own operands made by that part, or from outside): moved to ``m.shared``."""
    reused = {j for j, g in m.nodes.items() if g in taken}
    for j in reused:
        del m.nodes[j]
    m.shared |= reused
    m.extra -= taken  # (a constant the shared part computes is that call's)
    return bool(reused) and not any(r.kind == "n" and r.a in m.nodes for j in reused for r in t.nodes[j].inputs)


def _closed(maps: GraphMaps, t: Template, m: _Match, leaves: list[bool]) -> bool:
    """Values made inside the body are read only inside it (outputs of the template aside); ``leaves``: which nodes
    of ``t`` are ``leaf`` nodes."""
    uses: dict[tuple[int, int], int] = {}
    for j in m.nodes:
        for r in t.nodes[j].inputs:
            if r.kind == "n" and r.a in m.nodes:
                uses[(r.a, r.b)] = uses.get((r.a, r.b), 0) + 1
    outputs = set(t.outputs)
    for j, g in m.nodes.items():
        if j != len(t.nodes) - 1 and leaves[j]:
            continue  # a common subexpression made here and reused by later calls (``unshare``)
        for o, value in enumerate(maps.outputs[g]):
            if (j, o) in outputs or not value:
                continue
            if maps.read_count[value] != uses.get((j, o), 0) or value in maps.graph_outputs:
                return False
    return True


def recognised_calls(proto: onnx.ModelProto, calls: Sequence[AtenCall], maps: GraphMaps,
                     bare: Sequence[object] = ()) -> list[AtenCall]:
    """Aten calls recovered from the main-graph nodes that no call of ``calls`` (fx metadata) holds; ``bare``: the
    nodes as the index's scan read them (``ScanResult.bare``), so that they are not read again."""
    taken = {int(p[0]) for c in calls if c.scope == MAIN for p in c.node_paths if len(p) == 1}
    graph = proto.graph
    out: list[AtenCall] = []
    templates = load_templates()
    if len(taken) >= len(graph.node) or not templates:
        return []
    # one verdict's target, raw target and FX text tail: by the verdict (the calls of one signature share its object)
    # and by its targets and arguments' tuple (every verdict stays alive in ``verdicts``: the ids are theirs)
    texts: dict[int, tuple[str, str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}
    # the optimizer's rules that made a fused body (``Template.rules``): a call of it carries them, as one with its
    # metadata does, so that its values are said to be the rewriter's, not torchlib's; each rule once, as a scan reads
    # them (``add_rules``: the catalogue holds one rule_name metadata value as the export wrote it)
    rules_of: dict[str, list[str]] = {}
    for t in templates:
        for value in t.rules:
            add_rules(rules_of.setdefault(t.name, []), value)
    shared: dict[tuple[tuple[str, ...], int], tuple[str, str, str]] = {}
    matcher = Matcher(graph, maps, taken, templates, onnx_opset(proto), bare)
    nodes, verdicts = matcher.calls()
    wiring = matcher.wiring
    protos = graph.node
    make = recognised_call
    for k, (members, verdict) in enumerate(zip(nodes, verdicts)):
        got = texts.get(id(verdict))
        if got is None:
            templates_, candidates, arguments, ruled_out = verdict
            key = (candidates, id(arguments))
            text = shared.get(key)
            if text is None:
                target = target_of(candidates)
                raw = "torch.ops." + target.replace("::", ".", 1) if len(candidates) == 1 else target
                kwargs = ", ".join(f"{p}: {v!r}" for p, v in arguments)
                text = shared[key] = (target, raw, f" : [num_users=1] = call_function[target={raw}](args = (), "
                                                   f"kwargs = {{{kwargs}}})")
            rules = tuple(dict.fromkeys(r for n in templates_ for r in rules_of.get(n, ()))) if rules_of else ()
            got = texts[id(verdict)] = (*text, templates_, candidates, ruled_out, rules)
        target, raw, tail, names, candidates, ruled_out, rules = got
        # its name, FX text and (one node) paths made when read (``RecognisedCall``)
        out.append(make(k, members, raw, target, names, candidates, tail, protos, ruled_out, rules,
                        wiring.get(members[0]) if len(members) > 1 else None))
    return out


def recognise(graph: onnx.GraphProto, maps: GraphMaps, taken: set[int],
              templates: Sequence[Template], opset: int | None = None) -> list[Recognised]:
    """The calls recovered from the nodes of ``graph`` outside ``taken``, in graph order; ``opset``: the graph's
    ONNX opset (``onnx_opset``), whose attribute defaults a match fills in."""
    if len(taken) >= len(graph.node) or not templates:
        return []
    return Matcher(graph, maps, taken, templates, opset).run()


def onnx_opset(proto: onnx.ModelProto) -> int | None:
    """The version of the default ONNX domain the model imports (None if it imports none)."""
    return next((int(o.version) for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
