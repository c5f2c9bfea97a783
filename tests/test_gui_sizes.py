"""Windows fit the screen and never grow by themselves: long names are elided, not laid out at full width."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSize, Qt, QThreadPool

from inspector.gui.compare import CompareWindow
from inspector.gui.main_window import MainWindow
from tests.conftest import SAMPLE

ZOO = Path(__file__).resolve().parent / "zoo"
SMALL_SCREEN = QSize(1024, 700)



def _fits(hint: QSize, screen: QSize) -> bool:
    return hint.width() <= screen.width() and hint.height() <= screen.height()


@pytest.mark.parametrize("model", [SAMPLE, ZOO / "llama_gqa.onnx"], ids=lambda p: p.stem)
def test_clicking_overloads_never_widens_the_window(qtbot, window: MainWindow, model: Path):
    with qtbot.waitSignal(window.center.view_shown, timeout=60000):
        window.open_path(model)
    window.resize(SMALL_SCREEN)
    qtbot.wait(10)
    start = window.size()
    assert start == SMALL_SCREEN and _fits(window.minimumSizeHint(), SMALL_SCREEN)
    proxy = window.family_filter
    clicked = []
    for r in range(proxy.rowCount()):  # the first overload of every family, long aten names included
        family = proxy.index(r, 0)
        if not proxy.rowCount(family):
            continue
        with qtbot.waitSignals([window.selection_shown, window.center.view_shown], timeout=30000):
            window.family_view.setCurrentIndex(proxy.index(0, 0, family))
        clicked.append(family.data())
        assert window.size() == start, f"grew after selecting {family.data()}"
        assert _fits(window.minimumSizeHint(), SMALL_SCREEN), family.data()
    assert "aten::scaled_dot_product_attention" in clicked
    # the breadcrumb is the location, whatever its length; the whole text is kept for the tooltip
    assert window.center.crumbs.full_text().endswith(")")
    assert window.center.crumbs.width() <= window.center.width()


def test_compare_window_fits_a_laptop_screen(qtbot):
    window = CompareWindow()
    qtbot.addWidget(window)
    avail = window.screen().availableGeometry()
    assert window.width() <= avail.width() and window.height() <= avail.height()
    with qtbot.waitSignal(window.change_shown, timeout=60000):
        window.show()
        window.open_pair(ZOO / "pair_scale_a.onnx", ZOO / "pair_scale_b.onnx")
    assert _fits(window.minimumSizeHint(), QSize(1366, 768))
    assert window.width() <= avail.width()
    QThreadPool.globalInstance().waitForDone(30000)


def test_the_review_column_is_visible_at_1024x700(qtbot, window: MainWindow):
    from tests.conftest import FIXTURES

    window.resize(SMALL_SCREEN)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(FIXTURES / "overloads.onnx")
    qtbot.wait(10)
    view, header = window.family_view, window.family_view.header()
    proxy = window.family_filter
    badge = next(proxy.index(r, 2) for r in range(proxy.rowCount()) if proxy.index(r, 0).data() == "local.tr")
    assert badge.data() == "3 spec · 6 open"  # short in the column, in full in the tooltip
    assert badge.data(Qt.ItemDataRole.ToolTipRole) == "3 specialised values · 6 unreviewed items"
    assert view.fontMetrics().horizontalAdvance(badge.data()) <= header.sectionSize(2)
    right = header.sectionViewportPosition(2) + header.sectionSize(2)
    assert header.sectionSize(2) >= 100 and right <= view.viewport().width()
    assert header.sectionSize(0) >= header.sectionSize(2)  # the names keep the larger part


def test_the_breadcrumb_shows_both_ends_of_an_aten_calls_location_at_1366_by_768(qtbot, window: MainWindow):
    # beside the graph's buttons the breadcrumb had ~90 px at 1366×768 and read "main g…ntion)"; on a line of its own
    # it keeps where the call is and which call it is
    window.resize(QSize(1366, 768))
    with qtbot.waitSignal(window.center.view_shown, timeout=60000):
        window.open_path(ZOO / "llama_gqa.onnx")
    call = next(c for c in window.session.index.provenance.calls if c.name == "scaled_dot_product_attention")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(call)
    qtbot.waitUntil(lambda: window.center.crumbs.width() > 100, timeout=5000)
    crumbs = window.center.crumbs
    assert crumbs.full_text() == ("main graph › model.layers.0.self_attn › "
                                  "aten::scaled_dot_product_attention (scaled_dot_product_attention)")
    shown = crumbs.text()
    assert shown.startswith("main graph › model.") and shown.endswith("(scaled_dot_product_attention)"), shown
    assert crumbs.width() >= window.center.width() - 10 and crumbs.geometry().top() > window.center.back_button.y()
