"""The wiring of matched units: each must read from the matched producers, at the same positions; graph outputs
likewise. A read that differs is a ``rewired`` change.

Most reads of two exports of one model are wired alike, so the common cases are answered without building either
side's description of a value: a producer matched to itself that keeps its outputs, a graph input or initializer
matched by name, and, for graphs of plain nodes matched in place, whole nodes (``wired_alike_in_place``). Of two
sides cut as a pair only the units whose wiring may differ are looked at (``WiringCheck._checked``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import compress
from typing import Any

from inspector.core.diff.bodies import op_label
from inspector.core.diff.cut import Unit
from inspector.core.diff.follow import Follow
from inspector.core.diff.model import Change, Section
from inspector.core.diff.units import Side, UnitPairs, aten_family, not_in_place
from inspector.core.diff.values import same_content
from inspector.core.model.walk import may_have_subgraphs


class WiringCheck:
    """One check of the wiring of two matched graphs: units (``umap``), initializers (``tmap``) and graph inputs
    (``imap``) of A mapped to B's."""

    def __init__(self, pairs: UnitPairs, add: Callable[[Change], None], umap: dict[int, int], tmap: dict[int, int],
                 imap: dict[int, int]) -> None:
        self.pairs = pairs
        self.A, self.B = pairs.A, pairs.B
        self.add = add
        self.umap, self.tmap, self.imap = umap, tmap, imap
        self.fast = False
        self.prod_a: dict[str, int] = {}
        self.prod_b: dict[str, int] = {}
        self._back: dict[int, int] | None = None  # B's matched units -> A's, made on first use (``_matched_back``)
        # (kind, a call one side has and the other lacks) -> the other side's call of its target read where it is
        # read (``run.merged_calls``): ("added", B's call) -> A's; ("removed", A's call) -> B's
        self.stand_ins: dict[tuple[str, str], str] = {}
        # a call of A no call of B is matched to, read where B reads a call of another target matched to none
        # (``run.replaced_calls``): A's call -> B's, each (name, target)
        self.replaced: dict[tuple[str, str], tuple[str, str]] = {}

    def run(self, omap: dict[int, int]) -> None:
        """Check every matched unit's reads, then the graph outputs (``omap``: A's output -> B's)."""
        umap = self.umap
        alike_in_place = wired_alike_in_place(self.pairs, umap, self.outside_alike)
        self._prepare_sources(alike_in_place)
        A, B = self.A, self.B
        # the common cases, a value produced by a matched unit that keeps its outputs on both sides, or a graph
        # input or initializer, are checked inline (the same test as at the end of ``_check_reads``, without
        # building the two sources)
        self.fast = A.keeps_producers and B.keeps_producers
        if self.fast:
            self.prod_a, self.prod_b = A.producer, B.producer
        items: Iterable[tuple[int, int]] = umap.items()
        follow = self.pairs.follow
        if follow is not None:  # a pair's cut: the units whose wiring may differ, in the order of the map
            checked = self._checked(follow)
            items = compress(items, map(checked.__contains__, umap))
        for ka, kb in items:
            if ka in alike_in_place:
                continue
            ua, ub = A.unit(ka), B.unit(kb)
            if len(ua.reads) != len(ub.reads):
                continue
            if ua.kind == "aten_call" and not self.pairs.same_template(ka, kb):
                continue  # body changes already explain different inputs
            self._check_reads(ua, ub)
        self._check_outputs(omap)

    def _checked(self, follow: Follow) -> set[int]:
        """The units of A whose wiring may differ from B's when the sides are cut as a pair: the suspect ones
        (``Follow.suspect``), those matched to another unit, and those reading what a unit matched to another makes,
        or a unit matched to itself that keeps other outputs on each side, or a graph input or initializer matched
        to B's of another name. Any other unit reads the same names, made by the same units matched to themselves
        and keeping the same outputs, or by none (``_check_reads`` finds each wired alike)."""
        A, B, umap = self.A, self.B, self.umap
        suspect = follow.suspect
        moved = not_in_place(umap, len(A.units))
        checked = suspect.union(moved)
        makers = [k for k in moved if umap.get(k) is not None]
        makers += [k for k in suspect if k < A.n_calls and umap.get(k) == k and A.unit(k).outputs != B.unit(k).outputs]
        nodes = A.graph.node
        names: set[str] = set()
        for k in makers:
            unit = A.units[k]
            for i in unit.nodes if unit is not None else (A.node_of(k),):
                names.update(nodes[i].output)
        in_b, init_b, imap, tmap = B.input_pos, B.init_pos, self.imap, self.tmap
        for name, k in A.input_pos.items():  # (``outside_alike`` of each, inline)
            want = imap.get(k)
            if want is not None and in_b.get(name) != want:
                names.add(name)
        for name, k in A.init_pos.items():
            want = tmap.get(k)
            if want is not None and (name in in_b or init_b.get(name) != want):
                names.add(name)
        names.discard("")
        if names:
            checked.update(map(A.unit_of_node.__getitem__, follow.readers(names)))
        return checked

    def _prepare_sources(self, alike_in_place: set[int]) -> None:
        for side, keys in ((self.A, self.umap.keys()), (self.B, self.umap.values())):
            if not side.keeps_producers:  # graphs of plain nodes: look up only what is asked below
                names = {v.name for v in side.graph.output}
                for k in keys:
                    if k not in alike_in_place:  # (a unit of B wired alike is its A unit's id)
                        names.update(side.unit(k).reads)
                side.prepare_sources(names)

    def _check_reads(self, ua: Unit, ub: Unit) -> None:
        """Each read of ``ua`` against the read of ``ub`` at its position; those wired differently are changes."""
        A, B, umap, imap, tmap = self.A, self.B, self.umap, self.imap, self.tmap
        prod_a, prod_b, fast = self.prod_a, self.prod_b, self.fast
        node_unit_a, node_unit_b = A.unit_of_node, B.unit_of_node
        units_a, units_b = A.units, B.units
        in_a, in_b, init_a, init_b = A.input_pos, B.input_pos, A.init_pos, B.init_pos
        for pos, (ra, rb) in enumerate(zip(ua.reads, ub.reads)):
            pa = prod_a.get(ra)
            if pa is not None:
                ka2 = node_unit_a[pa]
                if units_a[ka2] is not None:
                    kb2 = umap.get(ka2)
                    pb = prod_b.get(rb)
                    if kb2 is not None and pb is not None and node_unit_b[pb] == kb2 and units_b[kb2] is not None:
                        outs_a, outs_b = A.unit(ka2).outputs, B.unit(kb2).outputs
                        if (outs_a.index(ra) if ra in outs_a else -1) == (outs_b.index(rb) if rb in outs_b else -1):
                            continue
            elif fast and ra:  # not produced: a graph input or an initializer (weights, mostly)
                ki = in_a.get(ra)
                if ki is not None:
                    want_k = imap.get(ki)
                    if want_k is None:
                        continue  # not matched: nothing to compare with
                    if rb and rb not in prod_b and in_b.get(rb) == want_k:
                        continue
                else:
                    t = init_a.get(ra)
                    if t is not None:
                        want_k = tmap.get(t)
                        if want_k is None:
                            continue
                        if rb and rb not in prod_b and rb not in in_b and init_b.get(rb) == want_k:
                            continue
            sa = A.source(ra)
            want = self._mapped(sa)
            sb = B.source(rb)
            if want is None:
                if not self._matched_back(sa, sb):
                    self._replaced(sa, sb)
                    continue  # what makes it is not matched, nor what B's reads instead: nothing to compare with
            elif want == sb or self._same_source(sa, want, sb):
                continue
            section, family = self._unit_place(A, ua)
            self._stand_in(sa, sb)
            self.add(Change("rewired", section, family, ua.label, A.describe(sa), B.describe(sb),
                            f"input {pos}: was {A.describe(sa)}, now {B.describe(sb)}", [ua.label]))

    def _stand_in(self, sa: tuple[Any, ...], sb: tuple[Any, ...]) -> None:
        """Where one side reads a call the other lacks and the other a call of the same target, that call stands in
        for it there: GPT-NeoX with parallel residuals against one without, whose two LayerNorms of a layer read one
        input in A (one call there: the optimizer keeps one of two equal calls) and two in B."""
        if sa[0] != "unit" or sb[0] != "unit":
            return
        if self._back is None:
            self._back = {kb: ka for ka, kb in self.umap.items()}
        added, removed = sb[1] not in self._back, sa[1] not in self.umap
        if added == removed:
            return
        ua, ub = self.A.unit(sa[1]), self.B.unit(sb[1])
        if ua.call is not None and ub.call is not None and ua.call.target == ub.call.target:
            if added:
                self.stand_ins.setdefault(("added", ub.call.name), ua.call.name)
            else:
                self.stand_ins.setdefault(("removed", ua.call.name), ub.call.name)


    def _replaced(self, sa: tuple[Any, ...], sb: tuple[Any, ...]) -> None:
        """Where a matched call reads, at one position, a call of A removed and a call of B added of another
        target, the one is in place of the other: a SegFormer exported with ReLU for GELU read "family removed
        aten::gelu" and "call added aten::relu", two changes unrelated."""
        if sa[0] != "unit" or sb[0] != "unit" or sa[1] in self.umap or sa[2] != sb[2]:
            return
        if self._back is None:
            self._back = {kb: ka for ka, kb in self.umap.items()}
        if sb[1] in self._back:
            return
        ca, cb = self.A.unit(sa[1]).call, self.B.unit(sb[1]).call
        if ca is not None and cb is not None and ca.target != cb.target:
            self.replaced.setdefault((ca.name, ca.target), (cb.name, cb.target))

    def _check_outputs(self, omap: dict[int, int]) -> None:
        A, B = self.A, self.B
        outs_a, outs_b = A.graph.output, B.graph.output
        for k, kb in omap.items():
            name = outs_a[k].name
            if not self.umap and name and name not in A.input_pos and name not in A.init_pos:
                continue  # produced by a unit (or from outside), and no unit is matched: nothing to compare with
            sa = A.source(name)
            want = self._mapped(sa)
            if want is None:
                continue
            sb = B.source(outs_b[kb].name)
            if want != sb and not self._same_source(sa, want, sb):
                self.add(Change("rewired", "output", "", outs_a[k].name, A.describe(sa), B.describe(sb),
                                f"{outs_a[k].name}: was {A.describe(sa)}, now {B.describe(sb)}", [outs_a[k].name]))

    def _matched_back(self, sa: tuple[Any, ...], sb: tuple[Any, ...]) -> bool:
        """Whether A read a unit with no match (removed) where B reads one matched to a unit of A: the mirror of a
        read of a unit B added, which is a rewiring (``renumber_b`` against ``renumber_a`` gave its fc2's reads of
        the adds it lacks; the other way round said nothing)."""
        if sa[0] != "unit" or sb[0] != "unit":
            return False
        if self._back is None:
            self._back = {kb: ka for ka, kb in self.umap.items()}
        return sb[1] in self._back

    def _mapped(self, src: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """A's source of a value as B's would be, or None when what makes it is not matched."""
        kind = src[0]
        if kind == "unit":
            kb = self.umap.get(src[1])
            return None if kb is None else ("unit", kb, src[2])
        if kind == "input":
            k = self.imap.get(src[1])
            return None if k is None else ("input", k)
        if kind == "init":
            k = self.tmap.get(src[1])
            return None if k is None else ("init", k)
        return src if kind == "none" else None

    def outside_alike(self, name: str) -> bool:
        """Whether a read of ``name``, which no node of A produces, passes ``_check_reads``' inline test when B
        reads the same name and its producers are A's: the empty name, a graph input matched to B's input of that
        name (or not matched at all), an initializer likewise."""
        A, B, imap, tmap = self.A, self.B, self.imap, self.tmap
        if not name:
            return True
        ki = A.input_pos.get(name)
        if ki is not None:
            want = imap.get(ki)
            return want is None or B.input_pos.get(name) == want
        t = A.init_pos.get(name)
        if t is None:
            return False
        want = tmap.get(t)
        return want is None or (name not in B.input_pos and B.init_pos.get(name) == want)

    def _same_source(self, sa: tuple[Any, ...], want: tuple[Any, ...], sb: tuple[Any, ...]) -> bool:
        """Differences that are not rewiring: two initializers with the same content (an optimizer shares one
        where the other export keeps copies), or another output of a producer whose body changed anyway."""
        if want[0] == "init" and sb[0] == "init":
            return same_content(self.A.graph.initializer[sa[1]], self.B.graph.initializer[sb[1]])
        if want[0] == "unit" and sb[0] == "unit" and want[1] == sb[1]:
            ua, ub = self.A.unit(sa[1]), self.B.unit(sb[1])
            if len(ua.outputs) != len(ub.outputs):
                return True
            return ua.kind == "aten_call" and not self.pairs.same_template(sa[1], sb[1])
        return False

    def _unit_place(self, side: Side, unit: Unit) -> tuple[Section, str]:
        if unit.kind == "aten_call" and unit.call is not None:
            return "aten_call", aten_family(unit.call.target)
        if unit.kind == "function_call" and unit.callee is not None:
            return "function", side.family_of_key.get(unit.callee, str(unit.callee))
        return "node", op_label(side.graph.node[unit.nodes[0]])


def wired_alike_in_place(pairs: UnitPairs, umap: dict[int, int], outside_alike: Callable[[str], bool]) -> set[int]:
    """For two graphs of plain nodes matched in place (``UnitPairs.plain_unequal``): the units whose wiring
    ``WiringCheck`` need not look at, found in one pass over A's nodes instead of building both
    sides' units and sources. A node equal to B's at its place and matched to it reads the same names; B's nodes
    are A's but for the unequal ones, so a name no unequal node makes on either side has the same producers on both
    sides (the same node, the same output position), or none on either. Such a read is wired alike when its
    producer is matched in place, or, made by no node, when ``outside_alike`` (``WiringCheck.outside_alike``)
    says so. Nodes with subgraphs (which read outer names) are left to the full check."""
    unequal = pairs.plain_unequal
    if unequal is None:
        return set()
    A, B = pairs.A, pairs.B
    nodes_a, nodes_b = A.graph.node, B.graph.node
    suspect: set[str] = set()  # names an unequal node makes, on either side
    for k in unequal:
        suspect.update(nodes_a[A.node_of(k)].output)
        suspect.update(nodes_b[B.node_of(k)].output)
    unit_of_node = A.unit_of_node
    producer: dict[str, int] = {}  # name -> unit of A that makes it (the last one, as ``Side.source`` reads)
    for i, node in enumerate(nodes_a):
        for name in node.output:
            producer[name] = unit_of_node[i]
    outside: dict[str, bool] = {}
    out: set[int] = set()
    for i, node in enumerate(nodes_a):
        k = unit_of_node[i]
        if k in unequal or umap.get(k) != k or may_have_subgraphs(node):
            continue
        for name in node.input:
            if not name:
                continue
            if name in suspect:
                break
            p = producer.get(name)
            if p is not None:
                if umap.get(p) != p:
                    break
                continue
            same = outside.get(name)
            if same is None:
                same = outside[name] = outside_alike(name)
            if not same:
                break
        else:
            out.add(k)
    return out
