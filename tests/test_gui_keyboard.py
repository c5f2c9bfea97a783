"""The graph by keyboard on a real export (llama_gqa of the zoo): Tab and the arrow keys move the selection between
boxes, Enter opens, Space expands; Alt+Left goes back wherever the focus is in the window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt, QThreadPool
from PySide6.QtWidgets import QApplication

from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import MAIN
from inspector.gui.main_window import MainWindow
from tests.conftest import ROOT

ZOO = ROOT / "tests" / "zoo"
SELF_ATTN = frozenset({"mod:model", "mod:model.layers.0", "mod:model.layers.0.self_attn"})


def _open(qtbot: Any, w: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(w.center.view_shown, timeout=60000):
        w.open_path(path)


def _selected(window: MainWindow) -> str | None:
    node = window.center.graph.selected()
    return node.id if node else None


def _fx_nodes() -> list[dict[str, Any]]:
    return json.loads((ZOO / "llama_gqa.truth.json").read_text())["fx_nodes"]


def test_tab_walks_the_boxes_in_reading_order_and_enter_expands_a_module(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    graph = window.center.graph
    graph.setFocus()
    seen = []
    for _ in range(len(graph.items_by_id)):
        qtbot.keyClick(graph, Qt.Key.Key_Tab)
        seen.append(_selected(window))
    # the collapsed main graph: the input, the two top modules torch names, the output
    assert seen == ["in:input_ids", "mod:model", "mod:lm_head", "out:linear_14"]
    assert window.details.toPlainText().startswith("linear_14") or graph.hasFocus()
    qtbot.keyClick(graph, Qt.Key.Key_Tab)  # past the last box, Tab leaves the graph
    assert not graph.hasFocus()
    graph.setFocus()
    qtbot.keyClick(graph, Qt.Key.Key_Backtab)
    assert _selected(window) == "mod:lm_head"
    qtbot.keyClick(graph, Qt.Key.Key_Up)
    assert _selected(window) == "mod:model"
    assert window.details.toPlainText().startswith("model")  # the selection shows its details
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(graph, Qt.Key.Key_Return)
    assert window.center.current_view().expanded == frozenset({"mod:model"})


def test_arrows_follow_the_graph_and_enter_opens_an_aten_call(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, SELF_ATTN)
    graph = window.center.graph
    graph.setFocus()
    graph.select("mod:model.layers.0.self_attn.q_proj", centre=False)
    qtbot.keyClick(graph, Qt.Key.Key_Down)
    # below q_proj sits the call that reads its output: torch's view of the q_proj linear
    fx = _fx_nodes()
    q_linear = next(n["name"] for n in fx if n["module"] == "model.layers.0.self_attn.q_proj")
    reader = next(n["name"] for n in fx if n["target"] == "aten::view" and n["args"]["self"] == {"node": q_linear})
    node = graph.selected()
    assert node is not None and isinstance(node.ref, AtenCall) and node.ref.name == reader
    qtbot.keyClick(graph, Qt.Key.Key_Up)
    assert _selected(window) == "mod:model.layers.0.self_attn.q_proj"
    # Down follows the edges: from the attention block to the residual add that reads its output projection
    graph.select("mod:model.layers.0.self_attn.o_proj", centre=False)
    o_linear = next(n["name"] for n in fx if n["module"] == "model.layers.0.self_attn.o_proj")
    residual = next(n["name"] for n in fx if n["target"] == "aten::add.Tensor" and {"node": o_linear} in
                    n["args"].values())
    qtbot.keyClick(graph, Qt.Key.Key_Down)
    node = graph.selected()
    assert node is not None and isinstance(node.ref, AtenCall) and node.ref.name == residual
    sdpa = next(i for i, item in graph.items_by_id.items()
                if isinstance(item.node.ref, AtenCall) and item.node.ref.name == "scaled_dot_product_attention")
    graph.select(sdpa, centre=False)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(graph, Qt.Key.Key_Return)  # Enter opens the call's nodes
    scope = window.center.current_scope()
    assert isinstance(scope, AtenCall) and scope.name == "scaled_dot_product_attention"
    assert window.details.toPlainText().startswith("aten::scaled_dot_product_attention")  # the call opened
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(graph, Qt.Key.Key_Backspace)
    graph.select(sdpa, centre=False)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(graph, Qt.Key.Key_Space)  # Space expands it in place
    assert window.center.current_view().expanded == SELF_ATTN | {sdpa}


@pytest.mark.parametrize("where", ["filter", "tree", "details", "search"])
def test_alt_left_goes_back_wherever_the_focus_is(qtbot, window: MainWindow, where: str):
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, frozenset({"mod:model"}))
    if where == "search":
        window.start_search()
    widget = {"filter": window.filter_box, "tree": window.family_view, "details": window.details,
              "search": window.search_panel.box}[where]
    widget.setFocus()
    QThreadPool.globalInstance().waitForDone(30000)
    QApplication.processEvents()  # focusing the tree may show its first row: let that view come first
    assert QApplication.focusWidget() is widget
    before = window.center.history()
    assert before
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(widget, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert window.center.history() == before[1:]
    if where != "tree":
        assert window.center.current_view().expanded == frozenset() and window.center.history() == []


def test_alt_left_in_a_window_with_two_graphs_goes_back_in_the_one_with_the_focus(qtbot, window: MainWindow):
    from inspector.gui.compare import CompareWindow

    assert window.center.back_shortcut.context() == Qt.ShortcutContext.WindowShortcut  # alone in its window
    compare = CompareWindow()
    qtbot.addWidget(compare)
    compare.show()
    qtbot.waitExposed(compare)
    with qtbot.waitSignal(compare.pair_loaded, timeout=60000):
        compare.open_pair(ZOO / "pair_scale_a.onnx", ZOO / "pair_scale_b.onnx")
    QThreadPool.globalInstance().waitForDone(30000)
    QApplication.processEvents()
    a, b = compare.side_a, compare.side_b
    assert a.back_shortcut.context() == b.back_shortcut.context() == Qt.ShortcutContext.WidgetWithChildrenShortcut
    with qtbot.waitSignal(a.view_shown, timeout=30000):
        a.show_scope(MAIN)
    with qtbot.waitSignal(a.view_shown, timeout=30000):
        a.show_scope(MAIN, frozenset({"mod:layers.0"}))
    before_b = (b.current_view(), b.history())
    assert a.history()
    a.back_button.setFocus()  # in side A's panel, outside its graph: the shortcut, not the graph's own key
    QApplication.processEvents()
    assert QApplication.focusWidget() is a.back_button
    with qtbot.waitSignal(a.view_shown, timeout=30000):
        qtbot.keyClick(a.back_button, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert a.current_view().expanded == frozenset() and (b.current_view(), b.history()) == before_b


def test_clicking_the_search_tab_puts_what_is_typed_next_in_the_search_box(qtbot, window: MainWindow):
    # it went on into the filter box above the tabs, which kept the focus: "rsqrt" filtered the Functions tree while
    # the Search tab, shown, stayed empty
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    window.filter_box.setFocus()
    bar = window.trees.tabBar()
    search = window.trees.indexOf(window.search_panel)
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(search).center())
    assert window.trees.currentWidget() is window.search_panel
    with qtbot.waitSignal(window.search_panel.shown, timeout=10000):
        qtbot.keyClicks(QApplication.focusWidget(), "rsqrt")
    assert window.search_panel.box.text() == "rsqrt" and window.filter_box.text() == ""
    calls = {f["name"] for f in _fx_nodes() if f["target"] == "aten::rsqrt"}  # (torch's FX nodes of rsqrt)
    assert len(calls) == 5 and window.search_panel.results.count() >= len(calls)


def test_a_selected_call_shows_its_body_by_its_own_names(qtbot, window: MainWindow):
    # the five rsqrt calls share one body, built from the first; each selected call's body read "inputs: add_3 ...
    # outputs: rsqrt" whatever the call (rsqrt_1 reads add_7 and makes rsqrt_1, as its graph beside it shows)
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    truth = [(f["name"], f["args"]["self"]["node"]) for f in _fx_nodes() if f["target"] == "aten::rsqrt"]
    assert [name for name, _read in truth] == ["rsqrt", "rsqrt_1", "rsqrt_2", "rsqrt_3", "rsqrt_4"]
    calls = {c.name: c for c in window.index.provenance.calls if c.target == "aten::rsqrt"}
    for name, read in truth:
        with qtbot.waitSignal(window.selection_shown, timeout=30000):
            window.select_in_tree(calls[name])
        lines = window.signature.view.toPlainText().splitlines()
        body = lines[next(k for k, line in enumerate(lines) if line.startswith("inputs:")):]
        assert body[0] == f"inputs: {read}" and f"{name} = Reciprocal" in "\n".join(body[:4])
        assert f"outputs: {name}" in body[:5]
        assert f"aten::rsqrt(self=%{read})" in window.signature.view.toPlainText()
