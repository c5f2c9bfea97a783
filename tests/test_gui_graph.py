"""The graph view: collapsed scopes, entering bodies, Back, tracing, specialised marks, export."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.specialise.categories import Category
from inspector.core.util.errors import InspectorError
from inspector.gui.graph_items import DOWNSTREAM, UPSTREAM
from inspector.gui.main_window import MainWindow
from tests.conftest import FIXTURES


def _open(qtbot, w: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(w.center.view_shown, timeout=60000):
        w.open_path(path)


def test_main_graph_of_a_flat_export_starts_collapsed_and_expands(qtbot, window: MainWindow):
    _open(qtbot, window, FIXTURES / "dynamo_block.onnx")
    graph = window.center.graph
    kinds = {item.node.id: item.node.kind for item in graph.items_by_id.values()}
    assert {"mod:layers.0", "mod:layers.1"} <= set(kinds) and kinds["mod:layers.0"] == "module"
    assert len(kinds) < 10
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.node_activated.emit(graph.items_by_id["mod:layers.0"].node)
    ids = set(graph.items_by_id)
    assert "mod:layers.0.attn" in ids and "mod:layers.0" not in ids
    assert window.center.crumbs.full_text() == "main graph  (+1 open)"
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.setFocus()
        qtbot.keyClick(graph, Qt.Key.Key_Backspace)
    assert "mod:layers.0" in graph.items_by_id


def test_enter_a_function_body_and_come_back(qtbot, window: MainWindow):
    _open(qtbot, window, FIXTURES / "overloads.onnx")
    graph = window.center.graph
    calls = [i.node for i in graph.items_by_id.values() if i.node.kind == "function_call"]
    assert len(calls) >= 8
    target = next(c for c in calls if c.ref[0] == FunctionKey("local", "sm", "axis_1"))
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.node_activated.emit(target)
    assert window.center.current_scope() == FunctionKey("local", "sm", "axis_1")
    assert [i.node.label for i in graph.items_by_id.values() if i.node.kind == "op"] == ["Softmax"]
    assert window.center.crumbs.full_text() == "function local.sm:axis_1"  # where we are
    assert window.center.history() == ["main graph"]  # where we came from, kept apart
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.setFocus()
        qtbot.keyClick(graph, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert window.center.current_scope() == MAIN


def test_subgraph_calls_are_not_inlined(qtbot, window: MainWindow):
    _open(qtbot, window, FIXTURES / "nested_calls.onnx")
    labels = sorted(i.node.label for i in window.center.graph.items_by_id.values() if i.node.kind == "op")
    assert "If" in labels and "Loop" in labels


def test_selecting_a_node_traces_inputs_and_outputs_and_shows_details(qtbot, window: MainWindow):
    _open(qtbot, window, FIXTURES / "overloads.onnx")
    graph = window.center.graph
    middle = next(i for i in graph.items_by_id.values() if i.node.kind == "function_call")
    graph.select(middle.node.id)
    up, down = graph.traced()
    assert up and down
    assert all(graph.items_by_id[i].trace == UPSTREAM for i in up)
    assert all(graph.items_by_id[i].trace == DOWNSTREAM for i in down)
    assert "Call of" in window.details.toPlainText() or "local." in window.details.toPlainText()


def test_overload_body_is_drawn_with_its_specialised_value_marked(qtbot, window: MainWindow):
    _open(qtbot, window, FIXTURES / "overloads.onnx")
    proxy = window.family_filter
    window.filter_box.set_now("local.tr")
    ov = proxy.index(1, 0, proxy.index(0, 0))
    with qtbot.waitSignals([window.selection_shown, window.center.view_shown], timeout=30000):
        window.family_view.setCurrentIndex(ov)
    assert window.center.current_scope() == FunctionKey("local", "tr", "perm_0231")
    marked = {i: item for i, item in window.center.graph.items_by_id.items() if item.mark}
    assert list(marked) == ["n:0"] and marked["n:0"].mark == Category.VARIES.colour
    assert "varies across the family" in marked["n:0"].toolTip()


def test_export_svg_and_png(qtbot, window: MainWindow, tmp_path: Path):
    _open(qtbot, window, FIXTURES / "hostile.onnx")
    svg, png = tmp_path / "g.svg", tmp_path / "g.png"
    window.center.export(svg)
    window.center.export(png)
    text = svg.read_text()
    ET.fromstring(text)  # well-formed XML
    assert "<script" not in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000


def test_every_aten_call_of_a_body_has_its_own_nodes_marked(qtbot, window: MainWindow):
    _open(qtbot, window, FIXTURES / "dynamo_block.onnx")
    fam = window.index.family("aten_call", "aten", "scaled_dot_product_attention")
    assert fam is not None
    nodes_per_call, consts_per_call = [], []
    for call in fam.overloads[0].aten_calls[:2]:  # two calls, one body
        with qtbot.waitSignals([window.selection_shown, window.center.view_shown], timeout=30000):
            window.show_object(call)
        marked = {i for i, item in window.center.graph.items_by_id.items() if item.mark}
        nodes_per_call.append({i for i in marked if i.startswith("n:")})
        consts_per_call.append({i for i in marked if i.startswith("const:")})
    # each call marks its own node with a value to review (Transpose.perm; attributes equal to their ONNX
    # default, Reshape.allowzero=0 and Softmax.axis=-1, are left out of a lone body)
    assert len(nodes_per_call[0]) == len(nodes_per_call[1]) == 1
    assert nodes_per_call[0] != nodes_per_call[1]
    assert len(consts_per_call[0]) == len(consts_per_call[1]) >= 1


def test_select_then_back_or_expand_redraws_without_touching_deleted_boxes(qtbot, window: MainWindow):
    """Redrawing a scope while a box is selected deletes the selected box; the selection change that follows
    must not reach it (it raised 'Internal C++ object (NodeItem) already deleted', which conftest turns into a
    failure)."""
    _open(qtbot, window, FIXTURES / "dynamo_block.onnx")
    graph = window.center.graph
    graph.select("mod:layers.0")
    assert graph.selected() is not None
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.node_activated.emit(graph.items_by_id["mod:layers.0"].node)  # expand
    assert graph.selected() is None and "mod:layers.0.attn" in graph.items_by_id
    graph.select("mod:layers.0.attn")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.back()
    assert graph.selected() is None and "mod:layers.0" in graph.items_by_id
    assert not any(item.trace for item in graph.items_by_id.values())


def test_export_keeps_the_highlights_and_is_named_after_the_scope(qtbot, window: MainWindow, tmp_path: Path):
    _open(qtbot, window, FIXTURES / "overloads.onnx")
    proxy = window.family_filter
    window.filter_box.set_now("local.tr")
    with qtbot.waitSignals([window.selection_shown, window.center.view_shown], timeout=30000):
        window.family_view.setCurrentIndex(proxy.index(1, 0, proxy.index(0, 0)))
    assert window.center.export_name() == "local.tr_perm_0231"
    svg = tmp_path / "g.svg"
    window.center.export(svg)
    text = svg.read_text()
    assert f'stroke="{Category.VARIES.colour}" stroke-width="3"' in text  # the marked Transpose, as in the app


def test_fit_never_blows_up_small_graphs_nor_shrinks_large_ones_below_readable(qtbot, window: MainWindow):
    _open(qtbot, window, FIXTURES / "overloads.onnx")
    graph = window.center.graph
    window.resize(1024, 700)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(FunctionKey("local", "tr", "perm_0231"))  # three boxes
    graph.fit()
    assert graph.transform().m11() == pytest.approx(1.0)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(FIXTURES / "dynamo_block_noopt.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.node_activated.emit(graph.items_by_id["mod:layers.0"].node)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.node_activated.emit(graph.items_by_id["mod:layers.0.attn"].node)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.node_activated.emit(graph.items_by_id["mod:layers.1"].node)
    rect, view = graph.scene().itemsBoundingRect(), graph.viewport().rect()
    natural = min(view.width() / rect.width(), view.height() / rect.height())
    assert natural < 0.6  # fitting it whole would make the labels unreadable
    graph.fit()
    assert graph.readable() and graph.transform().m11() == pytest.approx(0.6)


def test_a_graph_export_never_replaces_the_model_or_its_reviews(qtbot, window: MainWindow, tmp_path: Path):
    """The graph's Export goes through the one path guard and writes atomically: a symlink named like an export
    that points at the open model is refused, and the model is unchanged."""
    model = tmp_path / "m.onnx"
    model.write_bytes((FIXTURES / "hostile.onnx").read_bytes())
    _open(qtbot, window, model)
    link = tmp_path / "graph.svg"
    link.symlink_to(model)
    before = model.read_bytes()
    for target in (model, link, tmp_path / "m.onnx.review.json"):
        with pytest.raises(InspectorError, match="refusing to overwrite"):
            window.center.export(target)
    assert model.read_bytes() == before
    window.center.export(tmp_path / "ok.svg")
    assert (tmp_path / "ok.svg").read_text().startswith("<svg") or "<svg" in (tmp_path / "ok.svg").read_text()


def _cut_at_the_sides(graph) -> list[str]:
    """The boxes the view shows in part, cut by its left or right edge."""
    seen = graph.mapToScene(graph.viewport().rect()).boundingRect()
    return sorted(i.node.id for i in graph.items_by_id.values() if (r := i.sceneBoundingRect()).intersects(seen)
                  and (r.left() < seen.left() or r.right() > seen.right()))


def test_a_body_wider_than_the_view_at_the_readable_scale_opens_on_whole_boxes(qtbot, window: MainWindow):
    """Llama's SDPA body is 553 px wide: at 1024x700 the graph is ~313 px, so even at the readable scale (0.6) it is
    wider; centred, it showed boxes cut at both edges. It opens slid to cut as few as can be."""
    window.resize(1024, 700)
    _open(qtbot, window, Path(__file__).resolve().parent / "zoo" / "llama_gqa.onnx")
    window.filter_box.set_now("scaled_dot")
    proxy = window.family_filter
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.family_view.setCurrentIndex(proxy.index(0, 0, proxy.index(0, 0, proxy.index(0, 0))))
    graph = window.center.graph
    drawing, view = graph.scene().itemsBoundingRect(), graph.viewport().rect()
    assert drawing.width() * 0.6 > view.width()  # it cannot fit whole at a readable scale
    assert graph.readable() and len(graph.items_by_id) == 20
    # 553 px of boxes in a 521 px window: one box must be cut; centred, four were (two at each edge)
    cut = _cut_at_the_sides(graph)
    assert len(cut) == 1
    graph.fit()  # F does the same
    assert _cut_at_the_sides(graph) == cut


def test_a_graph_too_big_to_fit_opens_at_its_input(qtbot, window: MainWindow):
    """A plain ONNX graph (onnx's own Caffe2 Inception: 239 boxes, 2,168 px wide at 1:1) is too big to read whole:
    it opens at the readable scale at its top. Centred on its whole width, then slid to cut the fewest boxes, it
    showed a column of ConstantOfShape and Conv boxes 400 px below the top, the graph's input just past the right
    edge. It opens on its input, whole in view, at the top."""
    import onnx

    window.resize(1366, 768)
    path = Path(onnx.__file__).parent / "backend/test/data/light/light_inception_v1.onnx"
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(path)
    graph = window.center.graph
    model = onnx.load(str(path), load_external_data=False).graph
    weights = {t.name for t in model.initializer}  # (IR 3 lists them among the inputs too)
    (first,) = [i.name for i in model.input if i.name not in weights]
    assert first == "data_0" and graph.transform().m11() == pytest.approx(0.6)
    seen = graph.mapToScene(graph.viewport().rect()).boundingRect()
    box = graph.items_by_id[f"in:{first}"].sceneBoundingRect()
    assert seen.contains(box) and box.top() - seen.top() < 50
    assert not graph.fits() and graph.scene().itemsBoundingRect().width() > 3 * seen.width()
