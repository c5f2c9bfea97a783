"""The review target follows what is shown: on every way of moving (tree, search, graph clicks and double-clicks,
Modules tab, Back/Forward, the Review list, compare windows, another model) the Signature tab, the review bar and
the target name the body the graph shows, and Ctrl+1 writes exactly that body (read back from the sidecar).

Real exports only: GPT-2 from the zoo (torch 2.13, dynamo with the optimizer), whose five layer_norm calls and two
SDPA calls are aten calls with bodies of their own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF, Qt

from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.review.store import ReviewKey, review_keys
from inspector.core.specialise.specialiser import SpecialisedValue
from inspector.core.util.paths import sidecar_path
from inspector.gui.analysis import Analyses
from inspector.gui.family_model import FamilyModel
from inspector.gui.main_window import MainWindow
from tests.conftest import FIXTURES

ZOO = Path(__file__).resolve().parent / "zoo"


@pytest.fixture
def gpt2(tmp_path: Path) -> Path:
    model = tmp_path / "gpt2.onnx"
    shutil.copy(ZOO / "gpt2.onnx", model)
    return model


def _open(qtbot: Any, window: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(path)


def _family(window: MainWindow, name: str) -> Any:
    assert window.index is not None
    fam = window.index.family("aten_call", "aten", name)
    assert fam is not None
    return fam


def _calls(window: MainWindow, name: str) -> list[AtenCall]:
    return [c for ov in _family(window, name).overloads for c in ov.aten_calls]


def _click_row(qtbot: Any, window: MainWindow, obj: Any) -> None:
    """Make ``obj``'s row of the functions tree current, as a click does, and wait for its body."""
    proxy = window.family_filter.mapFromSource(window.families.index_of(obj))
    assert proxy.isValid()
    window.trees.setCurrentWidget(window.family_view)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(proxy)


def _expected_key(window: MainWindow, obj: Any) -> str:
    """The sidecar key of the body of ``obj`` (an overload's or call's body), worked out apart from the window."""
    assert window.index is not None
    analyses = Analyses(window.index)
    sel = analyses.selection(obj)
    assert sel is not None
    fam = analyses.family_of(obj)
    assert fam is not None
    keys = [k for k, thing in review_keys(analyses.family(fam)) if thing is sel.analysis]
    assert len(keys) == 1
    return keys[0].to_text()


def _ctrl1_writes(qtbot: Any, window: MainWindow, model: Path) -> dict[str, Any]:
    """Press Ctrl+1 and read the sidecar back from disk."""
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    return json.loads(sidecar_path(model).read_text())["reviews"]


def _assert_target(window: MainWindow, obj: Any, words: str) -> None:
    """The Signature tab, the review bar and the target all name the body of ``obj``."""
    sel = window.session.selection
    assert sel is not None and window.session.target is not None
    assert window.session.target.item.obj is sel.analysis
    assert any(m is obj or m == obj for m in sel.analysis.members)
    assert words in window.signature.view.toPlainText().splitlines()[0]
    assert words in window.review_bar.target.full_text()
    assert window.review_bar.buttons["ok"].isEnabled()


def test_layer_norm_then_search_softmax_second_result_targets_the_sdpa_call_shown(qtbot, window, gpt2):
    """The bug this started from: the graph showed the SDPA call of the second Softmax while the Signature tab and
    the review bar still said aten::layer_norm, and Ctrl+1 marked layer_norm."""
    _open(qtbot, window, gpt2)
    layer_norm = _family(window, "layer_norm").overloads[0]
    _click_row(qtbot, window, layer_norm)
    assert "aten::layer_norm" in window.review_bar.target.full_text()
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    with qtbot.waitSignal(window.search_panel.shown, timeout=30000):
        qtbot.keyClicks(window.search_panel.box, "softmax")
    results = window.search_panel.results
    assert results.count() == 2
    second = results.item(1)
    hit = second.data(Qt.ItemDataRole.UserRole)
    sdpa = window.search_panel.owner(hit)
    assert sdpa is not None and sdpa.target == "aten::scaled_dot_product_attention"
    assert sdpa is _calls(window, "scaled_dot_product_attention")[1]
    rect = results.visualItemRect(second)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        qtbot.mouseClick(results.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.center.current_scope() is sdpa
    _assert_target(window, sdpa, "aten::scaled_dot_product_attention")
    assert "layer_norm" not in window.review_bar.target.full_text()
    reviews = _ctrl1_writes(qtbot, window, gpt2)
    assert list(reviews) == [_expected_key(window, sdpa)]
    assert reviews[_expected_key(window, sdpa)]["family"] == "aten::scaled_dot_product_attention"
    assert reviews[_expected_key(window, sdpa)]["status"] == "ok"
    assert ReviewKey.from_text(next(iter(reviews))).kind == "overload"


def _nothing_written(qtbot: Any, window: MainWindow, model: Path, why: str) -> None:
    """Nothing reviewable is shown: the buttons are disabled and say why, and Ctrl+1 writes nothing."""
    assert window.session.target is None
    assert why in window.review_bar.target.full_text()
    # the reason reads from its start, cut at its end where it does not fit (the whole of it in the tooltip): cut in
    # the middle, the main graph's read "select…en call (tree, search or a call box)" at 1366x768
    window.review_bar.target.resize(300, window.review_bar.target.height())
    shown, full = window.review_bar.target.text(), window.review_bar.target.full_text()
    assert shown != full and shown.endswith("…") and full.startswith(shown[:-1])
    assert not window.review_bar.buttons["ok"].isEnabled()
    assert why in window.review_bar.buttons["ok"].toolTip()
    qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    qtbot.wait(50)
    assert not sidecar_path(model).exists()


def _box(window: MainWindow, box_id: str) -> Any:
    item = window.center.graph.items_by_id[box_id]
    window.center.graph.centerOn(item)
    rect = item.sceneBoundingRect()
    return window.center.graph.mapFromScene(QPointF(rect.left() + 6, rect.top() + 6))


def _click_box(qtbot: Any, window: MainWindow, box_id: str) -> None:
    qtbot.mouseClick(window.center.graph.viewport(), Qt.MouseButton.LeftButton, pos=_box(window, box_id))


def _double_click_box(qtbot: Any, window: MainWindow, box_id: str) -> None:
    """A double-click as the mouse makes it: a click (which picks the box), then the double-click."""
    pos = _box(window, box_id)
    qtbot.mouseClick(window.center.graph.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.mouseDClick(window.center.graph.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def _main_with(qtbot: Any, window: MainWindow, *modules: str) -> None:
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, frozenset(f"mod:{m}" for m in modules))


def test_tree_click_targets_the_overload_clicked(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    _nothing_written(qtbot, window, gpt2, "Main graph: nothing to review")
    layer_norm = _family(window, "layer_norm").overloads[0]
    _click_row(qtbot, window, layer_norm)
    assert window.center.current_scope() is layer_norm.aten_calls[0]
    _assert_target(window, layer_norm.aten_calls[0], "aten::layer_norm")
    reviews = _ctrl1_writes(qtbot, window, gpt2)
    assert list(reviews) == [_expected_key(window, layer_norm)]
    assert reviews[_expected_key(window, layer_norm)]["family"] == "aten::layer_norm"


def test_graph_click_on_a_call_box_targets_that_call(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    _main_with(qtbot, window, "transformer")
    add = window.center.graph.items_by_id["call:add_1"].node.ref
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        _click_box(qtbot, window, "call:add_1")
    assert window.center.current_scope() == MAIN  # the graph stays; the box picked in it is what is shown
    _assert_target(window, add, "aten::add.Tensor")
    assert window.family_view.currentIndex().data(FamilyModel.ObjectRole) is add  # the tree follows
    reviews = _ctrl1_writes(qtbot, window, gpt2)
    assert list(reviews) == [_expected_key(window, add)]
    assert reviews[_expected_key(window, add)]["family"] == "aten::add"


def test_graph_click_on_a_node_of_no_call_or_a_module_leaves_nothing_to_review(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    _click_row(qtbot, window, _family(window, "layer_norm").overloads[0])
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.back()  # the main graph, as it was opened
    # the Split of the main graph that the optimizer made of the first attention's three Slices: of no aten call,
    # drawn in that attention (``module_tree._by_neighbours``)
    _main_with(qtbot, window, "transformer", "transformer.h.0", "transformer.h.0.attn")
    _click_box(qtbot, window, "n:7")
    _nothing_written(qtbot, window, gpt2, "Split node of the main graph belongs to no aten call")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.back()
    _click_box(qtbot, window, "mod:transformer")
    _nothing_written(qtbot, window, gpt2, "Module transformer is not an overload")
    assert window.signature.view.toPlainText().startswith("Module transformer is not an overload")


def test_double_click_into_a_module_leaves_nothing_to_review(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    _click_row(qtbot, window, _family(window, "layer_norm").overloads[0])
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.back()
    _double_click_box(qtbot, window, "mod:transformer")
    assert window.center.current_view().expanded == frozenset({"mod:transformer"})
    _nothing_written(qtbot, window, gpt2, "Module transformer is not an overload")


def test_double_click_on_an_aten_call_box_keeps_that_call_as_it_opens(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    _main_with(qtbot, window, "transformer", "transformer.ln_f")
    box = next(i for i in window.center.graph.items_by_id.values() if i.node.kind == "aten_call"
               and i.node.ref.target == "aten::layer_norm")
    call = box.node.ref
    _double_click_box(qtbot, window, box.node.id)  # expands the call in place
    assert box.node.id in window.center.current_view().expanded
    qtbot.waitUntil(lambda: window.session.selection is not None, timeout=30000)
    _assert_target(window, call, "aten::layer_norm")
    assert call is _calls(window, "layer_norm")[-1]  # ln_f's, the last of the five
    reviews = _ctrl1_writes(qtbot, window, gpt2)
    assert list(reviews) == [_expected_key(window, call)]


def test_f_opens_an_aten_call_body_and_targets_it(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    _main_with(qtbot, window, "transformer")
    item = window.center.graph.items_by_id["call:view"]
    view = item.node.ref
    graph = window.center.graph
    graph.centerOn(item.badge)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        qtbot.mouseClick(graph.viewport(), Qt.MouseButton.LeftButton,
                         pos=graph.mapFromScene(item.badge.sceneBoundingRect().center()))
    assert window.center.current_scope() is view
    _assert_target(window, view, "aten::view")
    reviews = _ctrl1_writes(qtbot, window, gpt2)
    assert list(reviews) == [_expected_key(window, view)]


def test_double_click_into_a_function_body_targets_its_overload(qtbot, window, tmp_path):
    model = tmp_path / "overloads.onnx"
    shutil.copy(FIXTURES / "overloads.onnx", model)
    _open(qtbot, window, model)
    qtbot.waitUntil(lambda: "n:5" in window.center.graph.items_by_id, timeout=30000)
    key = window.center.graph.items_by_id["n:5"].node.ref[0]
    assert key == FunctionKey("local", "sm", "axis_1")
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        _double_click_box(qtbot, window, "n:5")
    assert window.center.current_scope() == key
    sel = window.session.selection
    assert sel is not None and sel.title == "local.sm:axis_1" and key in sel.analysis.members
    assert window.review_bar.target.full_text() == "overload local.sm:axis_1"
    assert window.signature.view.toPlainText().startswith("local.sm:axis_1")
    overload = next(o for o in window.index.family("function", "local", "sm").overloads if o.function == key)
    reviews = _ctrl1_writes(qtbot, window, model)
    assert list(reviews) == [_expected_key(window, overload)]


def test_modules_tab_shows_a_module_and_nothing_to_review(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    _click_row(qtbot, window, _family(window, "layer_norm").overloads[0])
    window.trees.setCurrentWidget(window.module_view)
    model = window.module_view.model()
    root = model.index(0, 0)
    row = next(model.index(r, 0, root) for r in range(model.rowCount(root))
               if model.index(r, 0, root).data() == "transformer")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.module_view.setCurrentIndex(row)
    assert window.center.current_scope() == MAIN
    assert window.center.graph.selected().id == "mod:transformer"
    _nothing_written(qtbot, window, gpt2, "Module transformer is not an overload")


def test_back_and_forward_retarget_what_they_show(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    layer_norm = _family(window, "layer_norm").overloads[0]
    sdpa = _family(window, "scaled_dot_product_attention").overloads[0]
    _click_row(qtbot, window, layer_norm)
    _click_row(qtbot, window, sdpa)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        qtbot.keyClick(window.center.graph, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert window.center.current_scope() is layer_norm.aten_calls[0]
    _assert_target(window, layer_norm.aten_calls[0], "aten::layer_norm")
    assert _ctrl1_writes(qtbot, window, gpt2).keys() == {_expected_key(window, layer_norm)}
    assert window.center.forward_button.isEnabled()
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.center.forward_button.click()
    assert window.center.current_scope() is sdpa.aten_calls[0]
    _assert_target(window, sdpa.aten_calls[0], "aten::scaled_dot_product_attention")
    assert _ctrl1_writes(qtbot, window, gpt2).keys() == {_expected_key(window, layer_norm),
                                                         _expected_key(window, sdpa)}
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.back()
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.back()  # the main graph: nothing to review
    assert window.center.current_scope() == MAIN and window.session.target is None
    assert not window.review_bar.buttons["ok"].isEnabled()


def test_review_list_jump_targets_the_value_double_clicked(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    _click_row(qtbot, window, _family(window, "layer_norm").overloads[0])
    window.trees.setCurrentWidget(window.review_panel)
    tree = window.review_panel.tree
    family_row = next(tree.topLevelItem(k) for k in range(tree.topLevelItemCount())
                      if tree.topLevelItem(k).text(0) == "aten::scaled_dot_product_attention")
    row = next(family_row.child(k) for k in range(family_row.childCount())
               if isinstance(family_row.child(k).data(0, Qt.ItemDataRole.UserRole).obj, SpecialisedValue))
    item = row.data(0, Qt.ItemDataRole.UserRole)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        tree.itemActivated.emit(row, 0)
    assert window.session.target is not None and window.session.target.item.obj is item.obj
    assert isinstance(window.center.current_scope(), AtenCall)
    assert window.center.current_scope().target == "aten::scaled_dot_product_attention"
    assert window.review_bar.target.full_text() == item.label
    reviews = _ctrl1_writes(qtbot, window, gpt2)
    assert list(reviews) == [item.key.to_text()] and reviews[item.key.to_text()]["status"] == "ok"
    assert ReviewKey.from_text(item.key.to_text()).kind == "value"


def test_compare_windows_neither_write_nor_move_the_target(qtbot, window, gpt2):
    _open(qtbot, window, gpt2)
    layer_norm = _family(window, "layer_norm").overloads[0]
    _click_row(qtbot, window, layer_norm)
    first, last = _calls(window, "layer_norm")[0], _calls(window, "layer_norm")[-1]
    other = window.family_compare.compare(first, last)
    assert other is not None
    qtbot.waitUntil(lambda: other.ready, timeout=30000)
    other.activateWindow()
    qtbot.keyClick(other, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    qtbot.wait(50)
    assert not sidecar_path(gpt2).exists()  # the overload comparison has no review bar
    other.close()
    compare = window.open_compare(ZOO / "gpt2_dynamic.onnx")
    assert compare is not None
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        pass
    qtbot.keyClick(compare, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    qtbot.wait(50)
    assert not sidecar_path(gpt2).exists()
    compare.close()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    _assert_target(window, layer_norm.aten_calls[0], "aten::layer_norm")
    reviews = _ctrl1_writes(qtbot, window, gpt2)
    assert list(reviews) == [_expected_key(window, layer_norm)]


def test_opening_another_model_leaves_no_target_until_one_is_shown(qtbot, window, gpt2, tmp_path):
    _open(qtbot, window, gpt2)
    _click_row(qtbot, window, _family(window, "layer_norm").overloads[0])
    other = tmp_path / "tiny_noopt.onnx"
    shutil.copy(ZOO / "tiny_noopt.onnx", other)
    _open(qtbot, window, other)
    _nothing_written(qtbot, window, other, "Main graph: nothing to review")
    assert not sidecar_path(gpt2).exists()
    assert window.signature.view.toPlainText().startswith("Main graph: nothing to review")
    layer_norm = _family(window, "layer_norm").overloads[0]
    _click_row(qtbot, window, layer_norm)
    _assert_target(window, layer_norm.aten_calls[0], "aten::layer_norm")
    reviews = _ctrl1_writes(qtbot, window, other)
    assert list(reviews) == [_expected_key(window, layer_norm)]
    assert not sidecar_path(gpt2).exists()


def test_the_review_bar_names_which_body_of_an_overload_it_marks(qtbot, window, tmp_path):
    """Llama's aten::add.Tensor has two bodies, each reviewed on its own: the 5 RMSNorm Adds of eps (torch: their
    ``other`` is 1e-06) and the 8 Adds of two tensors. The bar read "overload aten::add.Tensor …" for both; it names the
    body of the calls shown, and how many calls share it, and Ctrl+1 marks that body alone."""
    model = tmp_path / "llama.onnx"
    shutil.copy(ZOO / "llama_gqa.onnx", model)
    truth = json.loads((ZOO / "llama_gqa.truth.json").read_text())["fx_nodes"]
    adds = [n for n in truth if n["target"] == "aten::add.Tensor" and n["onnx_nodes"]]
    eps = [n["name"] for n in adds if n["args"]["other"] == 1e-06]
    assert (len(eps), len(adds) - len(eps)) == (5, 8) and eps[0] == "add_3"
    _open(qtbot, window, model)
    calls = {c.name: c for c in _calls(window, "add")}
    _click_row(qtbot, window, calls["add_3"])
    first = window.review_bar.target.full_text()
    assert first.endswith(": body of 5 calls") and "(add_3)" in first and "overload" not in first
    _click_row(qtbot, window, calls["add_4"])
    second = window.review_bar.target.full_text()
    assert second.endswith(": body of 8 calls") and "(add_4)" in second
    reviews = _ctrl1_writes(qtbot, window, model)
    assert list(reviews) == [_expected_key(window, calls["add_4"])] != [_expected_key(window, calls["add_3"])]
