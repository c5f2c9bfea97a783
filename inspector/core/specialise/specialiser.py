"""Specialised values: literals that differ between members of a family, or that derive from aten arguments.

For each family (the overloads of a local function, or the aten calls of one target) the members are grouped
by template fingerprint; members of one template are aligned node by node (their bodies have the same shape)
and every literal slot whose value varies is reported. Bodies with no sibling of the same template report all
their literals. For aten calls, each literal is linked to the non-tensor aten arguments it plausibly came from,
by explicit evidence rules only (``core.specialise.links``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, count
from typing import TYPE_CHECKING, Any, TypeAlias

from inspector.core.aten.schemas import BoundArgument, SchemaCatalogue
from inspector.core.aten.torchlib import torchlib_for
from inspector.core.bodies.body import Body, function_body, group_body
from inspector.core.bodies.bodykey import group_keys
from inspector.core.bodies.fingerprint import Fingerprints, fingerprint
from inspector.core.bodies.literals import Literal, attribute_value, body_literals
from inspector.core.model.calls import AtenCall
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import Family, ModelIndex
from inspector.core.model.keys import FunctionKey, MainGraph
from inspector.core.model.signature import call_signature
from inspector.core.model.walk import NodePath, resolve_path, subgraphs
from inspector.core.specialise.links import (
    ArgLink,
    BodyFlow,
    GraphShapes,
    Shape,
    explain_shape,
    link,
    literal_place,
)
from inspector.core.specialise.onnx_defaults import is_default, model_opsets
from inspector.core.util.progress import Progress

if TYPE_CHECKING:
    from inspector.core.specialise.function_calls import FunctionCall

Member: TypeAlias = FunctionKey | AtenCall
"""What shares a body in a family: a function overload, or an aten call."""


@dataclass(slots=True)
class SpecialisedValue:
    """A literal of a body found specialised, with its values across the family and its links."""

    literal: Literal
    varies: bool  # differs between bodies of one template in this family
    family_values: list[Any]  # the distinct values this slot takes across the template's bodies
    links: list[ArgLink] = field(default_factory=list)
    # shape-specialised: computed from an input shape at trace time (wrong for another shape), and how
    shape: str | None = None
    # the trace_only torchlib function that computed the value at export time ("aten_transpose"), if known
    baked_by: str | None = None
    # parametric: the value each call site passes, ``(where, value)`` in graph order (TorchScript's per-instance eps)
    call_values: list[tuple[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        lit = self.literal
        return {
            "node": "/".join(str(p) for p in lit.path) if lit.path else None,
            "op_type": lit.op_type or None,
            "kind": lit.kind,
            "attribute" if lit.kind in ("attribute", "constant", "parametric") else "constant": lit.name,
            "value": lit.value,
            "varies": self.varies,
            "family_values": self.family_values,
            "aten_arguments": [{"parameter": a.parameter, "value": _jsonable(a.value), "rule": a.rule,
                                "place": a.place} for a in self.links],
        } | ({"refers_to": lit.ref} if lit.ref else {}) \
            | ({"read_by": "/".join(str(p) for p in lit.reader)} if lit.reader else {}) \
            | ({"shape_specialised": self.shape} if self.shape else {}) \
            | ({"baked_by": f"torchlib {self.baked_by} (trace_only)"} if self.baked_by else {}) \
            | ({"call_sites": [{"call": w, "value": _jsonable(v)} for w, v in self.call_values]}
               if self.call_values else {})


@dataclass(slots=True)
class BodyAnalysis:
    """One distinct body of a family (a function overload, or the calls of one target sharing a body)."""

    fingerprints: Fingerprints
    body: Body
    members: list[Member]
    literals: list[Literal]
    specialised: list[SpecialisedValue] = field(default_factory=list)
    bound: list[BoundArgument] = field(default_factory=list)
    # literals of a lone body not listed as specialised: attributes equal to their ONNX schema default
    left_out: list[SpecialisedValue] = field(default_factory=list)
    # of the body as ``fold`` writes it, for review keys that hold across fold (``review.fold_keys``), on demand
    fold_fingerprints: Fingerprints | None = None


_Counted: TypeAlias = tuple[Sequence[AtenCall], int, list[tuple[int, int]]]
"""An overload's calls as analysed, how many, and ``(place of a body, how many of them use it)`` in body order."""


@dataclass(slots=True)
class FamilyAnalysis:
    """A family's bodies, each with its specialised values."""

    family: Family
    bodies: list[BodyAnalysis]

    _where: dict[Any, int] | None = field(default=None, repr=False, compare=False)
    _counted: dict[int, _Counted] | None = field(default=None, repr=False, compare=False)

    def bodies_of(self, members: Sequence[Member]) -> list[BodyAnalysis]:
        """The bodies the given members use, in analysis order; linear in ``members``, not in the family."""
        return [b for b, _n in self.bodies_counted(members)]

    def bodies_counted(self, members: Sequence[Member]) -> list[tuple[BodyAnalysis, int]]:
        """``(body, how many of members use it)`` for the bodies the given members use, in analysis order; one
        look-up per member, none for the calls of one overload as analysed (counted then: 0.1 s of a 100k-node
        summary was these look-ups)."""
        known = self._counted.get(id(members)) if self._counted is not None else None
        if known is not None and known[0] is members and known[1] == len(members):
            return [(self.bodies[at], n) for at, n in known[2]]
        where = self._where
        if where is None:
            # aten calls by identity, function keys (tuples) by value; built once per analysis
            where = self._where = {}
            for i, b in enumerate(self.bodies):
                for m in b.members:
                    where.setdefault(m if type(m) is FunctionKey else id(m), i)
        counts: dict[int, int] = {}
        get = where.get
        for m in members:
            at = get(m if type(m) is FunctionKey else id(m))
            if at is not None:
                counts[at] = counts.get(at, 0) + 1
        return [(self.bodies[at], counts[at]) for at in sorted(counts)]


PAUSE_EVERY = 256  # calls analysed between two calls of ``Specialiser.pause``


class Specialiser:
    """Analyses families of one model index; graph maps and the schema catalogue are built once."""

    def __init__(self, index: ModelIndex, catalogue: SchemaCatalogue | None = None) -> None:
        self.index = index
        self.catalogue = catalogue or SchemaCatalogue.default()
        # called every PAUSE_EVERY calls of a family: an app running analyses in the background lets them wait
        # there while what the user waits for runs (a 20k-call family takes 0.3 s at 100k nodes)
        self.pause: Callable[[], None] | None = None
        # the checkpoint the main graph's maps and shapes are first read through (``core.util.progress``): the app
        # passes its job's, so that reading 100k nodes' worth is done in steps
        self.progress: Progress | None = None
        self._shapes: GraphShapes | None = None
        self._opsets: dict[str, int] | None = None
        # branch and loop bodies (If/Loop/Scan) by node path: their maps, and shapes as seen from inside them
        self._inner: dict[NodePath, tuple[GraphMaps, GraphShapes]] = {}
        self._function_calls: dict[FunctionKey, FunctionCall | None] = {}
        # the group key of each call of the families keyed ahead (``key_calls``), by id of the call, as a number that
        # equal keys share; and those families, by id
        self._keys: dict[int, int | None] = {}
        self._keyed: set[int] = set()

    @property
    def maps(self) -> GraphMaps:
        """The main graph's maps, with the names it declares if read now (the shapes look names up in them)."""
        return self.index.graph_maps(progress=self.progress, declarations=True)

    @property
    def shapes(self) -> GraphShapes:
        """Static shapes of the main graph's typed values (each read on first use)."""
        if self._shapes is None:
            index, progress = self.index, self.progress
            self._shapes = GraphShapes(index.proto.graph, progress=progress,
                                       names=lambda: index.declared_names(progress))
        return self._shapes

    def is_onnx_default(self, body: Body, lit: Literal) -> bool:
        """True when the attribute literal equals its operator's schema default for the model's opset."""
        if self._opsets is None:
            self._opsets = model_opsets(self.index.proto)
        try:
            node = resolve_path(body.nodes, lit.path)
        except KeyError:
            return False
        domain = "" if node.domain == "ai.onnx" else node.domain
        return is_default(node.op_type, domain, lit.name, lit.key, self._opsets.get(domain))

    def call_values(self, members: Sequence[Member], ref: str) -> list[tuple[str, Any, str]]:
        """``(where, value, key)`` of the attribute ``ref`` at every call site of the function members, in order."""
        out: list[tuple[str, Any, str]] = []
        functions = self.index.functions
        for key in members:
            if isinstance(key, AtenCall):
                continue
            for site in functions.calls.get(key, ()):
                caller = functions.functions.get(site.caller) if isinstance(site.caller, FunctionKey) else None
                nodes = caller.node if caller is not None else self.index.proto.graph.node
                try:
                    node = resolve_path(nodes, site.path)
                except KeyError:
                    continue
                attr = next((a for a in node.attribute if a.name == ref), None)
                if attr is not None and not attr.ref_attr_name:
                    value, vkey = attribute_value(attr)
                    out.append((site.where, value, vkey))
        return out

    def function_call(self, key: FunctionKey) -> FunctionCall | None:
        """An aten function's target, first call's arguments and shapes (``function_calls``), made once."""
        if key not in self._function_calls:
            # (here: an aten function's first call is read only for a model with local functions; start-up)
            from inspector.core.specialise.function_calls import function_call

            self._function_calls[key] = function_call(self.index.functions, key, self.shapes, self.catalogue)
        return self._function_calls[key]

    def aten_context(self, member: Member | None) -> tuple[str, Mapping[str, Shape] | None, bool]:
        """``(target, shapes, rewritten)`` the link rules read for a body of ``member``: an aten call's, or an
        aten function's first call's; ``("", None, False)`` for any other member."""
        if isinstance(member, AtenCall):
            return member.target, self.maps_of(member)[1], bool(member.rule_names)
        called = self.function_call(member) if member is not None else None
        return (called.target, called.shapes, called.rewritten) if called is not None else ("", None, False)

    def body_of_call(self, call: AtenCall) -> Body:
        """The call's group body, in the main graph or in the branch or loop body that holds all its nodes."""
        return group_body(call, self.maps_of(call)[0])

    def maps_of(self, call: AtenCall) -> tuple[GraphMaps, GraphShapes]:
        """Maps and shapes of the graph that holds the call's nodes (the main graph when they are not in one)."""
        prefixes = {p[:-1] for p in call.node_paths}
        prefix = prefixes.pop() if len(prefixes) == 1 else ()
        if not prefix:
            return self.maps, self.shapes
        found = self._inner.get(prefix)
        if found is not None:
            return found
        # outermost first, each level once (iteratively: subgraphs may nest hundreds deep)
        maps, shapes = self.maps, self.shapes
        for depth in range(2, len(prefix) + 1, 2):
            step = prefix[:depth]
            known = self._inner.get(step)
            if known is None:
                index, attr = step[-2], step[-1]
                graph = None
                if isinstance(index, int) and index < len(maps.graph.node):
                    graph = next((g for s, g in subgraphs(maps.graph.node[index]) if s == attr), None)
                if graph is None:
                    return self.maps, self.shapes
                known = self._inner[step] = (GraphMaps(graph, maps, step), GraphShapes(graph, shapes))
            maps, shapes = known
        return maps, shapes

    def in_one_graph(self, call: AtenCall) -> bool:
        """All the call's nodes sit in one graph of the main scope (the main graph, or one branch or loop body)."""
        paths = call.node_paths
        if not paths or not isinstance(call.scope, MainGraph):
            return False
        if len(paths) == 1:  # most calls
            return True
        graph = paths[0][:-1]
        return all(p[:-1] == graph for p in paths)

    def key_calls(self, families: Iterable[Family]) -> None:
        """Make the group keys of the aten calls of ``families`` now, in one pass in graph order, for ``analyse`` of
        each of them to take. A family's calls lie all over a graph larger than the CPU's caches, so keying a family
        at a time reads the nodes in no order: keying the 79,670 calls of the Llama replica at 100k nodes took 0.38-0.40
        s family by family, 0.30-0.34 s in graph order (CPU, best of 3; in shuffled order 0.44-0.47). For a caller
        that analyses every family it shows (summary, report, check), not for one that analyses a family when asked.
        """
        todo = {id(f): f for f in families if f.kind == "aten_call" and id(f) not in self._keyed}
        if not todo:
            return
        every = self.index.provenance.calls  # in graph order (the order of their first nodes), recognised calls last
        lists = [ov.aten_calls for f in todo.values() for ov in f.overloads]
        if sum(map(len, lists)) == len(every):  # the families hold every call (each is in one family)
            ordered: Sequence[AtenCall] = every
        else:
            wanted = set(map(id, chain.from_iterable(lists)))
            ordered = [c for c in every if id(c) in wanted]
        # each key as a number equal keys share (``setdefault`` with a count, in C): the keys themselves (nested tuples
        # with the attributes' bytes) are not kept, and ``analyse`` looks numbers up instead of hashing keys again
        numbered: dict[Hashable, int | None] = {None: None}
        number = numbered.setdefault
        maps, pause, keys, counter = self.maps, self.pause, self._keys, count()
        for start in range(0, len(ordered), PAUSE_EVERY):
            chunk = ordered[start:start + PAUSE_EVERY]
            keys.update(zip(map(id, chunk), map(number, group_keys(chunk, maps), counter)))
            if pause is not None:
                pause()
        self._keyed.update(todo)

    def analyse(self, family: Family) -> FamilyAnalysis:
        bodies: dict[str, BodyAnalysis] = {}
        if family.kind == "function":
            for ov in family.overloads:
                if ov.function is not None and ov.function in self.index.functions.functions:
                    proto = self.index.functions.functions[ov.function]
                    self._add(bodies, ov.function, function_body(ov.function, proto))
        else:
            counted = self._analyse_calls(family, bodies)
        by_template: dict[str, list[BodyAnalysis]] = {}
        for b in bodies.values():
            by_template.setdefault(b.fingerprints.template, []).append(b)
        for group in by_template.values():
            _mark(group, self)
        analysis = FamilyAnalysis(family, list(bodies.values()))
        if family.kind != "function":
            analysis._counted = counted
        return analysis

    def _analyse_calls(self, family: Family, bodies: dict[str, BodyAnalysis]) -> dict[int, _Counted]:
        """Bind each aten call of ``family`` to its body in ``bodies``; each distinct body is built and fingerprinted
        once: calls with an equal group key share it. Returns how many calls of each overload each body has
        (``FamilyAnalysis.bodies_counted``), by id of the overload's list of calls."""
        at: dict[Hashable, int] = {}  # group key -> the body's place in ``bodies``
        places: dict[str, int] = {}  # fingerprint -> the body's place
        listed = list(bodies.values())
        maps, in_one_graph, pause = self.maps, self.in_one_graph, self.pause
        known = self._keys.__getitem__ if id(family) in self._keyed else None
        counted: dict[int, _Counted] = {}
        step = PAUSE_EVERY
        for ov in family.overloads:
            calls = ov.aten_calls
            counts: dict[int, int] = {}
            for start in range(0, len(calls), step):  # keyed a step at a time: no more work than that between pauses
                chunk = calls[start:start + step] if start or len(calls) > step else calls
                keys = map(known, map(id, chunk)) if known is not None else group_keys(chunk, maps)
                for k, (call, key) in enumerate(zip(chunk, keys), start):
                    if pause is not None and k % step == step - 1:
                        pause()
                    place = at.get(key) if key is not None else None
                    if place is None:
                        if key is None and not in_one_graph(call):
                            continue  # (a key is only made for a call of the main graph)
                        fp = self._add(bodies, call, self.body_of_call(call))
                        place = places.get(fp.full)
                        if place is None:
                            place = places[fp.full] = len(listed)
                            listed.append(bodies[fp.full])
                        if key is not None:
                            at[key] = place
                    else:
                        listed[place].members.append(call)
                    counts[place] = counts.get(place, 0) + 1
            counted[id(calls)] = (calls, len(calls), sorted(counts.items()))
        return counted

    def _add(self, bodies: dict[str, BodyAnalysis], member: Member, body: Body) -> Fingerprints:
        """Bind ``member`` to its body's analysis, analysing the body if it is the first of its fingerprint."""
        fp = fingerprint(body)
        b = bodies.get(fp.full)
        if b is None:
            b = bodies[fp.full] = BodyAnalysis(fp, body, [], body_literals(body))
            if isinstance(member, AtenCall):
                sig = call_signature(member, self.catalogue)
                # Python scalars passed to Tensor parameters (mul.Tensor's other=0.35) are baked in too.
                b.bound = [x for x in sig.bound if not x.parameter.is_tensor or _is_number(x.value)]
            else:
                called = self.function_call(member)
                b.bound = called.bound if called is not None else []
        b.members.append(member)
        return fp

    def analyse_all(self) -> list[FamilyAnalysis]:
        """Every family's analysis, in the index's order (their calls keyed first, ``key_calls``)."""
        families = self.index.families
        self.key_calls(families)
        return [self.analyse(f) for f in families]


def _mark(group: list[BodyAnalysis], specialiser: Specialiser) -> None:
    """Align the bodies of one template slot by slot and record what varies and what links to arguments.

    A slot is specialised when it varies, links to an aten argument, or sits in a body with no sibling; in such a
    lone body, attributes equal to their ONNX schema default (for the model's opset) are left out (kept in
    ``BodyAnalysis.left_out``) unless they vary or link.
    """
    values_by_slot: dict[tuple[int, Any], dict[str, Any]] = {}
    for b in group:
        for pos, lit in enumerate(b.literals):
            values_by_slot.setdefault((pos, lit.slot), {}).setdefault(lit.key, lit.value)
    lone = len(group) == 1
    for b in group:
        first = b.members[0] if b.members else None
        target, shapes, rewritten = specialiser.aten_context(first)
        args = {x.parameter.name: x.value for x in b.bound if x.provided}
        flow = BodyFlow(b.body, shapes) if shapes is not None and args else None
        lowering = next((e for e in torchlib_for(target) if not e.complex), None) if target else None
        # not when the optimizer's rewriter rewrote the call's nodes (then it, not torchlib, made the values)
        baked_by = lowering.function if lowering is not None and lowering.trace_only and not rewritten else None
        for pos, lit in enumerate(b.literals):
            distinct = values_by_slot[(pos, lit.slot)]
            varies = len(distinct) > 1
            links: list[ArgLink] = []
            shape: str | None = None
            if flow is not None and lit.kind != "parametric":
                place = literal_place(b.body, lit.path, lit.name, lit.kind, lit.op_type, flow)
                links = link(target, args, lit.value, place, flow)
                shape = explain_shape(target, args, lit.value, place, flow) or next(
                    (a.rule for a in links if a.parameter == "scale" and a.value is None), None)
            if lit.kind == "parametric" and lit.ref:
                calls = specialiser.call_values(b.members, lit.ref)
                seen: dict[str, Any] = {}
                for _where, value, key in calls:
                    seen.setdefault(key, value)
                spec = SpecialisedValue(lit, len(seen) > 1, list(seen.values()), [],
                                        call_values=[(w, v) for w, v, _k in calls])
                b.specialised.append(spec)
                continue
            if varies or links or shape or lit.kind == "parametric":
                b.specialised.append(SpecialisedValue(lit, varies, list(distinct.values()) if varies else [lit.value],
                                                      links, shape, baked_by))
            elif lone:
                spec = SpecialisedValue(lit, False, [lit.value], [], None, baked_by)
                if lit.kind == "attribute" and specialiser.is_onnx_default(b.body, lit):
                    b.left_out.append(spec)
                else:
                    b.specialised.append(spec)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # JSON has no inf/nan
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)
