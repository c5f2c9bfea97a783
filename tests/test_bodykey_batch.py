"""The specialiser keys a family's calls in one loop (``bodykey.group_keys``, the common one-node group inline) and
counts each overload's calls per body while it binds them (``FamilyAnalysis.bodies_counted``): both must give what
the call-by-call steps give, on every export of the zoo and every fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.core.bodies.bodykey import group_key, group_keys
from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN
from inspector.core.specialise.specialiser import Specialiser
from tests.conftest import ROOT

ZOO_AND_FIXTURES = [*sorted((ROOT / "tests" / "zoo").glob("*.onnx")),
                    *sorted((ROOT / "tests" / "fixtures").glob("*.onnx"))]


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_group_keys_are_the_keys_of_each_call(path: Path) -> None:
    index = open_index(path)
    maps = index.graph_maps()
    for family in index.families:
        for ov in family.overloads:
            calls = ov.aten_calls
            expected = [group_key(c, maps) if c.scope == MAIN else None for c in calls]
            assert group_keys(calls, maps) == expected, (path.name, ov.label)


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_bodies_counted_while_binding_equal_the_counts_looked_up(path: Path) -> None:
    index = open_index(path)
    specialiser = Specialiser(index)
    for family in index.families:
        analysis = specialiser.analyse(family)
        for ov in family.overloads:
            members = [ov.function] if ov.function is not None else ov.aten_calls
            counted = analysis.bodies_counted(members)  # as the summary asks: the overload's own list
            looked_up = analysis.bodies_counted(list(members))  # another list: each member looked up
            assert [(id(b), n) for b, n in counted] == [(id(b), n) for b, n in looked_up], (path.name, ov.label)
            assert sum(n for _b, n in counted) == sum(
                1 for m in members for b in analysis.bodies if any(x is m for x in b.members))


def test_a_list_changed_after_the_analysis_is_looked_up_again() -> None:
    path = ROOT / "tests" / "zoo" / "llama_gqa.onnx"
    index = open_index(path)
    family = next(f for f in index.families if f.kind == "aten_call" and f.call_count > 2)
    analysis = Specialiser(index).analyse(family)
    calls = family.overloads[0].aten_calls
    before = sum(n for _b, n in analysis.bodies_counted(calls))
    dropped = calls.pop()
    try:
        assert sum(n for _b, n in analysis.bodies_counted(calls)) == before - 1
    finally:
        calls.append(dropped)
