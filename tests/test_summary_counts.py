"""The summary's node and call counts per aten target and per overload, and what it says of calls recognised by
template, are those their definitions give from the provenance: counted once per list of calls when an overload holds
exactly a target's calls, and per target otherwise (a folded export, whose calls of its functions are no flat aten
calls), on every zoo export and fixture, a stripped export and a folded one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inspector import api
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.summary import summary_dict
from tests.conftest import FIXTURES, ROOT
from tests.test_recognise import stripped

ZOO = ROOT / "tests" / "zoo"
MODELS = [*sorted(ZOO.glob("*.onnx")), *sorted(FIXTURES.glob("*.onnx"))]


def _expected_targets(index: ModelIndex) -> list[dict[str, Any]]:
    by_target: dict[str, list[Any]] = {}
    for c in index.provenance.calls:
        by_target.setdefault(c.target, []).append(c)
    rows = []
    for target, calls in sorted(by_target.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        row: dict[str, Any] = {"target": target, "calls": len(calls),
                               "nodes": sum(len(c.node_paths) for c in calls)}
        recognised = [c for c in calls if c.recognised]
        if recognised:
            row["recognised"] = {"calls": len(recognised),
                                 "templates": sorted({t for c in recognised for t in c.recognised}),
                                 "candidates": sorted({t for c in recognised for t in c.candidates})}
            if any(c.ruled_out for c in recognised):  # (ruled out by the names of its values: ``recognise_narrow``)
                row["recognised"]["ruled_out_by_name"] = sorted({t for c in recognised for t in c.ruled_out})
        rows.append(row)
    return rows


def _check(index: ModelIndex) -> dict[str, Any]:
    data = summary_dict(index, specialisation=False)
    assert data["aten_targets"] == _expected_targets(index)
    overloads = [ov for fam in index.families for ov in fam.overloads]
    assert [o["nodes"] for fam in data["families"] for o in fam["overloads"]] == [
        sum(len(c.node_paths) for c in ov.aten_calls) if ov.aten_calls else None for ov in overloads]
    assert index.provenance.recognised == sum(1 for c in index.provenance.calls if c.recognised)
    return data


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_counts_are_those_of_the_definitions(path: Path) -> None:
    _check(open_index(path))


def test_counts_of_a_stripped_and_a_folded_export(tmp_path: Path) -> None:
    data = _check(stripped("gpt2", tmp_path))
    assert any("recognised" in a for a in data["aten_targets"])
    folded = tmp_path / "folded.onnx"
    api.fold(str(ZOO / "llama_gqa.onnx"), folded)
    index = open_index(folded)
    flat = sum(ov.call_count for fam in index.families if fam.kind == "aten_call" for ov in fam.overloads)
    assert flat < len(index.provenance.calls)  # the calls of its functions are not flat aten calls: counted by target
    assert _check(index)["aten_targets"]


def test_calls_by_target_are_the_index_grouping_until_a_call_is_added() -> None:
    """``ProvenanceIndex.by_target`` hands out the grouping the index made its families from, as a new dict each
    time, and groups the calls again once one is added (a caller appending calls is not handed a stale grouping)."""
    index = open_index(ZOO / "gpt2.onnx")
    prov = index.provenance
    fresh: dict[str, list[Any]] = {}
    for c in prov.calls:
        fresh.setdefault(c.target, []).append(c)
    got = prov.by_target()
    assert got == fresh and list(got) == list(fresh) and got is not prov.by_target()
    got.clear()
    assert prov.by_target() == fresh  # (a caller's changes to the dict stay its own)
    prov.calls.append(prov.calls[0])
    assert prov.by_target()[prov.calls[0].target][-1] is prov.calls[0]
    assert len(prov.by_target()[prov.calls[0].target]) == len(fresh[prov.calls[0].target]) + 1
