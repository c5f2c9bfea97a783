"""Reviews by mouse and key, saved next to the model and reloaded; search with keyboard navigation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings, Qt, QThreadPool

from inspector.core.specialise.specialiser import SpecialisedValue
from inspector.core.util.paths import sidecar_path
from inspector.gui.family_model import FamilyModel
from inspector.gui.main_window import MainWindow
from tests.conftest import FIXTURES, ZOO


@pytest.fixture
def make_window(qtbot, tmp_path: Path):
    windows = []

    def make() -> MainWindow:
        settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
        w = MainWindow(settings)
        qtbot.addWidget(w)
        w.show()
        qtbot.waitExposed(w)
        w.activateWindow()
        windows.append(w)
        return w

    yield make
    QThreadPool.globalInstance().waitForDone(30000)


def _open(qtbot, window: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(path)


def _select_overload(qtbot, window: MainWindow, family: str, overload: str) -> None:
    proxy = window.family_filter
    window.filter_box.set_now(family)
    fam = next(proxy.index(r, 0) for r in range(proxy.rowCount()) if proxy.index(r, 0).data() == family)
    ov = next(proxy.index(r, 0, fam) for r in range(proxy.rowCount(fam)) if proxy.index(r, 0, fam).data() == overload)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(ov)


def test_review_an_overload_and_a_value_then_reopen(qtbot, make_window, tmp_path: Path):
    model = tmp_path / "overloads.onnx"
    shutil.copy(FIXTURES / "overloads.onnx", model)
    window = make_window()
    _open(qtbot, window, model)
    listed = window.review_panel.items()
    assert listed and all(r.status == "unreviewed" for _i, r in listed)
    before = len(listed)

    _select_overload(qtbot, window, "local.tr", "perm_0231")
    panel = window.signature.view.toPlainText()
    assert "Transpose<perm = [0, 2, 3, 1]>" in panel
    (perm,) = window.signature.specialised()
    assert perm.varies and "#f6b26b" in window.signature.view.toHtml()  # highlighted as varying

    # the overload is the default target; mark it by keyboard
    window.review_bar.note.setText("checked against torchlib")
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    # click the highlighted perm to target it, then mark it suspicious with the mouse
    window.signature.value_clicked.emit(perm)
    assert "perm" in window.review_bar.target.full_text()
    # too narrow for the whole label, the value stays whole and the calls it belongs to go (it was cut in the middle)
    label = window.review_bar.target
    value_part = label.full_text().split("  — ")[0]
    assert value_part.endswith("= [0, 2, 3, 1]")
    label.resize(label.fontMetrics().horizontalAdvance(value_part + "  — o…") + 4, label.height())
    assert label.text().startswith(value_part) and label.text().endswith("…")
    window.review_bar.note.setText("perm should be [0,2,1,3]?")
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        window.review_bar.buttons["suspicious"].click()

    sidecar = sidecar_path(model)
    data = json.loads(sidecar.read_text())
    statuses = sorted((e["status"], e["note"]) for e in data["reviews"].values())
    assert statuses == [("ok", "checked against torchlib"), ("suspicious", "perm should be [0,2,1,3]?")]
    open_after = sum(1 for _i, r in window.review_panel.items() if r.status == "unreviewed")
    assert open_after == before - 2
    window.close()

    again = make_window()
    _open(qtbot, again, model)
    reloaded = {(i.key.kind, r.status, r.note) for i, r in again.review_panel.items() if r.status != "unreviewed"}
    assert reloaded == {("overload", "ok", "checked against torchlib"),
                        ("value", "suspicious", "perm should be [0,2,1,3]?")}
    # the review panel jumps to what is still open
    again.review_panel.showing.setCurrentIndex(again.review_panel.showing.findData("unreviewed"))
    first_family = again.review_panel.tree.topLevelItem(0)
    row = first_family.child(0)
    with qtbot.waitSignal(again.selection_shown, timeout=30000):
        again.review_panel.tree.itemActivated.emit(row, 0)
    item = row.data(0, Qt.ItemDataRole.UserRole)
    if isinstance(item.obj, SpecialisedValue):
        assert item.obj.literal.name in again.review_bar.target.full_text()


def test_corrupt_sidecar_disables_reviews_and_is_left_alone(qtbot, make_window, tmp_path: Path):
    model = tmp_path / "overloads.onnx"
    shutil.copy(FIXTURES / "overloads.onnx", model)
    sidecar = sidecar_path(model)
    sidecar.write_text("{not json")
    window = make_window()
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(model)
    assert window.reviews is None and not window.review_bar.isEnabled()
    assert "Reviews disabled" in window.statusBar().currentMessage()
    assert sidecar.read_text() == "{not json"


def test_search_finds_nodes_in_subgraphs_and_jumps(qtbot, make_window):
    window = make_window()
    _open(qtbot, window, FIXTURES / "nested_calls.onnx")
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.trees.currentWidget() is window.search_panel
    qtbot.keyClicks(window.search_panel.box, "negate")
    window.search_panel.run()
    texts = [window.search_panel.results.item(i).text() for i in range(window.search_panel.results.count())]
    assert any(t.startswith("function  ") for t in texts)  # each row says where it matched
    assert any(".then_branch" in t or ".else_branch" in t or ".body" in t for t in texts)
    qtbot.keyClick(window.search_panel.box, Qt.Key.Key_Down)
    assert window.search_panel.results.currentRow() >= 0


def test_search_jumps_to_an_aten_call_and_node_details(qtbot, make_window):
    window = make_window()
    _open(qtbot, window, FIXTURES / "dynamo_block.onnx")
    window.start_search()
    window.search_panel.box.setText("aten::scaled_dot")
    window.search_panel.run()
    assert window.search_panel.results.count() == 2
    assert window.search_panel.status.text() == "2 results"
    texts = [window.search_panel.results.item(i).text() for i in range(2)]
    assert texts == ["target  aten::scaled_dot_product_attention  ·  layers.0.attn › scaled_dot_product_attention",
                     "target  aten::scaled_dot_product_attention  ·  layers.1.attn › scaled_dot_product_attention_1"]
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        qtbot.keyClick(window.search_panel.box, Qt.Key.Key_Return)
    assert "scaled_dot_product_attention" in window.signature.view.toPlainText()
    window.search_panel.box.setText("node_transpose")
    window.search_panel.run()
    results = window.search_panel.results
    node_rows = [i for i in range(results.count()) if results.item(i).text().startswith("name  ")]
    hit = results.item(node_rows[0]).data(Qt.ItemDataRole.UserRole)
    call = window.search_panel.owner(hit)
    assert call is not None and results.item(node_rows[0]).text().endswith(f"{call.module_path} › {call.name}")
    qtbot.keyClick(window.search_panel.box, Qt.Key.Key_Down)  # moving through results does not jump
    assert results.currentRow() == 0
    results.setCurrentRow(node_rows[0])
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(window.search_panel.box, Qt.Key.Key_Return)
    # the node is revealed: the graph of its aten call, with its box selected
    assert window.center.current_scope() is call
    selected = window.center.graph.selected()
    assert selected is not None and selected.ref == hit.path and selected.label == "Transpose"
    details = window.details.toPlainText()
    assert "Transpose" in details and "perm" in details
    assert "FLOAT[" in details  # typed inputs/outputs
    assert "Returns a transpose of the input tensor" in details  # operator docs for the model's opset
    assert "pkg.torch.onnx.fx_node" in details and "Stack trace" in details


def test_export_report_carries_the_reviews_made_in_the_app(qtbot, make_window, tmp_path: Path):
    model = tmp_path / "overloads.onnx"
    shutil.copy(FIXTURES / "overloads.onnx", model)
    window = make_window()
    _open(qtbot, window, model)
    _select_overload(qtbot, window, "local.sm", "axis_1")
    window.review_bar.note.setText("axis=1 is <b>intended</b>")
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        window.review_bar.buttons["wrong"].click()
    out = tmp_path / "report.html"
    with qtbot.waitSignal(window.report_exported, timeout=60000):
        window.export_report_to(out)
    html = out.read_text()
    assert "axis&#61;1 is &lt;b&gt;intended&lt;/b&gt;" in html and "<b>intended</b>" not in html
    assert "wrong" in html and "local.sm" in html
    pdf = tmp_path / "report.pdf"
    with qtbot.waitSignal(window.report_exported, timeout=60000):
        window.export_report_to(pdf)
    assert pdf.read_bytes().startswith(b"%PDF-")


def test_a_jump_from_search_selects_the_call_in_the_functions_tree_and_scrolls_there_when_shown(qtbot, make_window):
    """The functions tree follows a jump to a node while the Search tab stays in front: the row of the node's aten
    call is selected at once, and the tree scrolls to it when its tab comes forward (not while hidden: a scroll of a
    large tree cost 16 ms of each jump)."""
    window = make_window()
    window.resize(900, 420)  # a short tree: the last call's row is out of view
    _open(qtbot, window, ZOO / "t5_noopt.onnx")
    window.start_search()
    window.search_panel.box.setText("node_view")
    window.search_panel.run()
    results = window.search_panel.results
    rows = [i for i in range(results.count()) if results.item(i).text().startswith("name  ")]
    hit = results.item(rows[-1]).data(Qt.ItemDataRole.UserRole)
    call = window.search_panel.owner(hit)
    assert call is not None
    results.setCurrentRow(rows[-1])
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(window.search_panel.box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.family_view.currentIndex().data(FamilyModel.ObjectRole) is call, timeout=10000)
    assert window.trees.currentWidget() is window.search_panel
    view = window.family_view
    assert not view.viewport().rect().intersects(view.visualRect(view.currentIndex()))  # not scrolled while hidden
    window.trees.setCurrentWidget(view)
    qtbot.waitUntil(lambda: view.viewport().rect().contains(view.visualRect(view.currentIndex())), timeout=5000)


def test_the_signature_tab_says_each_values_review(qtbot, make_window, tmp_path: Path):
    """The Signature tab's table of specialised values said nothing of their reviews: which had been looked at was
    read in the Review list, one item at a time. A line under each value says its status, in the list's colours,
    and a row under it its note, as soon as it is marked, and the table stays where it was scrolled to."""
    from inspector.gui.theme import STATUS_COLOURS

    model = tmp_path / "overloads.onnx"
    shutil.copy(FIXTURES / "overloads.onnx", model)
    window = make_window()
    window.resize(900, 420)  # (the table below the fold: scrolled to it)
    _open(qtbot, window, model)
    qtbot.waitUntil(lambda: window.session.listed, timeout=30000)
    _select_overload(qtbot, window, "local.tr", "perm_0231")
    (perm,) = window.signature.specialised()
    table = window.signature.view.toPlainText().split("Specialised values", 1)[1].split("\n")
    assert table[1:9] == ["where (review)", "value", "in the family",
                          "Transpose.perm", "unreviewed", "[0, 2, 3, 1]", "varies", "evidence: none"]
    window.signature.value_clicked.emit(perm)
    window.review_bar.note.setText("perm swaps the last two")
    bar = window.signature.view.verticalScrollBar()
    bar.setValue(bar.maximum())
    at = bar.value()
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        window.review_bar.buttons["wrong"].click()
    table = window.signature.view.toPlainText().split("Specialised values", 1)[1].split("\n")
    assert table[4:10] == ["Transpose.perm", "wrong", "[0, 2, 3, 1]", "varies", "evidence: none",
                           "note: perm swaps the last two"]
    assert STATUS_COLOURS["wrong"] in window.signature.view.toHtml()
    assert bar.value() == at > 0
    window.close()


def _broken_words(document) -> list[str]:
    """Lines of ``document`` as laid out that end inside a word (a letter or digit on both sides of the break)."""
    out = []
    block = document.begin()
    while block.isValid():
        text, layout = block.text(), block.layout()
        for k in range(layout.lineCount() - 1):
            line = layout.lineAt(k)
            end = line.textStart() + line.textLength()
            if 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
                out.append(text[line.textStart():end] + "|" + text[end:end + 8])
        block = block.next()
    return out


def test_the_signature_tab_breaks_no_word_in_a_narrow_panel(qtbot, make_window, tmp_path: Path):
    """At a 1366 px window the Signature panel is about 440 px wide: its table of specialised values, with a review
    column, broke its words anywhere ("evidenc / e", "unreview / ed", "ReduceMean.k / eepdims"). Words stay whole:
    the review is said under the value's name, the evidence on a row of its own, the table's width."""
    model = tmp_path / "llama_gqa.onnx"
    shutil.copy(ZOO / "llama_gqa.onnx", model)
    window = make_window()
    window.resize(1366, 768)
    _open(qtbot, window, model)
    qtbot.waitUntil(lambda: window.session.listed, timeout=30000)
    _select_overload(qtbot, window, "aten::mean", "aten::mean.dim")
    view = window.signature.view
    assert view.viewport().width() < 500 and window.signature.specialised()
    assert "in the family" in view.toPlainText() and "unreviewed" in view.toPlainText()
    assert _broken_words(view.document()) == []
    assert view.horizontalScrollBar().maximum() == 0  # (words kept whole, and the table fits)
    window.close()

