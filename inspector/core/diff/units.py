"""The two sides of a diff: each model's main graph cut into *units* (``inspector.core.diff.cut``: what matching
works on), with what each unit reads and produces, its body and fingerprints built on first use."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
from operator import ne
from typing import Any

from onnx import TensorProto

from inspector.core.bodies.body import Body, function_body, function_body_by_use, function_form, group_body
from inspector.core.bodies.fingerprint import Fingerprints
from inspector.core.diff.bodies import in_use_order, order_fingerprint
from inspector.core.diff.cut import NO_CONSTANTS, UNREAD, GraphCut, Unit
from inspector.core.diff.follow import Follow, cut_pair
from inspector.core.diff.linking import SideLinks
from inspector.core.diff.values import same_content
from inspector.core.model.calls import NAME_SCOPES, NAMESPACE, AtenCall, split_target
from inspector.core.model.graph import GraphMaps, captured_names
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.model.walk import may_have_subgraphs
from inspector.core.util.progress import Progress


class Side:
    def __init__(self, index: ModelIndex, cut: GraphCut | None = None, follow: Follow | None = None) -> None:
        """``cut``: the cut of ``index``'s main graph, by default one of its own; ``follow``: the pair it was cut in,
        which resolves its units on first use (``Side.pair``)."""
        self.index = index
        # the folder its external data is read from, where a diff must read it (``facts._same_external``); None for a
        # model with no file
        self.folder = index.path.parent if index.path.name else None
        self.follow = follow
        self.graph = index.proto.graph
        self._maps: GraphMaps | None = None
        self._some_producers: dict[str, int] = {}  # producers of the names given to prepare_sources
        self._asked: set[str] = set()
        self.functions = index.functions.functions
        self.family_of_key: dict[FunctionKey, str] = {}
        for fam in index.families:
            if fam.kind == "function":
                for ov in fam.overloads:
                    if ov.function is not None:
                        self.family_of_key[ov.function] = fam.label
        self._function_fp: dict[FunctionKey, Fingerprints] = {}
        self._function_fp_by_use: dict[FunctionKey, Fingerprints] = {}
        self._output_ranks: dict[int, dict[str, int]] = {}
        self._module_keys = ModuleKeys()
        self._baked: set[str] | None = None
        if cut is None:
            cut = GraphCut(index)
        self.cut: GraphCut = cut
        self.inputs = cut.inputs  # graph inputs that are not initializers
        self.input_pos = cut.input_pos
        self.init_pos = cut.init_pos
        # Units: aten calls first (ids 0 .. n_calls-1), then one per other node in graph order. A plain node's unit
        # is None here and made on access (``unit``): a million-node graph keeps no object per node.
        self.units = cut.units
        self.n_calls = cut.n_calls
        self.unit_of_node = cut.unit_of_node
        self._node_of_unit = cut.node_of_unit  # the node of each unit from n_calls on
        self.function_call_ids = cut.function_call_ids
        self._producer = cut.producer
        self._aten_units = self.units[:self.n_calls]
        self.links = SideLinks(self.graph, self._aten_units, cut)  # what the link rules read (value labels)

    @classmethod
    def pair(cls, a: ModelIndex, b: ModelIndex, progress: Progress | None = None) -> tuple[Side, Side]:
        """The two sides of a diff of ``a`` and ``b``, cut as a pair when ``b`` is mostly ``a``
        (``inspector.core.diff.follow``; ``progress``: its checkpoint)."""
        cut_a, cut_b, follow = cut_pair(a, b, progress)
        return cls(a, cut_a, follow), cls(b, cut_b, follow)

    @property
    def maps(self) -> GraphMaps:
        """Producers, consumers and parameters as ``inspector.core.bodies.body`` builds them; only fold comparisons and
        node matching need them."""
        if self._maps is None:
            self._maps = self.index.graph_maps()
        return self._maps

    @property
    def producer(self) -> dict[str, int]:
        """Value name -> the node producing it (built with the units when there are aten calls, else on first use
        and kept)."""
        if self._producer is None:
            self._producer = self.producers()
        return self._producer

    def producers(self, names: set[str] | None = None) -> dict[str, int]:
        """Value name -> producing node, for ``names`` only when given (one pass over the graph, not kept): a graph
        of plain nodes never needs the whole map held beside the changes."""
        if self._producer is not None:
            return self._producer
        intern = sys.intern
        producer: dict[str, int] = {}
        for i, node in enumerate(self.graph.node):
            for name in node.output:
                if name and (names is None or name in names):
                    producer[intern(name)] = i
        return producer

    @property
    def keeps_producers(self) -> bool:
        return self._producer is not None

    def prepare_sources(self, names: set[str]) -> None:
        """``source`` will be asked about these names: find their producers only, unless the whole map is built."""
        if self._producer is None:
            self._some_producers = self.producers(names)
            self._asked = names

    def unit(self, k: int) -> Unit:
        """Unit ``k``, resolved (a plain node's unit is made on each access; it holds nothing a caller could
        change)."""
        u = self.units[k]
        if u is not None:
            if u.reads is UNREAD:
                assert self.follow is not None
                self.follow.resolve_on_use(self.cut, k)
            return u
        i = self._node_of_unit[k - self.n_calls]
        node = self.graph.node[i]
        reads = list(node.input)
        if may_have_subgraphs(node):
            reads.extend(captured_names(node))
        return Unit("node", [i], node.name or f"{node.op_type}#{i}", reads, list(node.output))

    def module(self, k: int) -> str:
        """The module chain of aten call ``k`` (read from its first node's metadata on first use: matching compares
        whole first nodes first, and equal nodes have equal chains)."""
        u = self.units[k]
        assert u is not None and u.call is not None
        if u.module is None:
            u.module = self._module_keys(u.call)
        return u.module

    def node_of(self, k: int) -> int:
        """The (first) node of unit ``k``."""
        u = self.units[k]
        return u.nodes[0] if u is not None else self._node_of_unit[k - self.n_calls]

    def node_ids(self) -> Iterator[int]:
        """The units of plain nodes (neither aten calls nor function calls), in graph order."""
        units = self.units
        return (k for k in range(self.n_calls, len(units)) if units[k] is None)

    @property
    def node_count(self) -> int:
        return len(self.units) - self.n_calls - len(self.function_call_ids)

    def body(self, unit: Unit) -> Body:
        """The body of a flat aten call unit, as the diff compares it (constants: small non-parameter initializers;
        inputs in first-use order). Built on first use."""
        if unit.body is None:
            nodes = self.graph.node
            unit.body = Body(unit.label, [nodes[i] for i in unit.nodes], list(unit.reads), list(unit.outputs),
                             dict(unit.constants), [(i,) for i in unit.nodes], list(unit.reads))
        return unit.body

    def fold_form(self, unit: Unit) -> Body:
        """A flat aten call as ``fold`` turns it into a function body (its group body, inputs in aten order)."""
        assert unit.call is not None
        body = group_body(unit.call, self.maps)
        return function_form(body)  # (inputs numbered by first use, as function_fp_by_use numbers them)

    def function_fp(self, key: FunctionKey) -> Fingerprints:
        fp = self._function_fp.get(key)
        if fp is None:
            fp = self._function_fp[key] = order_fingerprint(function_body(key, self.functions[key]))
        return fp

    def function_fp_by_use(self, key: FunctionKey) -> Fingerprints:
        """The function's fingerprint with inputs numbered by first use, to compare it with a flat group."""
        fp = self._function_fp_by_use.get(key)
        if fp is None:
            fp = self._function_fp_by_use[key] = order_fingerprint(function_body_by_use(key, self.functions[key]))
        return fp

    def unit_fp(self, unit: Unit) -> Fingerprints:
        if unit.fp is None:
            if unit.callee is not None:
                unit.fp = self.function_fp(unit.callee)
            elif unit.kind == "aten_call":
                unit.fp = order_fingerprint(self.body(unit))
            else:
                unit.fp = Fingerprints("", "")  # single nodes are compared attribute by attribute
        return unit.fp

    def source(self, name: str) -> tuple[Any, ...]:
        """Where a value read by a unit comes from: a unit's output, a graph input, an initializer."""
        if not name:
            return ("none",)
        if self._producer is None and name in self._asked:
            p = self._some_producers.get(name)
        else:
            p = self.producer.get(name)
        if p is not None:
            uid = self.unit_of_node[p]
            u = self.unit(uid) if self.units[uid] is not None else None
            outputs = u.outputs if u is not None else self.graph.node[p].output
            if len(outputs) > 1 and u is not None:
                return ("unit", uid, self._output_rank(uid, u).get(name, -1))
            return ("unit", uid, list(outputs).index(name) if name in outputs else -1)
        k = self.input_pos.get(name)
        if k is not None:
            return ("input", k)
        k = self.init_pos.get(name)
        if k is not None:
            return ("init", k)
        return ("outer", name)

    def _output_rank(self, uid: int, unit: Unit) -> dict[str, int]:
        """A call's outputs numbered as its body reads in use order (``in_use_order``): a Constant that one call
        makes and another reads keeps its number when the lowering emitted the call's Constants in another order,
        flat or folded (a function's outputs are numbered by its own body)."""
        rank = self._output_ranks.get(uid)
        if rank is None:
            if unit.callee is not None:
                f = self.functions[unit.callee]
                formal = {o: k for k, o in enumerate(in_use_order(function_body(unit.callee, f)).outputs)}
                call = self.graph.node[unit.nodes[0]]
                rank = {actual: formal.get(name, -1) for actual, name in zip(call.output, f.output, strict=False)}
            elif unit.kind == "aten_call":
                rank = {o: k for k, o in enumerate(in_use_order(self.body(unit)).outputs)}
            else:
                rank = {o: k for k, o in enumerate(unit.outputs)}
            self._output_ranks[uid] = rank
        return rank

    def baked(self, names: set[str]) -> set[str]:
        """Those of ``names`` that are initializers compared as part of aten call bodies (small constants baked in
        at export time)."""
        if self.follow is not None:  # (a pair's cut: asked about the few names, not every call)
            return self.follow.baked(self.cut, names)
        if self._baked is None:
            self._baked = set()
            for u in self.units[:self.n_calls]:
                if u is not None and u.callee is None:
                    self._baked.update(u.constants)
        return self._baked & names

    def reads_of(self, names: set[str]) -> Iterator[tuple[int, int, str]]:
        """``(node, input place, name)`` for each read of one of ``names`` by a main-graph node, in graph order: one
        pass over the nodes' inputs (as the scan read them, where it did), for the few initializers a diff asks
        about."""
        if not names:
            return
        io = self.index.node_io()
        inputs: Iterable[Sequence[str]] = io[0] if io is not None else (n.input for n in self.graph.node)
        for i, ins in enumerate(inputs):
            if not names.isdisjoint(ins):
                yield from ((i, place, name) for place, name in enumerate(ins) if name in names)

    def readers(self, names: set[str]) -> dict[str, list[tuple[str, str]]]:
        """What reads each of ``names`` in the main graph, in graph order, each once: an aten call as (module path,
        FX name), another node as ("", its label)."""
        out: dict[str, list[tuple[str, str]]] = {}
        seen: set[tuple[str, int]] = set()
        for i, _place, name in self.reads_of(names):
            k = self.unit_of_node[i]
            if (name, k if k >= 0 else -1 - i) in seen:
                continue
            seen.add((name, k if k >= 0 else -1 - i))
            unit = self.unit(k) if k >= 0 else None
            call = unit.call if unit is not None else None
            out.setdefault(name, []).append((call.module_path, call.name) if call is not None else
                                            ("", unit.label if unit is not None else f"node {i}"))
        return out

    def describe(self, src: tuple[Any, ...]) -> str:
        kind = src[0]
        if kind == "unit":
            unit = self.unit(src[1])
            what = "aten call" if unit.kind == "aten_call" else "node"
            return f"{what} {unit.label}" + (f" output {src[2]}" if len(unit.outputs) > 1 else "")
        if kind == "input":
            return f"input {self.inputs[src[1]].name}"
        if kind == "init":
            return f"initializer {self.graph.initializer[src[1]].name}"
        if kind == "none":
            return "nothing"
        return f"value {src[1]}"


class ModuleKeys:
    """The module chain of a call as its metadata spells it, without the call's own (FX) name; one string per
    chain (the calls of a module share it). Exporters write metadata keys in one order, so the position of the
    name scopes is looked up once."""

    def __init__(self) -> None:
        self._scopes_pos = -1
        self._modules: dict[str, str] = {}

    def __call__(self, call: AtenCall) -> str:
        node = call.first_node
        if node is None:
            return ""
        props = node.metadata_props
        pos = self._scopes_pos
        if 0 <= pos < len(props):
            p = props[pos]
            if p.key == NAME_SCOPES:
                return self._one(cut_last(p.value, ","))
        namespace = ""
        for j, p in enumerate(props):
            if p.key == NAME_SCOPES:
                self._scopes_pos = j
                return self._one(cut_last(p.value, ","))
            if p.key == NAMESPACE:
                namespace = p.value
        return self._one(cut_last(namespace, "/")) if "/" in namespace else ""

    def _one(self, module: str) -> str:
        return self._modules.setdefault(module, module)


def cut_last(text: str, sep: str) -> str:
    cut = text.rfind(sep)
    return text[:cut] if cut > 0 else text


def not_in_place(umap: dict[int, int], n: int) -> list[int]:
    """The units below ``n`` that ``umap`` does not match to themselves (C loops: a 100k-unit map in ~3 ms)."""
    ids = range(n)
    return list(compress(ids, map(ne, ids, map(umap.get, ids))))


def aten_family(target: str) -> str:
    ns, name, _overload = split_target(target)
    return name if ns == "python" else f"{ns}::{name}"



class UnitPairs:
    """Questions about matched unit pairs that several steps ask, answered once."""

    def __init__(self, A: Side, B: Side) -> None:
        self.A, self.B = A, B
        self._node_match: dict[int, list[str] | None] = {}
        self._first_equal: dict[int, int] = {}  # aten call of A -> the call of B whose first node equals its own
        self._same_constant: dict[str, bool] = {}  # a baked constant's name -> same content on both sides
        # two graphs of plain nodes only, matched in place (``Matcher._unequal_plain``): the units whose nodes differ
        self.plain_unequal: set[int] | None = None

    @property
    def follow(self) -> Follow | None:
        """The pair the sides were cut as (``inspector.core.diff.follow``): a unit not in its ``suspect`` set is the
        same on both sides in all the diff reads of it."""
        B = self.B
        return B.follow if B.cut.followed is self.A.cut else None

    def in_place_unequal(self) -> set[int] | None:
        """The units whose nodes differ between the sides when B's units are A's, place for place (B cut like A,
        or two plain graphs matched in place); None otherwise."""
        B = self.B
        return B.cut.unequal if B.cut.followed is self.A.cut else self.plain_unequal

    def same_module(self, ka: int, kb: int) -> bool:
        """Whether aten calls ``ka`` and ``kb`` have the same module chain. Equal first nodes (one comparison in C,
        metadata included) have; the outcome is kept for ``node_match``."""
        ca, cb = self.A.units[ka], self.B.units[kb]
        assert ca is not None and ca.call is not None and cb is not None and cb.call is not None
        na, nb = ca.call.first_node, cb.call.first_node
        if (ka == kb and self.B.cut.same_nodes(self.A.cut, kb)) or (na is not None and nb is not None and na == nb):
            self._first_equal[ka] = kb
            return True
        return self.A.module(ka) == self.B.module(kb)

    def node_match(self, ka: int, kb: int) -> list[str] | None:
        """For two matched flat aten calls that are node for node the same, names included (so the same
        template): the baked constants whose content differs (empty: identical bodies). None when the nodes differ
        in any way, or either is a function call. Cached."""
        cached = self._node_match
        if ka in cached:
            return cached[ka]
        ua, ub = self.A.unit(ka), self.B.unit(kb)
        hit = cached[ka] = self._compare(ka, ua, kb, ub) if ua.callee is None and ub.callee is None else None
        return hit

    def _compare(self, ka: int, ua: Unit, kb: int, ub: Unit) -> list[str] | None:
        if len(ua.nodes) != len(ub.nodes) or ua.reads != ub.reads or ua.outputs != ub.outputs:
            return None
        baked = ua.constants is not NO_CONSTANTS or ub.constants is not NO_CONSTANTS
        if baked and list(ua.constants) != list(ub.constants):
            return None
        na_all, nb_all = self.A.graph.node, self.B.graph.node
        if ka == kb and self.B.cut.same_nodes(self.A.cut, kb):
            first = len(ua.nodes)  # compared while cutting
        else:  # the first nodes (a call's first node) may have been compared already, while matching
            first = 1 if self._first_equal.get(ka) == kb else 0
        for i, j in zip(ua.nodes[first:], ub.nodes[first:]) if first else zip(ua.nodes, ub.nodes):
            na, nb = na_all[i], nb_all[j]
            if na == nb:  # one comparison in C (metadata included): the common case of two exports of one model
                continue
            if na.op_type != nb.op_type or na.domain != nb.domain or na.overload != nb.overload \
                    or na.input != nb.input or na.output != nb.output or na.attribute != nb.attribute:
                return None
        if not baked:
            return []
        return [name for name, t in ua.constants.items() if not self.same_constant(name, t, ub.constants[name])]

    def same_constant(self, name: str, ta: TensorProto, tb: TensorProto) -> bool:
        """Whether the baked constant ``name`` has the same content on both sides (each side's constant of one name is
        one tensor: compared once)."""
        hit = self._same_constant.get(name)
        if hit is None:
            hit = self._same_constant[name] = same_content(ta, tb)
        return hit

    def same_template(self, ka: int, kb: int) -> bool:
        return self.node_match(ka, kb) is not None or self.A.unit_fp(self.A.unit(ka)).template == \
            self.B.unit_fp(self.B.unit(kb)).template
