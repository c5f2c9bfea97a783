"""One click into a call: the ƒ badge on call boxes of real exports (the zoo), with counts from torch's truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.gui.graph_items import NodeItem
from inspector.gui.graph_view import GraphView
from inspector.gui.main_window import MainWindow
from tests.conftest import ROOT

ZOO = ROOT / "tests" / "zoo"
SELF_ATTN = frozenset({"mod:model", "mod:model.layers.0", "mod:model.layers.0.self_attn"})


def _open(qtbot: Any, w: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(w.center.view_shown, timeout=60000):
        w.open_path(path)


def _truth(name: str) -> dict[str, Any]:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


def _click_badge(qtbot: Any, window: MainWindow, item: NodeItem) -> None:
    graph = window.center.graph
    assert item.badge is not None and item.badge.isVisible()
    graph.centerOn(item.badge)
    pos = graph.mapFromScene(item.badge.sceneBoundingRect().center())
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.mouseClick(graph.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def _ops(graph: GraphView) -> list[str]:
    return [i.node.label for i in graph.items_by_id.values() if i.node.kind == "op"]


def test_one_click_on_f_opens_an_aten_call_with_its_nodes(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, SELF_ATTN)
    graph = window.center.graph
    items = list(graph.items_by_id.values())
    # every call box has a drill-in badge, and nothing else has one
    assert all((i.badge is not None) == (i.node.kind in ("aten_call", "function_call")) for i in items)
    # the aten calls that sit directly in an opened module (torch's FX nodes that emitted ONNX nodes)
    opened = {m.removeprefix("mod:") for m in SELF_ATTN}
    direct = [n for n in _truth("llama_gqa")["fx_nodes"] if n["module"] in opened and n["onnx_nodes"]]
    assert sum(i.badge is not None for i in items) == len(direct) == 30
    sdpa = next(i for i in items
                if isinstance(i.node.ref, AtenCall) and i.node.ref.name == "scaled_dot_product_attention")
    _click_badge(qtbot, window, sdpa)
    scope = window.center.current_scope()
    assert isinstance(scope, AtenCall) and scope.name == "scaled_dot_product_attention"
    expected = next(n["onnx_nodes"] for n in _truth("llama_gqa")["fx_nodes"] if n["name"] == scope.name)
    assert len(_ops(graph)) == expected == 11
    assert window.center.crumbs.full_text() == ("main graph › model.layers.0.self_attn › "
                                                "aten::scaled_dot_product_attention (scaled_dot_product_attention)")
    # the history names what was open (the innermost of the three nested modules)
    assert window.center.history() == ["main graph  (+3 open: model.layers.0.self_attn)", "main graph"]
    assert [a.text() for a in window.center.history_menu.actions()][:2] == window.center.history()
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.back()
    assert window.center.current_view().expanded == SELF_ATTN


def test_one_click_on_f_enters_a_torchscript_module_function(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "ts_functions.onnx")
    graph = window.center.graph
    calls = [i for i in graph.items_by_id.values() if i.node.kind == "function_call"]
    truth = _truth("ts_functions")["module_functions"]
    assert len(calls) == sum(f["calls"] for f in truth)  # each instance call is a box with ƒ
    block = next(i for i in calls if i.node.ref[0].name == "Block")
    _click_badge(qtbot, window, block)
    key = window.center.current_scope()
    assert isinstance(key, FunctionKey) and key.name == "Block"
    body = next(f for f in onnx.load(str(ZOO / "ts_functions.onnx")).functions if f.name == "Block")
    assert sorted(_ops(graph)) == sorted(n.op_type for n in body.node)


def test_a_call_body_too_big_to_fit_never_offers_the_module_overview(qtbot, window: MainWindow):
    """The module overview stands in for a main graph only: a body that does not fit says nothing of it."""
    window.resize(800, 500)
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, SELF_ATTN)
    graph = window.center.graph
    sdpa = next(i for i in graph.items_by_id.values()
                if isinstance(i.node.ref, AtenCall) and i.node.ref.name == "scaled_dot_product_attention")
    _click_badge(qtbot, window, sdpa)
    assert isinstance(window.center.current_scope(), AtenCall)
    assert not graph.fits()
    assert window.center.info.full_text().startswith("20 boxes, 21 edges")
    assert "module overview" not in window.center.info.full_text()


def _marks(graph: GraphView) -> dict[str, str | None]:
    return {node_id: item.mark for node_id, item in graph.items_by_id.items() if item.mark}


def test_an_aten_call_expanded_in_place_keeps_the_marks_of_its_own_view(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, SELF_ATTN)
    graph = window.center.graph
    sdpa = next(i for i in graph.items_by_id.values()
                if isinstance(i.node.ref, AtenCall) and i.node.ref.name == "scaled_dot_product_attention")
    call = sdpa.node.ref
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        graph.select(sdpa.node.id)  # the first click of a double-click: the call is what the Signature tab shows
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.node_activated.emit(sdpa.node)  # double-click: expanded in place
    assert window.center.current_view().expanded == SELF_ATTN | {"call:scaled_dot_product_attention"}
    expanded = _marks(graph)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(call)  # the call's own view
    own = _marks(graph)
    # llama's SDPA: two shape-specialised reshape targets, the scale's square root, the mask's fill and the perm
    assert sorted(own) == ["const:val_194", "const:val_206/shape", "const:val_210", "const:val_214", "n:37"]
    assert expanded == own


def test_expanded_modules_and_aten_calls_are_drawn_outlined_and_named(qtbot, window: MainWindow):
    from inspector.gui.graph_items import GroupItem

    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, SELF_ATTN | {"call:scaled_dot_product_attention"})
    graph = window.center.graph
    groups = [i for i in graph.scene().items() if isinstance(i, GroupItem)]
    assert sorted(g.label.text() for g in groups) == [
        "aten::scaled_dot_product_attention  scaled_dot_product_attention", "layers.0  LlamaDecoderLayer",
        "model  LlamaModel", "self_attn  LlamaAttention"]
    q_proj = graph.items_by_id["mod:model.layers.0.self_attn.q_proj"]  # named past its open module; whole in its tip
    assert q_proj.node.label == "q_proj" and ">model.layers.0.self_attn.q_proj\nLinear, 1 node\n" in q_proj.toolTip()
    sdpa = next(g for g in groups if g.label.text().startswith("aten::scaled_dot_product_attention"))
    ops = [i for i in graph.items_by_id.values()
           if i.node.kind == "op" and sdpa.rect().contains(i.sceneBoundingRect())]
    assert len(ops) == 11  # the call's ONNX nodes, inside its outline, which sits behind them
    assert all(g.zValue() < i.zValue() for g in groups for i in ops)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.collapse_all()
    assert not [i for i in graph.scene().items() if isinstance(i, GroupItem)]
