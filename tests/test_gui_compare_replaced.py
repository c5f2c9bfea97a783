"""The compare window on a call of one target added in place of another's (``tests/evidence/activations_*``: GELU in
A, ReLU in B, each module's calls named by torch in ``activations.truth.json``): each side that lacks the call shows
the call in its place, read where it is read. A's side showed its own ``relu``, the head's, another module's call
that has the name B's added call has (torch numbers each name's calls in graph order)."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from inspector.core.model.calls import AtenCall
from inspector.gui.compare import CompareWindow
from tests.test_gui_compare import ZOO, _load, _rows, compare  # noqa: F401  (the window fixture)

EVIDENCE = ZOO.parent / "evidence"
TRUTH = json.loads((EVIDENCE / "activations.truth.json").read_text(encoding="utf-8"))
FIRST = TRUTH["blocks.0.1"]  # the first block's activation: [target, FX name] in A and in B


def test_each_side_shows_the_call_in_place_of_the_one_it_lacks(qtbot, compare: CompareWindow):  # noqa: F811
    _load(qtbot, compare, EVIDENCE / "activations_a.onnx", EVIDENCE / "activations_b.onnx")
    rows = {row.data(0, Qt.ItemDataRole.UserRole).kind: row for _g, row in _rows(compare)}
    assert set(rows) == {"family_removed", "call_added"}
    for kind, lacking, side in (("call_added", "A", "a"), ("family_removed", "B", "b")):
        with qtbot.waitSignal(compare.change_shown, timeout=60000):
            compare.changes.setCurrentItem(rows[kind])
        scope = (compare.side_a if side == "a" else compare.side_b).current_scope()
        target, name = FIRST[side]
        assert isinstance(scope, AtenCall) and (scope.target, scope.name) == (target, name)
        info = (compare.twin.a if side == "a" else compare.twin.b).info.toPlainText()
        assert f"not in {lacking}; shown for comparison" in info and "read where it is read" in info
        # the side that has it shows its own call, not the one standing in on the other side (of that side's name)
        scope = (compare.side_b if side == "a" else compare.side_a).current_scope()
        other = "b" if side == "a" else "a"
        assert isinstance(scope, AtenCall) and (scope.target, scope.name) == tuple(FIRST[other])
