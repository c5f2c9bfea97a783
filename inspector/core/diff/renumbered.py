"""Aten calls whose FX names may have been renumbered between two exports, and how matching pairs them then.

torch names the FX calls that share a name in graph order (``add``, ``add_1``, …, ``add_15``), so one call more or
less of a name shifts the number of every call of it after that one: the FX name no longer says which call it is.
Matching pairs aten calls by (target, FX name, module chain) first (``matching.Matcher.match_aten``). For a call of
a name the two sides have a different number of calls of (``shifted_names``), what it reads decides where its name
does not: a pair by name whose call of B reads none of what the calls A's call reads are matched to gives way to the
call of B of its target that reads all of that, where there is one; without one, it is given up when another call
of A of its target reads all of what the calls B's call reads are matched to (that one is its pair). Otherwise the
name stands, and always where the two calls' FX texts are equal (their arguments' names with them): an optimised
export and its unoptimised one have one FX graph, so one name for each call, and the optimiser rewires some reads
(its ``_unsafe_view_1`` reads ``expand_3`` where the other's reads a ``clone_1`` the optimiser removed; t5's
transposes read others where it folded some, and were paired with their neighbours).

Case: BART exported again with ``gelu_new`` (4 adds more, in its activations) has its decoder's 3 residual adds as
``add_15``, ``add_16`` and ``add_19`` where the other export has ``add_13``, ``add_14`` and ``add_15``. Paired by
name in their one module, its ``add_15`` was the other's ``add_13``, and the diff reported 9 rewirings that were
none (``tests/zoo/renumber_*`` are such a pair).

Only calls the exporter named are looked at: a call recognised by body template in nodes without metadata has a name
we gave it, and its nodes may be grouped otherwise than the exporter's (a stripped GPT-2 against its export read
3 changes more). And only the calls of shifted names, so two exports of one FX graph (the common case) cost one
count of names. Each look-up is by (target, a call read), indexed once per side.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Literal

from inspector.core.diff.units import Side
from inspector.core.model.calls import AtenCall

SideName = Literal["A", "B"]


def name_base(name: str) -> str:
    """``add`` of the FX names ``add`` and ``add_15``."""
    head, sep, tail = name.rpartition("_")
    return head if sep and tail.isdigit() else name


def shifted_names(calls_a: Iterable[AtenCall], calls_b: Iterable[AtenCall]) -> set[str]:
    """The name bases (``name_base``) the two sides have a different number of calls of (calls the exporter named:
    not recognised by template)."""
    counts: dict[str, int] = defaultdict(int)
    for calls, step in ((calls_a, 1), (calls_b, -1)):
        for call in calls:
            if not call.recognised:
                counts[name_base(call.name)] += step
    return {base for base, n in counts.items() if n}





def renumbering(A: Side, B: Side, ids_a: Iterable[int], ids_b: Iterable[int], keyed: dict[int, int],
                taken: dict[int, int], unequal: set[int] | None) -> Renumbered | None:
    """How the calls ``ids_a`` of A of FX names renumbered between the sides pair with ``ids_b`` of B; None when no
    name is. ``keyed``: A's calls matched so far -> B's, and ``taken`` the other way; ``unequal``: the calls whose
    nodes differ, where the others match in place."""
    units_a, units_b = A.units, B.units
    shifted = shifted_names((units_a[k].call for k in ids_a),  # type: ignore[union-attr,misc]
                            (units_b[k].call for k in ids_b))  # type: ignore[union-attr,misc]
    if not shifted:
        return None
    if unequal is None:
        return Renumbered(A, B, shifted, ids_a, ids_b, keyed.get, taken.get)
    return Renumbered(A, B, shifted, ids_a, ids_b,  # (the calls of equal nodes match in place)
                      lambda k: keyed.get(k, None if k in unequal else k),
                      lambda kb: taken.get(kb, None if kb in unequal else kb))


class Renumbered:
    """The pairing of ``A``'s aten calls of shifted names (see the module doc). ``to_b`` and ``to_a``: a call's
    counterpart on the other side as matched so far (the calls a call reads come before it in graph order), or
    None; ``left_a`` and ``left_b``: the calls that may be paired here (those of unequal nodes, when the rest match
    in place)."""

    def __init__(self, A: Side, B: Side, shifted: set[str], left_a: Iterable[int], left_b: Iterable[int],
                 to_b: Callable[[int], int | None], to_a: Callable[[int], int | None]) -> None:
        self.A, self.B, self.shifted = A, B, shifted
        self.left: dict[SideName, Iterable[int]] = {"A": left_a, "B": left_b}
        self.to_b, self.to_a = to_b, to_a
        self._readers: dict[SideName, dict[tuple[str, int], list[int]]] = {}
        self._names: dict[SideName, dict[tuple[str, str], int]] = {}

    def pair(self, ka: int, kb: int | None) -> int | None:
        """The call of B that A's call ``ka`` pairs with, given ``kb``, the one its FX name found (None: none)."""
        call = self.A.unit(ka).call
        assert call is not None
        named_b = self.B.unit(kb).call if kb is not None else None
        if name_base(call.name) not in self.shifted or call.recognised or (named_b is not None and (
                named_b.recognised or named_b.fx_text == call.fx_text)):
            return kb  # (one FX node's whole text, its arguments' names with it: the same call of one FX graph)
        images = self._mapped(_calls_read(self.A, ka), "B")
        if kb is not None and (not images or not images.isdisjoint(_calls_read(self.B, kb))):
            return kb  # (it reads alike, or nothing it reads is matched yet: the name stands)
        other = self._reader("B", call.target, images,
                             lambda k: k != kb and self.to_a(k) is None and not self._claimed(k))
        if other is not None or kb is None:
            return other
        read_by_b = self._mapped(_calls_read(self.B, kb), "A")
        if self._reader("A", call.target, read_by_b, lambda k: k != ka and self.to_b(k) is None) is not None:
            return None  # (another call of A reads what B's call reads: that one is its pair)
        return kb

    def _claimed(self, kb: int) -> bool:
        """Whether B's call ``kb`` has its own call of A: one of its target and name with an equal FX text (the
        optimiser of t5 folded a transpose its unoptimised export keeps: that one's neighbour, which reads what it
        read, is the neighbour's own, not its)."""
        call = self.B.unit(kb).call
        assert call is not None
        ka = self._named("A").get((call.target, call.name))
        return ka is not None and self.A.unit(ka).call.fx_text == call.fx_text  # type: ignore[union-attr]

    def _mapped(self, calls: set[int], other: SideName) -> set[int]:
        """The calls of side ``other`` that ``calls`` (of the other side) are matched to so far; one not matched yet
        (it comes later in this side's graph order) by its target and FX name, where that name is not shifted."""
        to_other = self.to_b if other == "B" else self.to_a
        side = self.A if other == "B" else self.B
        out = set()
        for k in calls:
            m = to_other(k)
            if m is None:
                call = side.unit(k).call
                assert call is not None
                if name_base(call.name) not in self.shifted and not call.recognised:
                    m = self._named(other).get((call.target, call.name))
            if m is not None:
                out.add(m)
        return out

    def _named(self, side: SideName) -> dict[tuple[str, str], int]:
        """A side's calls by target and FX name, made on first use."""
        found = self._names.get(side)
        if found is None:
            s = self.A if side == "A" else self.B
            found = self._names[side] = {(c.target, c.name): k for k in self.left[side]
                                         if (c := s.unit(k).call) is not None and not c.recognised}
        return found

    def _reader(self, side: SideName, target: str, reads: set[int], free: Callable[[int], bool]) -> int | None:
        """The first call of ``side`` of ``target`` and a shifted name that reads every call of ``reads`` (not
        empty) and is ``free``: looked for among the readers of the call of ``reads`` that the fewest read."""
        if not reads:
            return None
        s, index = (self.A if side == "A" else self.B), self._index(side)
        for k in min((index.get((target, m), ()) for m in reads), key=len):
            if free(k) and reads <= _calls_read(s, k):
                return k
        return None

    def _index(self, side: SideName) -> dict[tuple[str, int], list[int]]:
        """A side's calls of shifted names by target and each call they read, made on first use."""
        found = self._readers.get(side)
        if found is None:
            s, readers = (self.A if side == "A" else self.B), defaultdict(list)
            for k in self.left[side]:
                call = s.unit(k).call
                assert call is not None
                if name_base(call.name) in self.shifted and not call.recognised:
                    for m in _calls_read(s, k):
                        readers[(call.target, m)].append(k)
            found = self._readers[side] = dict(readers)
        return found


def _calls_read(side: Side, k: int) -> set[int]:
    """The aten calls of ``side`` whose outputs unit ``k`` reads."""
    producer, unit_of_node, n = side.producer, side.unit_of_node, side.n_calls
    out = set()
    for name in side.unit(k).reads:
        i = producer.get(name)
        if i is not None and 0 <= (u := unit_of_node[i]) < n:
            out.add(u)
    return out
