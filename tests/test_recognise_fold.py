"""Fold of a stripped export says why an ambiguous recognised call stays flat: the overloads its body fits.

t5_noopt's stripped export (torch 2.13, tests/zoo/README.md) has 8 recognised calls whose bodies several overloads
lower to; fold listed each as "not an aten op", the reason of a call of another namespace.
"""

from __future__ import annotations

from pathlib import Path

from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from tests.conftest import ZOO
from tests.stripping import stripped_file


def test_an_ambiguous_call_stays_flat_with_the_overloads_it_fits(tmp_path: Path) -> None:
    index = open_index(stripped_file(ZOO / "t5_noopt.onnx", tmp_path))
    ambiguous = {c.name: c.candidates for c in index.provenance.calls if c.recognised and len(c.candidates) > 1}
    assert len(ambiguous) == 8
    _model, report = fold_model(index)
    reasons = {name: why for name, _target, why in report.left_flat}
    assert {name: reasons.get(name) for name in ambiguous} == {
        name: "fits several overloads: " + ", ".join(candidates) for name, candidates in ambiguous.items()}
    assert all(len(c) > 1 and all(t.startswith("aten::") for t in c) for c in ambiguous.values())
