"""The window opens a real export off the GUI thread and shows its families, modules and signatures."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QEvent, QObject, Qt

from inspector.core.model.index import open_index
from inspector.gui.family_model import FamilyModel
from inspector.gui.main_window import MainWindow
from tests.conftest import FIXTURES, SAMPLE


def test_family_model_over_a_core_index():
    model = FamilyModel(open_index(FIXTURES / "overloads.onnx"))
    names = [model.index(r, 0).data() for r in range(model.rowCount())]
    assert names == ["local.par", "local.scale", "local.sm", "local.tr"]
    tr = model.index(3, 0)
    assert [model.index(r, 0, tr).data() for r in range(model.rowCount(tr))] == ["perm_0213", "perm_0231", "perm_1023"]
    assert model.index(3, 1).data() == "4"


def test_open_sample_in_background_and_select_a_call(window: MainWindow, qtbot):
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(SAMPLE)
    assert window.windowTitle().startswith("sample_export.onnx")
    assert "aten calls" in window.counts.full_text()
    proxy = window.family_filter
    window.filter_box.set_now("transpose")
    assert proxy.rowCount() == 1
    fam = proxy.index(0, 0)
    ov = proxy.index(0, 0, fam)
    call = proxy.index(0, 0, ov)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(call)
    text = window.details.toPlainText()
    assert "aten::transpose.int(self=%" in text and "dim0=1, dim1=2" in text
    assert "Transpose" in text  # the ONNX body beside the signature
    panel = window.signature.view.toPlainText()
    assert "aten::transpose.int(self=%" in panel and "dim0=1, dim1=2" in panel
    assert "Transpose<perm = [0, 2, 1, 3]>" in panel
    (perm,) = window.signature.specialised()
    assert perm.literal.name == "perm" and {link.parameter for link in perm.links} == {"dim0", "dim1"}
    assert "background-color:#9fc5e8" in window.signature.view.toHtml().replace(" ", "")
    assert window.recent_files()[0] == str(SAMPLE)
    assert window.module_view.model().rowCount() == 1


def test_bad_file_reports_one_line_and_keeps_running(window: MainWindow, qtbot):
    with qtbot.waitSignal(window.load_failed, timeout=30000) as blocker:
        window.open_path(FIXTURES / "bad" / "random.onnx")
    assert "not a valid ONNX protobuf" in blocker.args[0] and "\n" not in blocker.args[0]
    assert window.index is None


def test_hostile_strings_are_shown_literally(window: MainWindow, qtbot):
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(FIXTURES / "hostile.onnx")
    fam = window.family_filter.index(0, 0)
    window.family_view.setCurrentIndex(window.family_filter.index(0, 0, fam))
    html = window.details.toHtml()
    assert "<script>" not in html and "<img" not in html
    assert "<script>" in window.details.toPlainText()  # shown as text, not interpreted


def test_drag_and_drop_opens_a_model(window: MainWindow, qtbot):
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(FIXTURES / "overloads.onnx"))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.dropEvent(event)
    assert window.index is not None and window.index.path.name == "overloads.onnx"
    assert window.recent_files()[0].endswith("overloads.onnx")
    assert window.recent_menu.actions()[0].text().endswith("overloads.onnx")


def test_external_tensor_values_are_read_only_when_asked(window: MainWindow, qtbot):
    from PySide6.QtCore import QUrl

    from inspector.core.model.keys import MAIN

    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(FIXTURES / "external" / "model.onnx")
    window.show_node(MAIN, (0,), "main/0")
    text = window.details.toPlainText()
    assert "load values" in text and "external: weights.bin" in text and "min " not in text
    name = next(n for n in window.index.proto.graph.node[0].input if n in window.session.values[1])
    window.nodes.link_clicked(QUrl(f"tensor:{name}"))
    qtbot.waitUntil(lambda: "min " in window.details.toPlainText(), timeout=10000)


def test_the_filter_only_filters_and_waits_for_typing_to_pause(window: MainWindow, qtbot):
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(SAMPLE)
    proxy = window.family_filter
    families = proxy.rowCount()
    linear = next(proxy.index(r, 0) for r in range(families) if proxy.index(r, 0).data() == "aten::linear")
    with qtbot.waitSignals([window.selection_shown, window.center.view_shown], timeout=30000):
        window.family_view.setCurrentIndex(proxy.index(0, 0, linear))
    shown = window.center.current_view()
    navigations: list[object] = []
    window.selection_shown.connect(navigations.append)
    window.center.view_shown.connect(navigations.append)
    qtbot.keyClicks(window.filter_box, "transpose")
    assert proxy.rowCount() == families  # nothing filtered while typing
    qtbot.waitUntil(lambda: proxy.rowCount() == 1, timeout=2000)
    assert proxy.index(0, 0).data() == "aten::transpose"
    qtbot.wait(300)
    assert navigations == [] and window.center.current_view() == shown  # the current row went away: no jump


@pytest.mark.parametrize("focus", ["filter", "search"])
def test_ctrl_e_exports_the_report_from_the_text_boxes_too(window: MainWindow, qtbot, tmp_path, monkeypatch, focus):
    from PySide6.QtWidgets import QFileDialog

    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(SAMPLE)
    out = tmp_path / "r.md"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(out), ""))
    box = window.filter_box if focus == "filter" else window.search_panel.box
    if focus == "search":
        window.start_search()
    box.setFocus()
    box.setText("view")
    with qtbot.waitSignal(window.report_exported, timeout=60000):
        qtbot.keyClick(box, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert "aten::view" in out.read_text() and box.text() == "view"


def test_the_body_counts_its_calls_and_lists_the_identical_ones(window: MainWindow, qtbot):
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(FIXTURES / "overloads.onnx")
    proxy = window.family_filter
    window.filter_box.set_now("local.tr")
    ov = proxy.index(0, 0, proxy.index(0, 0))
    assert (ov.data(), ov.siblingAtColumn(1).data()) == ("perm_0213", "2")
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(ov)
    text = window.signature.view.toPlainText()
    assert ", 2 calls" in text and "Identical calls (2)" in text  # not "1 call": the overload has two call sites
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(SAMPLE)
    window.filter_box.set_now("scaled_dot")
    call = proxy.index(0, 0, proxy.index(0, 0, proxy.index(0, 0)))
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(call)
    text = window.signature.view.toPlainText()
    assert "Identical calls (2)" in text
    assert "layers.0.attn › scaled_dot_product_attention\n" in text
    assert "layers.1.attn › scaled_dot_product_attention_1" in text
    lone = [s for s in window.signature.specialised() if not s.varies]  # a lone body: its linked values too
    table = text.split("Specialised values")[1].split("Identical calls")[0]
    assert table.count("no sibling to compare") == len(lone) >= 1  # one row each, never "same in family"


def test_the_filter_keeps_parents_of_matching_rows_and_all_below_a_matching_row(window: MainWindow, qtbot):
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(SAMPLE)
    proxy = window.family_filter
    window.filter_box.set_now("TRANSPOSE_2")  # one aten call, by its FX name, ignoring case
    fam = proxy.index(0, 0)
    ov = proxy.index(0, 0, fam)
    assert proxy.rowCount() == 1 and fam.data() == "aten::transpose" and proxy.rowCount(fam) == 1
    assert [proxy.index(r, 0, ov).data().split()[-1] for r in range(proxy.rowCount(ov))] == ["transpose_2"]
    window.filter_box.set_now("aten::transpose")  # a family: all its overloads and calls
    assert proxy.rowCount(proxy.index(0, 0, proxy.index(0, 0))) == 8
    window.filter_box.set_now("")
    assert proxy.rowCount() == window.families.rowCount()


def test_the_main_graph_is_laid_out_only_once_the_opened_model_is_drawn(window: MainWindow, qtbot, monkeypatch):
    """Laying out beside the window's drawing of a new model made every row Qt asked for wait for the GIL."""
    from inspector.gui import graph_panel

    order: list[str] = []
    real_build = graph_panel.build_scene
    monkeypatch.setattr(graph_panel, "build_scene", lambda *a, **k: (order.append("layout"), real_build(*a, **k))[1])
    viewport = window.family_view.viewport()

    class Spy(QObject):
        def eventFilter(self, watched, event) -> bool:
            if event.type() == QEvent.Type.Paint and window.index is not None and "tree" not in order:
                order.append("tree")
            return False

    spy = Spy()
    viewport.installEventFilter(spy)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(SAMPLE)
    viewport.removeEventFilter(spy)
    assert order[:2] == ["tree", "layout"]
