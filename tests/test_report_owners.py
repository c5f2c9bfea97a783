"""Which overloads each body of a report serves (``OverloadInfo.body_ids``) is read from the analysis's counts per
overload, not by mapping each of a family's calls: it must be what the definition gives (an overload lists a body when
one of its members, its function or one of its calls, is a member of that body), in body order, on every zoo export
and fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.core.model.index import open_index
from inspector.core.specialise.specialiser import Specialiser
from inspector.report.build import build_report
from tests.conftest import FIXTURES, ROOT

MODELS = [*sorted((ROOT / "tests" / "zoo").glob("*.onnx")), *sorted(FIXTURES.glob("*.onnx"))]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_each_overload_lists_the_bodies_its_members_use(path: Path) -> None:
    index = open_index(path)
    report = build_report(index, graphs=False)
    analyses = Specialiser(index).analyse_all()
    checked = 0
    for info, fam, analysis in zip(report.families, index.families, analyses):
        assert info.detailed
        for ov_info, ov in zip(info.overloads, fam.overloads):
            members = {id(m) for m in ov.aten_calls} | ({id(ov.function)} if ov.function is not None else set())
            expected = [f"{info.id}-b{j}" for j, b in enumerate(analysis.bodies)
                        if any(id(m) in members or (ov.function is not None and m == ov.function)
                               for m in b.members)]
            assert ov_info.body_ids == expected, (fam.label, ov.label)
            checked += len(expected)
    assert checked >= len(index.families) > 0 or not index.families
