"""A caller that analyses every family it shows (summary, report, check) has the specialiser key their calls first, in
one pass in graph order (``Specialiser.key_calls``), instead of family by family: the analyses must be those of the
family-by-family steps, on every export of the zoo and every fixture, whichever families were keyed ahead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inspector.core.model.calls import AtenCall
from inspector.core.model.index import open_index
from inspector.core.specialise import specialiser as specialiser_module
from inspector.core.specialise.specialiser import FamilyAnalysis, Specialiser
from tests.conftest import ROOT

ZOO_AND_FIXTURES = [*sorted((ROOT / "tests" / "zoo").glob("*.onnx")),
                    *sorted((ROOT / "tests" / "fixtures").glob("*.onnx"))]


def _seen(analysis: FamilyAnalysis) -> list[Any]:
    """What an analysis says, with members by what they are (a call by its FX text), not by identity."""
    out: list[Any] = []
    for b in analysis.bodies:
        members = [m.fx_text if isinstance(m, AtenCall) else tuple(m) for m in b.members]
        out.append((b.fingerprints.full, b.fingerprints.template, members, [s.to_json() for s in b.specialised],
                    len(b.left_out), [(x.parameter.name, repr(x.value)) for x in b.bound]))
    for ov in analysis.family.overloads:
        members = [ov.function] if ov.function is not None else ov.aten_calls
        out.append([(b.fingerprints.full, n) for b, n in analysis.bodies_counted(members)])
    return out


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_analyses_of_calls_keyed_ahead_are_those_keyed_family_by_family(path: Path) -> None:
    index = open_index(path)
    one_by_one = Specialiser(index)
    expected = [_seen(one_by_one.analyse(f)) for f in index.families]
    assert [_seen(a) for a in Specialiser(index).analyse_all()] == expected
    # some families keyed ahead (the report keys those it details), the others family by family
    some = Specialiser(index)
    some.key_calls(index.families[::2])
    assert [_seen(some.analyse(f)) for f in index.families] == expected


def test_calls_keyed_ahead_are_keyed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call of a flat export is keyed by one pass in graph order, a step at a time with a pause after each (as
    the analyses pause); analysing the families keys none again."""
    index = open_index(ROOT / "tests" / "zoo" / "t5_noopt.onnx")
    monkeypatch.setattr(specialiser_module, "PAUSE_EVERY", 16)
    keyed: list[list[int]] = []
    real = specialiser_module.group_keys
    where = {id(c): k for k, c in enumerate(index.provenance.calls)}

    def counting(calls: Any, maps: Any) -> Any:
        keyed.append([where[id(c)] for c in calls])
        return real(calls, maps)

    monkeypatch.setattr(specialiser_module, "group_keys", counting)
    specialiser = Specialiser(index)
    pauses: list[int] = []
    specialiser.pause = lambda: pauses.append(len(keyed))
    specialiser.key_calls(index.families)
    ahead = [k for chunk in keyed for k in chunk]
    assert ahead == list(range(len(index.provenance.calls))) and len(ahead) > 200  # each once, in graph order
    assert {len(chunk) for chunk in keyed[:-1]} == {16} and pauses == list(range(1, len(keyed) + 1))
    keyed.clear()
    analyses = [specialiser.analyse(f) for f in index.families]
    assert keyed == []
    assert sum(len(a.bodies) for a in analyses) > 20
    specialiser.key_calls(index.families)  # keyed already: nothing is keyed twice
    assert keyed == []
