"""A filter that finds calls by name or module path opens their overloads, so the calls found are in view: typing
``down_proj`` kept ``aten::linear`` collapsed, and the two calls it found were a click away. Llama GQA from the zoo; the
truth is the module of each FX node as torch recorded it (``llama_gqa.truth.json``)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QModelIndex

from inspector.core.model.calls import AtenCall
from inspector.gui.family_model import FamilyModel
from inspector.gui.trees import OPENED_CALL_ROWS
from tests.conftest import ZOO, open_copy


def _shown_calls(view) -> list[str]:
    """The names of the call rows the view shows (under expanded overloads), in order."""
    model, out = view.model(), []
    stack = [QModelIndex()]
    while stack:
        parent = stack.pop(0)
        for r in range(model.rowCount(parent)):
            index = model.index(r, 0, parent)
            obj = index.data(FamilyModel.ObjectRole)
            if isinstance(obj, AtenCall):
                out.append(obj.name)
            elif view.isExpanded(index):
                stack.append(index)
    return out


def test_a_filter_that_finds_calls_opens_their_overloads(qtbot, window, tmp_path):
    open_copy(qtbot, window, tmp_path, "llama_gqa")
    view = window.family_view
    assert _shown_calls(view) == []  # (as opened: families show their overloads, no call rows)
    truth = json.loads((ZOO / "llama_gqa.truth.json").read_text())["fx_nodes"]
    down = [n["name"] for n in truth if n["onnx_nodes"] and "down_proj" in n["module"]]
    assert len(down) == 2
    window.filter_box.setFocus()
    with qtbot.waitSignal(window.filter_box.changed, timeout=10000):
        qtbot.keyClicks(window.filter_box, "down_proj")
    assert sorted(_shown_calls(view)) == sorted(down)
    # the overload's Calls column says how many of its calls the filter keeps
    linear = [n for n in truth if n["onnx_nodes"] and n["target"] == "aten::linear"]
    proxy = window.family_filter
    family = next(proxy.index(r, 0) for r in range(proxy.rowCount()) if proxy.index(r, 0).data() == "aten::linear")
    assert proxy.index(0, 1, family).data() == f"2 of {len(linear)}" == "2 of 15"
    # cleared: as before the filter, no call rows
    with qtbot.waitSignal(window.filter_box.changed, timeout=10000):
        window.filter_box.clear()
    assert _shown_calls(view) == []
    # a filter matching an overload's own name keeps all its calls, and leaves it as it was (collapsed)
    window.filter_box.set_now("linear")
    assert _shown_calls(view) == []


def test_the_overloads_a_filter_opens_show_a_bounded_number_of_call_rows(qtbot, window, tmp_path):
    # "layers" is in the module path of most of Llama's calls, in every family: overloads are opened in the tree's
    # order while their call rows stay within the bound (the first one whatever its count)
    open_copy(qtbot, window, tmp_path, "llama_gqa")
    matches = window.families.tree.matching("layers")
    found = sum(len(c) for c in matches.calls.values())
    assert found > 60 and len(matches.calls) > 10
    assert len(window.families.matched_overloads(matches, OPENED_CALL_ROWS)) == len(matches.calls)
    opened = window.families.matched_overloads(matches, 20)
    per = [len(matches.calls[id(row.internalPointer())]) for row in opened]
    assert sum(per) <= 20 and 1 <= len(opened) < len(matches.calls)
    assert len(window.families.matched_overloads(matches, 0)) == 1
