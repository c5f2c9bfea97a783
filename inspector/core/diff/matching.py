"""Matching: which function, unit, initializer of A is which of B (see the package doc for the order of keys).
Matching records only pairs and counts (``MatchCount``); what differs between pairs is for ``compare``."""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable

from inspector.core.diff.model import MatchCount
from inspector.core.diff.units import Side, UnitPairs
from inspector.core.diff.values import content_digest
from inspector.core.keys import FunctionKey


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

    def match_aten(self, umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        ua = [k for k, u in enumerate(A.units) if u.kind == "aten_call"]
        ub = [k for k, u in enumerate(B.units) if u.kind == "aten_call"]
        index_b: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for k in ub:
            call = B.units[k].call
            assert call is not None
            index_b[(call.target, call.name, B.units[k].module)].append(k)
        taken: set[int] = set()
        rest_a: dict[str, list[int]] = defaultdict(list)
        for k in ua:
            call = A.units[k].call
            assert call is not None
            cands = index_b.get((call.target, call.name, A.units[k].module))
            if cands:
                kb = cands.pop(0)
                umap[k] = kb
                taken.add(kb)
            else:
                rest_a[call.target].append(k)
        rest_b: dict[str, list[int]] = defaultdict(list)
        for k in ub:
            if k not in taken:
                call = B.units[k].call
                assert call is not None
                rest_b[call.target].append(k)
        for target, left_a in rest_a.items():
            left_b = rest_b.get(target, [])
            if left_b:
                umap.update(self._align(left_a, left_b))
        n_a, n_b = len(ua), len(ub)
        matched = sum(1 for k in ua if k in umap)
        renamed = sum(1 for k in ua if k in umap and A.units[k].label != B.units[umap[k]].label)
        self.matched["aten_calls"] = MatchCount(matched, n_a - matched, n_b - matched, renamed)

    def _align(self, left_a: list[int], left_b: list[int]) -> list[tuple[int, int]]:
        """Pair left-over calls of one target by position, aligning on (module path, template) when counts differ."""
        A, B = self.A, self.B
        if len(left_a) == len(left_b):
            return list(zip(left_a, left_b))

        def key(side: Side, k: int) -> tuple[str, str]:
            unit = side.units[k]
            assert unit.call is not None
            return (unit.module, side.unit_fp(unit).template)

        ka, kb = [key(A, k) for k in left_a], [key(B, k) for k in left_b]
        pairs: list[tuple[int, int]] = []
        sm = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag in ("equal", "replace"):
                pairs.extend(zip(left_a[i1:i2], left_b[j1:j2]))
        return pairs

    def match_calls(self, fmap: dict[FunctionKey, FunctionKey], umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        by_callee_b: dict[FunctionKey, list[int]] = defaultdict(list)
        for k, u in enumerate(B.units):
            if u.kind == "function_call" and u.callee is not None:
                by_callee_b[u.callee].append(k)
        calls_a = [k for k, u in enumerate(A.units) if u.kind == "function_call" and u.callee is not None]
        by_name_b = {(u.callee, u.label): k for k, u in enumerate(B.units) if u.kind == "function_call"}
        taken: set[int] = set()
        for k in calls_a:  # the same callee and node name
            u = A.units[k]
            assert u.callee is not None
            target = fmap.get(u.callee)
            kb = by_name_b.get((target, u.label)) if target is not None else None
            if kb is not None and kb not in taken:
                umap[k] = kb
                taken.add(kb)
        n_a, matched, renamed = len(calls_a), 0, 0
        cursor: dict[FunctionKey, int] = defaultdict(int)
        for k in calls_a:  # then by position among the calls of that callee
            u = A.units[k]
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
                renamed += B.units[umap[k]].label != u.label
        n_b = sum(1 for u in B.units if u.kind == "function_call")
        self.matched["function_calls"] = MatchCount(matched, n_a - matched, n_b - matched, renamed)

    def match_nodes(self, umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        na = [k for k, u in enumerate(A.units) if u.kind == "node"]
        nb = [k for k, u in enumerate(B.units) if u.kind == "node"]
        if not na or not nb:
            self.matched["nodes"] = MatchCount(0, len(na), len(nb), 0)
            return
        hashes_a, hashes_b = _neighbourhood_hashes(A), _neighbourhood_hashes(B)
        left_a, left_b = list(na), list(nb)
        for rnd in (2, 1):  # most specific first
            ca = _counts(hashes_a[rnd][A.units[k].nodes[0]] for k in left_a)
            cb = _counts(hashes_b[rnd][B.units[k].nodes[0]] for k in left_b)
            unique_b = {hashes_b[rnd][B.units[k].nodes[0]]: k for k in left_b
                        if cb[hashes_b[rnd][B.units[k].nodes[0]]] == 1}
            for k in left_a:
                h = hashes_a[rnd][A.units[k].nodes[0]]
                if ca[h] == 1 and h in unique_b:
                    umap[k] = unique_b[h]
            taken = set(umap.values())
            left_a = [k for k in left_a if k not in umap]
            left_b = [k for k in left_b if k not in taken]

        def op(side: Side, k: int) -> tuple[str, str, str]:
            node = side.graph.node[side.units[k].nodes[0]]
            return (node.domain, node.op_type, node.overload)

        by_name_b = {(B.graph.node[B.units[k].nodes[0]].name, op(B, k)): k for k in left_b
                     if B.graph.node[B.units[k].nodes[0]].name}
        for k in left_a:
            name = A.graph.node[A.units[k].nodes[0]].name
            kb = by_name_b.pop((name, op(A, k)), None) if name else None
            if kb is not None:
                umap[k] = kb
        taken = set(umap.values())
        left_a = [k for k in left_a if k not in umap]
        left_b = [k for k in left_b if k not in taken]
        sm = difflib.SequenceMatcher(None, [op(A, k) for k in left_a], [op(B, k) for k in left_b], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                umap.update(zip(left_a[i1:i2], left_b[j1:j2]))
        taken = set(umap.values())
        left_a = [k for k in left_a if k not in umap]
        pool: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for k in left_b:
            if k not in taken:
                pool[op(B, k)].append(k)
        for k in left_a:
            cands = pool.get(op(A, k))
            if cands:
                umap[k] = cands.pop(0)
        matched = sum(1 for k in na if k in umap)
        renamed = sum(1 for k in na if k in umap and A.units[k].label != B.units[umap[k]].label)
        self.matched["nodes"] = MatchCount(matched, len(na) - matched, len(nb) - matched, renamed)

    def match_initializers(self, umap: dict[int, int]) -> dict[int, int]:
        A, B = self.A, self.B
        inits_a, inits_b = list(A.graph.initializer), list(B.graph.initializer)
        tmap = {k: B.init_pos[t.name] for k, t in enumerate(inits_a) if t.name in B.init_pos}
        taken = set(tmap.values())
        if len(tmap) < min(len(inits_a), len(inits_b)):
            # by role: the same input of matched calls whose bodies share a template
            for ka, kb in umap.items():
                ua, ub = A.units[ka], B.units[kb]
                if len(ua.reads) != len(ub.reads):
                    continue
                if ua.kind == "aten_call" and not self.pairs.same_template(ka, kb):
                    continue
                pairs = list(zip(ua.reads, ub.reads))
                if ua.kind == "aten_call" and ua.callee is None and ub.callee is None:
                    pairs.extend(zip(ua.constants, ub.constants))  # same template: same constant slots
                for ra, rb in pairs:
                    ta, tb = A.init_pos.get(ra), B.init_pos.get(rb)
                    if ta is not None and tb is not None and ta not in tmap and tb not in taken \
                            and ra not in A.input_pos and rb not in B.input_pos:
                        tmap[ta] = tb
                        taken.add(tb)
            # by content
            pool: dict[tuple[int, tuple[int, ...], str], list[int]] = defaultdict(list)
            for k, t in enumerate(inits_b):
                if k not in taken:
                    pool[(t.data_type, tuple(t.dims), content_digest(t))].append(k)
            for k, t in enumerate(inits_a):
                if k in tmap:
                    continue
                cands = pool.get((t.data_type, tuple(t.dims), content_digest(t)))
                if cands:
                    tmap[k] = cands.pop(0)
        renamed = sum(1 for ka, kb in tmap.items() if inits_a[ka].name != inits_b[kb].name)
        self.matched["initializers"] = MatchCount(len(tmap), len(inits_a) - len(tmap), len(inits_b) - len(tmap),
                                                  renamed)
        return tmap


def _neighbourhood_hashes(side: Side, rounds: int = 2) -> list[list[int]]:
    """Per main-graph node: hashes of its op, domain and attribute names, refined ``rounds`` times with the
    hashes of its producers (by input position) and consumers (as a multiset). ``[h0, h1, h2]``."""
    nodes = side.graph.node
    maps = side.maps
    h = [hash((n.domain, n.op_type, n.overload, tuple(sorted(a.name for a in n.attribute)), len(n.input),
               len(n.output))) for n in nodes]
    producers: list[list[int | str]] = []
    consumers: list[list[int]] = []
    for n in nodes:
        ps: list[int | str] = []
        for name in n.input:
            p = maps.producer.get(name)
            if p is not None:
                ps.append(p)
            else:
                ps.append("" if not name else "in" if name in side.input_pos else "init" if name in side.init_pos
                          else "outer")
        producers.append(ps)
        cs: list[int] = []
        for o in n.output:
            cs.extend(maps.consumers.get(o, ()))
        consumers.append(cs)
    out = [h]
    for _ in range(rounds):
        prev = out[-1]
        out.append([hash((prev[i], tuple(prev[p] if isinstance(p, int) else p for p in producers[i]),
                          tuple(sorted(prev[c] for c in consumers[i])))) for i in range(len(nodes))])
    return out


def _counts(items: Iterable[int]) -> dict[int, int]:
    out: dict[int, int] = defaultdict(int)
    for x in items:
        out[x] += 1
    return out

