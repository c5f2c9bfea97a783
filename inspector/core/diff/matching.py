"""Matching: which function, unit, initializer of A is which of B (see the package doc for the order of keys).
Matching records only pairs and counts (``MatchCount``); what differs between pairs is for ``compare``."""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from itertools import compress
from operator import attrgetter, is_not, ne

from onnx import TensorProto

from inspector.core.diff.cut import Unit
from inspector.core.diff.model import MatchCount
from inspector.core.diff.renumbered import name_base, renumbering
from inspector.core.diff.sources import Sources
from inspector.core.diff.units import Side, UnitPairs
from inspector.core.diff.values import content_digest, same_content
from inspector.core.model.graph import node_reads
from inspector.core.model.keys import FunctionKey
from inspector.core.model.scan_like import unequal_nodes
from inspector.core.model.walk import may_have_subgraphs

_LABEL, _CALL_NAME = attrgetter("label"), attrgetter("call.name")


class Matcher:
    def __init__(self, pairs: UnitPairs) -> None:
        self.pairs = pairs
        self.A, self.B = pairs.A, pairs.B
        self.matched: dict[str, MatchCount] = {}

    def match_functions(self) -> dict[FunctionKey, FunctionKey]:
        A, B = self.A, self.B
        fmap = {k: k for k in A.functions if k in B.functions}
        fam_a: dict[tuple[str, str], list[FunctionKey]] = defaultdict(list)
        fam_b: dict[tuple[str, str], list[FunctionKey]] = defaultdict(list)
        for side, fams in ((A, fam_a), (B, fam_b)):
            for fam in side.index.families:
                if fam.kind != "function":
                    continue
                for ov in fam.overloads:
                    if ov.function is not None and ov.function in side.functions:
                        fams[(fam.domain, fam.name)].append(ov.function)
        taken_b = set(fmap.values())
        for fam_key, keys_a in fam_a.items():
            left_a = [k for k in keys_a if k not in fmap]
            left_b = [k for k in fam_b.get(fam_key, ()) if k not in taken_b]
            if not left_a or not left_b:
                continue
            by_template: dict[str, list[FunctionKey]] = defaultdict(list)
            for k in left_b:
                by_template[B.function_fp(k).template].append(k)
            for k in left_a:
                cands = by_template.get(A.function_fp(k).template)
                if cands:
                    kb = cands.pop(0)
                    fmap[k] = kb
                    taken_b.add(kb)
        self.matched["functions"] = MatchCount(len(fmap), len(A.functions) - len(fmap), len(B.functions) - len(fmap),
                                               sum(1 for k, v in fmap.items() if k != v))
        return fmap

    def match_aten(self, umap: dict[int, int], sources: Sources) -> None:
        """Aten calls by (target, FX name, module chain), in A's order, each taking B's first untaken call with
        that key; then B's call over the same nodes from another source (``diff.sources``); the rest per target by
        position (``_align``). Module chains are read only where first nodes differ (``UnitPairs.same_module``) or
        several calls of B share a target and name."""
        A, B = self.A, self.B
        pairs = self.pairs
        units_a, units_b = A.units, B.units
        n_a, n_b = A.n_calls, B.n_calls
        ids_a: Iterable[int] = range(n_a)
        ids_b: Iterable[int] = range(n_b)
        taken: dict[int, int] = {}  # B's calls matched by key -> A's
        keyed: dict[int, int] = {}  # matched by key, in A's order
        unequal = self._unequal_calls()
        if unequal is not None:  # the calls of equal nodes match in place; the others only among themselves
            ids_a = ids_b = [k for k in sorted(unequal) if k < n_a]
        renumbered = renumbering(A, B, ids_a, ids_b, keyed, taken, unequal)
        index_b: dict[tuple[str, str], list[int]] = {}  # (target, FX name) -> calls of B, in order
        for k in ids_b:
            call = units_b[k].call  # type: ignore[union-attr]
            assert call is not None
            key = (call.target, call.name)
            found = index_b.get(key)
            if found is None:
                index_b[key] = [k]
            else:
                found.append(k)
        by_module: dict[tuple[str, str], dict[str, list[int]]] = {}  # for keys several calls of B share
        rest_a: dict[str, list[int]] = defaultdict(list)
        for k in ids_a:
            call = units_a[k].call  # type: ignore[union-attr]
            assert call is not None
            key = (call.target, call.name)
            cands = index_b.get(key)
            kb = None
            if cands is not None:
                if len(cands) == 1:
                    if cands[0] not in taken and pairs.same_module(k, cands[0]):
                        kb = cands[0]
                else:
                    groups = by_module.get(key)
                    if groups is None:
                        groups = by_module[key] = defaultdict(list)
                        for c in cands:
                            groups[B.module(c)].append(c)
                    left = groups.get(A.module(k))
                    if left:
                        kb = left.pop(0)
            if renumbered is not None:
                kb = renumbered.pair(k, kb)
            if kb is not None:
                keyed[k] = kb
                taken[kb] = k
            else:
                rest_a[call.target].append(k)
        if unequal is None:
            umap.update(keyed)
        else:  # (in A's order, as the general steps record them: the order changes are reported in)
            umap.update(zip(range(n_a), range(n_a)))
            for k in ids_a:
                if k in keyed:
                    umap[k] = keyed[k]
                else:
                    del umap[k]
        rest_b: dict[str, list[int]] = defaultdict(list)
        for k in ids_b:
            if k not in taken:
                call = units_b[k].call  # type: ignore[union-attr]
                assert call is not None
                rest_b[call.target].append(k)
        sources.match(rest_a, rest_b, umap)
        for target, left_a in rest_a.items():
            left_b = rest_b.get(target, [])
            if left_b:
                umap.update(_align(A, B, left_a, left_b))
        ks = list(filter(umap.__contains__, range(n_a)))  # (C loops: 80k calls in ~6 ms)
        renamed = sum(map(ne, map(_LABEL, map(units_a.__getitem__, ks)),
                          map(_LABEL, map(units_b.__getitem__, map(umap.__getitem__, ks)))))
        matched = len(ks)
        self.matched["aten_calls"] = MatchCount(matched, n_a - matched, n_b - matched, renamed)

    def _unequal_calls(self) -> set[int] | None:
        """When B was cut like A (the same calls at the same ids) and no two calls of either side share an FX name:
        the units whose nodes differ. Each other call of A has the key and module chain of B's call of the same id
        and of no other, so it matches that one (what the general steps find, without looking it up); a call whose
        nodes differ can match only one of B's calls whose nodes differ. None otherwise."""
        A, B = self.A, self.B
        unequal = B.cut.unequal
        if B.cut.followed is not A.cut or unequal is None or A.n_calls != B.n_calls:
            return None
        return unequal if _names_unique(A.units, B.units, A.n_calls) else None

    def match_calls(self, fmap: dict[FunctionKey, FunctionKey], umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        by_callee_b: dict[FunctionKey, list[int]] = defaultdict(list)
        for k in B.function_call_ids:
            u = B.unit(k)
            if u.callee is not None:
                by_callee_b[u.callee].append(k)
        calls_a = [k for k in A.function_call_ids if A.unit(k).callee is not None]
        by_name_b = {(B.unit(k).callee, B.unit(k).label): k for k in B.function_call_ids}
        taken: set[int] = set()
        for k in calls_a:  # the same callee and node name
            u = A.unit(k)
            assert u.callee is not None
            target = fmap.get(u.callee)
            kb = by_name_b.get((target, u.label)) if target is not None else None
            if kb is not None and kb not in taken:
                umap[k] = kb
                taken.add(kb)
        n_a, matched, renamed = len(calls_a), 0, 0
        cursor: dict[FunctionKey, int] = defaultdict(int)
        for k in calls_a:  # then by position among the calls of that callee
            u = A.unit(k)
            assert u.callee is not None
            target = fmap.get(u.callee)
            if k not in umap and target is not None:
                cands = by_callee_b.get(target, [])
                pos = cursor[target]
                while pos < len(cands) and cands[pos] in taken:
                    pos += 1
                cursor[target] = pos
                if pos < len(cands):
                    umap[k] = cands[pos]
                    taken.add(cands[pos])
            if k in umap:
                matched += 1
                renamed += B.unit(umap[k]).label != u.label
        n_b = len(B.function_call_ids)
        self.matched["function_calls"] = MatchCount(matched, n_a - matched, n_b - matched, renamed)

    def match_nodes(self, umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        if not A.node_count or not B.node_count:
            self.matched["nodes"] = MatchCount(0, A.node_count, B.node_count, 0)
            return
        na, nb = array("q", A.node_ids()), array("q", B.node_ids())
        left_a, left_b = na, nb
        if B.cut.followed is not A.cut:
            self.pairs.plain_unequal = self._unequal_plain()
        unequal = self.pairs.in_place_unequal()
        if unequal is not None:
            self._match_in_place(umap, na, unequal)
            taken = set(umap.values())
            left_a = array("q", [k for k in left_a if k not in umap])
            left_b = array("q", [k for k in left_b if k not in taken])
        for rnd in ((2, 1) if left_a and left_b else ()):  # most specific first
            if rnd == 2:  # (hashed only when some nodes are left: 4.7 s of a 100k-node GPT-2 diff)
                hashes_a, hashes_b = _neighbourhood_hashes(A), _neighbourhood_hashes(B)
            ha = array("q", [hashes_a[rnd][A.node_of(k)] for k in left_a])
            hb = array("q", [hashes_b[rnd][B.node_of(k)] for k in left_b])
            # how often each hash occurs on each side; on the larger side only the hashes the smaller one has
            if len(ha) <= len(hb):
                ca = _counts(ha)
                cb = _counts(x for x in hb if x in ca)
            else:
                cb = _counts(hb)
                ca = _counts(x for x in ha if x in cb)
            unique_b = {h: k for h, k in zip(hb, left_b) if cb.get(h) == 1}
            for h, k in zip(ha, left_a):
                if ca.get(h) == 1 and h in unique_b:
                    umap[k] = unique_b[h]
            taken = set(umap.values())
            left_a = array("q", [k for k in left_a if k not in umap])
            left_b = array("q", [k for k in left_b if k not in taken])
        ops: dict[tuple[str, str, str], tuple[str, str, str]] = {}

        def op(side: Side, k: int) -> tuple[str, str, str]:
            node = side.graph.node[side.node_of(k)]
            key = (node.domain, node.op_type, node.overload)
            return ops.setdefault(key, key)  # one tuple per operator

        by_name_b = {(B.graph.node[B.node_of(k)].name, op(B, k)): k for k in left_b
                     if B.graph.node[B.node_of(k)].name}
        for k in left_a:
            name = A.graph.node[A.node_of(k)].name
            kb = by_name_b.pop((name, op(A, k)), None) if name else None
            if kb is not None:
                umap[k] = kb
        taken = set(umap.values())
        left_a = array("q", [k for k in left_a if k not in umap])
        left_b = array("q", [k for k in left_b if k not in taken])
        import difflib

        sm = difflib.SequenceMatcher(None, [op(A, k) for k in left_a], [op(B, k) for k in left_b], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                umap.update(zip(left_a[i1:i2], left_b[j1:j2]))
        taken = set(umap.values())
        left_a = array("q", [k for k in left_a if k not in umap])
        pool: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for k in left_b:
            if k not in taken:
                pool[op(B, k)].append(k)
        for k in left_a:
            cands = pool.get(op(A, k))
            if cands:
                umap[k] = cands.pop(0)
        matched = sum(1 for k in na if k in umap)
        # (a node equal to the other side's at its place has its label: no unit is made for it)
        kept = set() if unequal is None else {k for k in na if umap.get(k) == k and k not in unequal
                                              and A.node_of(k) == B.node_of(k)}
        renamed = sum(1 for k in na if k in umap and k not in kept and A.unit(k).label != B.unit(umap[k]).label)
        self.matched["nodes"] = MatchCount(matched, len(na) - matched, len(nb) - matched, renamed)

    def _unequal_plain(self) -> set[int] | None:
        """For two graphs of plain nodes only (no aten calls or function calls: a TorchScript-style export and its
        re-export) with one node count, the units whose nodes differ between them, compared in place (unit k is
        node k on both sides); None when more than half differ, or for other graphs. Such graphs are never cut
        like each other, and without this the neighbourhood hashes of every node were made on both sides: a
        metadata-less 30k-node pair that differs in 3 values took 2.5x as long to diff as its dynamo export."""
        A, B = self.A, self.B
        if A.n_calls or B.n_calls or A.function_call_ids or B.function_call_ids or A.node_count != B.node_count \
                or len(A.graph.node) != A.node_count or len(B.graph.node) != B.node_count:
            return None
        differ = unequal_nodes(A.graph.node, B.graph.node)
        return {A.unit_of_node[i] for i in differ} if differ is not None else None

    def _match_in_place(self, umap: dict[int, int], na: array[int], unequal: set[int]) -> None:
        """B was cut like A (one node count, the same aten call groups, at most half the nodes different), or both
        are plain graphs of one node count compared in place (``_unequal_plain``): a plain node keeps its unit id,
        and the nodes at one position are one node when they are equal, or when they are of one operator under one
        name (a value changed), as the name matching below would pair them."""
        A, B = self.A, self.B
        nodes_a, nodes_b = A.graph.node, B.graph.node
        for k in na:
            i = A.node_of(k)
            if B.node_of(k) != i:
                continue
            if k not in unequal:
                umap[k] = k
                continue
            x, y = nodes_a[i], nodes_b[i]
            if x.name and x.name == y.name and x.op_type == y.op_type and x.domain == y.domain \
                    and x.overload == y.overload:
                umap[k] = k

    def match_initializers(self, umap: dict[int, int]) -> dict[int, int]:
        """Initializers of A -> of B (``match_initializers``), counted in ``matched``."""
        inits_a, inits_b = list(self.A.graph.initializer), list(self.B.graph.initializer)
        tmap = match_initializers(self.pairs, inits_a, inits_b, umap)
        renamed = sum(1 for ka, kb in tmap.items() if inits_a[ka].name != inits_b[kb].name)
        self.matched["initializers"] = MatchCount(len(tmap), len(inits_a) - len(tmap), len(inits_b) - len(tmap),
                                                  renamed)
        return tmap


def _align(A: Side, B: Side, left_a: list[int], left_b: list[int]) -> list[tuple[int, int]]:
    """Pair left-over calls of one target by position, aligning on (module path, template) when counts differ."""
    if len(left_a) == len(left_b):
        return list(zip(left_a, left_b))

    def key(side: Side, k: int) -> tuple[str, str]:
        unit = side.unit(k)
        assert unit.call is not None
        return (side.module(k), side.unit_fp(unit).template)

    ka, kb = [key(A, k) for k in left_a], [key(B, k) for k in left_b]
    pairs: list[tuple[int, int]] = []
    import difflib  # (here: units left to align; start-up)

    sm = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag in ("equal", "replace"):
            pairs.extend(zip(left_a[i1:i2], left_b[j1:j2]))
    return pairs


def _names_unique(units_a: list[Unit | None], units_b: list[Unit | None], n: int) -> bool:
    """Whether no two of the first ``n`` units (aten calls) of either side share an FX name. (B's names are A's but
    where B has a unit of its own: a pair's B stands for most of its calls with A's units, ``follow``.)"""
    names = set(map(_CALL_NAME, units_a[:n]))  # (every unit of an aten call has its call)
    if len(names) != n:
        return False
    own = list(compress(range(n), map(is_not, units_a[:n], units_b[:n])))
    names_b = [units_b[k].call.name for k in own]  # type: ignore[union-attr]
    names.difference_update(units_a[k].call.name for k in own)  # type: ignore[union-attr]
    return len(set(names_b)) == len(names_b) and names.isdisjoint(names_b)


def match_initializers(pairs: UnitPairs, inits_a: list[TensorProto], inits_b: list[TensorProto],
                       umap: dict[int, int]) -> dict[int, int]:
    """Initializers by content before name: one name with one content first; then one name with another content
    where a pair of matched calls reads it in one place (``_same_place``); then equal content (dtype, shape, digest)
    under any name, so a weight the optimizer renamed (its ``val_242`` is the other export's ``val_243``) is never
    reported removed and added; then another content under any names read in one place by matched calls
    (``_by_place``); then one name with another content (re-valued or reshaped), then the same input of matched calls,
    in that order. Contents are hashed only for what the first two steps leave."""
    B = pairs.B
    tmap: dict[int, int] = {}
    for k, t in enumerate(inits_a):
        kb = B.init_pos.get(t.name)
        if kb is not None and ((u := inits_b[kb]) == t or same_content(t, u)):  # (equal messages: one C comparison)
            tmap[k] = kb
    taken = set(tmap.values())
    if len(tmap) < min(len(inits_a), len(inits_b)):
        _same_place(pairs, umap, inits_a, tmap, taken)
    if len(tmap) < min(len(inits_a), len(inits_b)):
        # by content: equal tensors under other names, in order (a name shift keeps the order)
        pool: dict[tuple[int, tuple[int, ...], str], list[int]] = defaultdict(list)
        for k, t in enumerate(inits_b):
            if k not in taken:
                pool[(t.data_type, tuple(t.dims), content_digest(t))].append(k)
        for k, t in enumerate(inits_a):
            cands = pool.get((t.data_type, tuple(t.dims), content_digest(t))) if k not in tmap else None
            if cands:
                tmap[k] = cands.pop(0)
                taken.add(tmap[k])
    if len(tmap) < min(len(inits_a), len(inits_b)):
        _by_place(pairs, umap, inits_a, inits_b, tmap, taken)
    if len(tmap) < min(len(inits_a), len(inits_b)):
        # by name: one name, another content
        for k, t in enumerate(inits_a):
            kb = B.init_pos.get(t.name)
            if k not in tmap and kb is not None and kb not in taken:
                tmap[k] = kb
                taken.add(kb)
    if len(tmap) < min(len(inits_a), len(inits_b)):
        _by_role(pairs, umap, tmap, taken)
    return tmap


def _same_place(pairs: UnitPairs, umap: dict[int, int], inits_a: list[TensorProto], tmap: dict[int, int],
                taken: set[int]) -> None:
    """Initializers of one name on both sides with another content that a node of A reads in the place where the
    node of its matched call in B reads it (same op, same input), matched by that name before any is matched by
    content. Case: Swin exported again with another ``mlp_ratio``. Its first stage's fc1 bias, 64 zeros, had the
    content of the other export's second stage's, and was matched to it: the diff read a bias removed and a call
    "rewired" from ``encoder.layers.0.blocks.0.mlp.fc1.bias`` to the same name (``tests/evidence/stage_ratio_*``). Not a
    name torch numbered (``t``, ``t_1``, …) of which the two sides hold a different count: such names shift, and
    the calls, paired by their own numbered names, shift with them (``tests/evidence/shifted_names_*``: B's ``t_1``
    is A's ``t``). One pass over A's nodes' inputs (``Side.reads_of``), only when such a name is left."""
    A, B = pairs.A, pairs.B
    left = {t.name: k for k, t in enumerate(inits_a)
            if k not in tmap and (kb := B.init_pos.get(t.name)) is not None and kb not in taken}
    if left:
        count_a, count_b = Counter(map(name_base, (t.name for t in inits_a))), Counter(map(name_base, B.init_pos))
        left = {n: k for n, k in left.items() if count_a[base := name_base(n)] == count_b[base]}
    if not left:
        return
    for i, place, name in A.reads_of(set(left)):
        k = left[name]
        if k not in tmap and _read_there(pairs, umap, i, place, name):
            tmap[k] = kb = B.init_pos[name]
            taken.add(kb)


def _read_there(pairs: UnitPairs, umap: dict[int, int], i: int, place: int, name: str) -> bool:
    """Whether node ``i`` of A reading ``name`` as its input ``place`` has, in the unit of B matched to its unit, a
    node of the same op in the same position that reads ``name`` there too."""
    A, B = pairs.A, pairs.B
    ka = A.unit_of_node[i]
    kb = umap.get(ka) if ka >= 0 else None
    if kb is None:
        return False
    nodes_a, nodes_b = A.unit(ka).nodes, B.unit(kb).nodes
    if len(nodes_a) != len(nodes_b) or i not in nodes_a:
        return False
    node_b = B.graph.node[nodes_b[nodes_a.index(i)]]
    ins = node_b.input
    return place < len(ins) and ins[place] == name and node_b.op_type == A.graph.node[i].op_type


def _by_place(pairs: UnitPairs, umap: dict[int, int], inits_a: list[TensorProto], inits_b: list[TensorProto],
              tmap: dict[int, int], taken: set[int]) -> None:
    """Initializers of another content under any names that a node of A and its node in B's matched call read in
    one place: the same op, its same occurrence among the call's nodes of that op, the same input; of one type.
    Before names alone: the optimizer numbers the weights it folds (``val_243``), and one node more in a call shifts
    every number after it. Case: a Llama-shaped export against one with biases on its attention projections (Mistral
    against Qwen2): each projection's ``linear`` gained an Add, so neither positions nor templates pair the calls'
    nodes; the down projection's weight ``val_243`` was paired with B's ``val_243``, the up projection's, and read
    "reshaped FLOAT[64, 32] -> FLOAT[32, 64]", its call "rewired", and B's own weight "added"; each q, k and v weight
    read removed and added. One pass over A's reads of what is left (``Side.reads_of``), each call's nodes ranked
    once."""
    A, B = pairs.A, pairs.B
    left = {t.name: k for k, t in enumerate(inits_a) if k not in tmap and t.name not in A.input_pos}
    if not left:
        return
    ranks_a: dict[int, dict[int, _Rank]] = {}  # unit -> node -> (op, its occurrence among the unit's nodes)
    ranks_b: dict[int, dict[_Rank, int]] = {}  # unit -> (op, occurrence) -> node
    for i, place, name in A.reads_of(set(left)):
        k = left[name]
        ka = A.unit_of_node[i]
        kb = umap.get(ka) if ka >= 0 and k not in tmap else None
        if kb is None:
            continue
        at_a = ranks_a.get(ka)
        if at_a is None:
            at_a = ranks_a[ka] = {g: r for r, g in _ranked(A, A.unit(ka).nodes)}
        at_b = ranks_b.get(kb)
        if at_b is None:
            at_b = ranks_b[kb] = {r: g for r, g in _ranked(B, B.unit(kb).nodes)}
        j = at_b.get(at_a[i]) if i in at_a else None
        ins = B.graph.node[j].input if j is not None else ()
        found = B.init_pos.get(ins[place]) if place < len(ins) else None
        if found is not None and found not in taken and ins[place] not in B.input_pos \
                and inits_b[found].data_type == inits_a[k].data_type:
            tmap[k] = found
            taken.add(found)


_Rank = tuple[tuple[str, str], int]  # a node's op (domain, type) and its occurrence among its call's nodes of that op


def _ranked(side: Side, nodes: Iterable[int]) -> Iterator[tuple[_Rank, int]]:
    """Each of ``nodes`` with its op and its occurrence among ``nodes`` of that op."""
    seen: Counter[tuple[str, str]] = Counter()
    graph = side.graph.node
    for g in nodes:
        node = graph[g]
        op = (node.domain, node.op_type)
        yield (op, seen[op]), g
        seen[op] += 1


def _by_role(pairs: UnitPairs, umap: dict[int, int], tmap: dict[int, int], taken: set[int]) -> None:
    """Initializers that are the same input of matched calls whose bodies share a template. (A unit matched to
    itself that reads the same names on both sides matches nothing here: an initializer of one name on both sides
    is matched by name before. So of a pair's cut only the suspect units are looked at.)"""
    A, B = pairs.A, pairs.B
    follow = pairs.follow
    items: Iterable[tuple[int, int]] = umap.items()
    if follow is not None:
        suspect = follow.suspect
        items = [(ka, kb) for ka, kb in items if ka != kb or ka in suspect]
    for ka, kb in items:
        ua, ub = A.unit(ka), B.unit(kb)
        if len(ua.reads) != len(ub.reads):
            continue
        if ua.kind == "aten_call" and not pairs.same_template(ka, kb):
            continue
        reads = list(zip(ua.reads, ub.reads))
        if ua.kind == "aten_call" and ua.callee is None and ub.callee is None:
            reads.extend(zip(ua.constants, ub.constants))  # same template: same constant slots
        for ra, rb in reads:
            ta, tb = A.init_pos.get(ra), B.init_pos.get(rb)
            if ta is not None and tb is not None and ta not in tmap and tb not in taken \
                    and ra not in A.input_pos and rb not in B.input_pos:
                tmap[ta] = tb
                taken.add(tb)


_TAGS = ("", "in", "init", "outer")  # what a node reads when no node produces it: nothing, input, initializer, other
_MASK = (1 << 64) - 1


def _neighbourhood_hashes(side: Side, rounds: int = 2) -> list[array[int]]:
    """Per main-graph node: hashes of its op, domain and attribute names, refined ``rounds`` times with the
    hashes of its producers (by input position) and consumers (as a multiset). ``[h0, h1, h2]``.

    Only equality of hashes matters (unique ones are matched), so the graph is kept in flat integer arrays (what
    each node reads, coded; who reads each node) and the consumer multiset is a sum of mixed hashes: a million-node
    graph costs tens of megabytes here, not a list per node."""
    nodes = side.graph.node
    producer = side.producers()  # held only while hashing, unless the side keeps the whole map anyway
    input_pos, init_pos = side.input_pos, side.init_pos
    n = len(nodes)
    h = array("q", [hash((x.domain, x.op_type, x.overload, tuple(sorted(a.name for a in x.attribute)), len(x.input),
                         len(x.output))) for x in nodes])
    reads = array("q")  # per node, what each input is: a producing node (>= 0) or -1 - the index of a tag
    start = array("q", [0]) * (n + 1)
    consumer_of = array("q")  # edges (producer, consumer), flattened: one per name a consumer reads
    for i, x in enumerate(nodes):
        for name in x.input:
            p = producer.get(name)
            reads.append(p if p is not None else -1 if not name else -2 if name in input_pos else
                         -3 if name in init_pos else -4)
        start[i + 1] = len(reads)
        for name in (node_reads(x) if may_have_subgraphs(x) else x.input):
            p = producer.get(name) if name else None
            if p is not None:
                consumer_of.append(p)
                consumer_of.append(i)
    out = [h]
    for _ in range(rounds):
        prev = out[-1]
        cons = array("Q", [0]) * n
        for e in range(0, len(consumer_of), 2):
            p = consumer_of[e]
            cons[p] = (cons[p] + _mix(prev[consumer_of[e + 1]])) & _MASK
        out.append(array("q", [hash((prev[i], tuple(prev[r] if r >= 0 else _TAGS[-1 - r]
                                                     for r in reads[start[i]:start[i + 1]]), cons[i]))
                               for i in range(n)]))
    return out


def _mix(x: int) -> int:
    """A 64-bit mix (splitmix64's finaliser), so that a sum of mixed hashes stands for a multiset of hashes."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _counts(items: Iterable[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    get = out.get
    for x in items:
        out[x] = get(x, 0) + 1
    return out

