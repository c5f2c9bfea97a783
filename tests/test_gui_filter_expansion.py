"""Clearing the functions filter gives back the tree as it was: the rows expanded before filtering are expanded
again (the filter's reset collapsed every row, so a reader lost the calls they had opened). GPT-2 from the zoo."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from inspector.gui.family_model import FamilyModel
from tests.conftest import ZOO


def _expanded(window) -> set[str]:
    view, proxy = window.family_view, window.family_filter
    fams = [proxy.index(r, 0) for r in range(proxy.rowCount())]
    rows = fams + [proxy.index(r, 0, f) for f in fams for r in range(proxy.rowCount(f))]
    return {f"{r.parent().data() or ''}/{r.data()}" for r in rows if view.isExpanded(r)}


def test_clearing_the_filter_expands_again_what_was_expanded(qtbot, window):
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(ZOO / "gpt2.onnx")
    view, proxy = window.family_view, window.family_filter
    fams = {proxy.index(r, 0).data(): proxy.index(r, 0) for r in range(proxy.rowCount())}
    layer_norm = fams["aten::layer_norm"]
    overload = proxy.index(0, 0, layer_norm)
    view.expand(overload)  # its five calls shown
    assert proxy.rowCount(overload) == 5
    view.collapse(fams["aten::view"])
    before = _expanded(window)
    assert "aten::layer_norm/" + str(overload.data()) in before and "/aten::view" not in before
    assert len([e for e in before if e.startswith("/")]) == len(fams) - 1
    window.filter_box.set_now("softmax")
    assert proxy.rowCount() < len(fams)
    window.filter_box.set_now("")
    assert proxy.rowCount() == len(fams)
    assert _expanded(window) == before
    assert all(proxy.index(r, 0).data(FamilyModel.ObjectRole) is not None for r in range(proxy.rowCount()))
