"""A fitted view is never below a readable scale: a main graph too big for that shows the module overview
instead, and navigating to a box zooms to it. On the zoo's exports and a 64-layer replica of its Llama; module
paths, classes and node counts from torch's truth files."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from inspector.core.model.keys import MAIN
from inspector.gui.graph_panel import View
from inspector.gui.graph_view import GraphView
from inspector.gui.main_window import MainWindow
from inspector.gui.nodes import module_node
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from replicate import replicate

ZOO = ROOT / "tests" / "zoo"
LAYERS = 64


def _truth(name: str) -> dict[str, Any]:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


def _open(qtbot: Any, w: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(w.center.view_shown, timeout=60000):
        w.open_path(path)


def _in_view(graph: GraphView, node_id: str) -> bool:
    visible = graph.mapToScene(graph.viewport().rect()).boundingRect()
    return visible.contains(graph.items_by_id[node_id].sceneBoundingRect())


def _boxes(graph: GraphView) -> dict[str, Any]:
    return {i: item.node for i, item in graph.items_by_id.items()}


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zoo's Llama with its first decoder layer copied 64 times (4,105 nodes)."""
    out = tmp_path_factory.mktemp("overview") / "llama_64.onnx"
    onnx.save(replicate(onnx.load(str(ZOO / "llama_gqa.onnx")), LAYERS, 0), str(out))
    return out


def test_fit_on_a_graph_too_big_to_read_shows_the_module_overview(qtbot, window: MainWindow, replica: Path):
    window.resize(1366, 768)
    _open(qtbot, window, replica)
    graph = window.center.graph
    with qtbot.waitSignal(window.center.view_shown, timeout=60000):
        window.center.show_scope(MAIN, frozenset({"mod:model"}))  # 64 layers in a column
    assert not graph.fits() and graph.readable()  # drawn at the readable scale, from the top
    assert "Fit (F) shows the module overview" in window.center.info.full_text()
    graph.setFocus()
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(graph, Qt.Key.Key_F)
    assert window.center.current_view() == View(MAIN, frozenset({"mod:model"}), overview=True)
    assert window.center.crumbs.full_text() == "main graph › module overview"
    assert graph.fits() and graph.readable() and graph.transform().m11() <= 1.0
    boxes = _boxes(graph)
    truth = _truth("llama_gqa")
    per_layer = sum(n["onnx_nodes"] for n in truth["fx_nodes"] if "model.layers.0" in n["module_stack"])
    run = boxes["mod:model.layers.0"]  # the 64 layers are one group named by its run
    assert (run.label, run.detail) == ("layers.0 … 63", f"{LAYERS} × LlamaDecoderLayer, {per_layer} nodes each")
    assert per_layer == 64
    classes = truth["module_classes"]
    for node in boxes.values():  # every box is a module torch knows, with its class
        assert node.ref in truth["module_paths"]
        assert node.detail.split(",")[0].split(" × ")[-1] == classes[node.ref].rsplit(".", 1)[-1]
    assert {"mod:model.layers.0.self_attn.q_proj", "mod:model.layers.0.mlp.down_proj", "mod:lm_head"} <= set(boxes)
    # a module of the overview opens in the graph, selected and zoomed to
    graph.select("mod:model.layers.0.self_attn.q_proj", centre=False)
    with qtbot.waitSignal(window.center.view_shown, timeout=60000):
        qtbot.keyClick(graph, Qt.Key.Key_Return)
    view = window.center.current_view()
    assert view == View(MAIN, frozenset({"mod:model", "mod:model.layers.0", "mod:model.layers.0.self_attn"}))
    assert graph.selected().id == "mod:model.layers.0.self_attn.q_proj"
    assert _in_view(graph, "mod:model.layers.0.self_attn.q_proj") and graph.readable()
    assert "LlamaAttention" not in window.details.toPlainText() and "q_proj" in window.details.toPlainText()
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.back()
    assert window.center.current_view().overview


@pytest.mark.parametrize("name", ["llama_gqa", "t5_noopt", "whisper"])
def test_the_overview_of_a_zoo_export_fits_readably_and_names_torchs_modules(qtbot, window: MainWindow, name: str,
                                                                             tmp_path: Path):
    window.resize(1366, 768)
    _open(qtbot, window, ZOO / f"{name}.onnx")
    graph = window.center.graph
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.open_view(View(MAIN, overview=True))
    assert graph.fits() and graph.readable()
    truth = _truth(name)
    boxes = _boxes(graph)
    assert boxes
    emitted = {m for n in truth["fx_nodes"] if n["onnx_nodes"] for m in n["module_stack"] if m}
    for node in boxes.values():
        assert node.ref in emitted
        cls = truth["module_classes"][node.ref].rsplit(".", 1)[-1]
        assert node.detail.split(",")[0].split(" × ")[-1] == cls
        nodes = sum(n["onnx_nodes"] for n in truth["fx_nodes"] if node.ref in n["module_stack"])
        assert f"{nodes:,} node" in node.detail  # the first member's count for a run
    top = {m for m in emitted if not any(m.startswith(o + ".") for o in emitted if o != m)}
    assert {f"mod:{m}" for m in top} <= set(boxes)  # every top-level module is there
    assert window.center.export_name() == "module_overview"
    window.center.export(tmp_path / "o.svg")  # Qt draws the overview: written as PNG
    assert (tmp_path / "o.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not (tmp_path / "o.svg").exists()


def test_navigating_to_a_module_selects_it_and_zooms_to_it(qtbot, window: MainWindow):
    window.resize(1024, 700)
    _open(qtbot, window, ZOO / "llama_gqa_noopt.onnx")
    graph = window.center.graph
    module = module_node(window.index, "model.layers.1.mlp")
    with qtbot.waitSignal(window.center.view_shown, timeout=60000):
        window.show_object(module)
    assert graph.selected().id == "mod:model.layers.1.mlp"
    assert _in_view(graph, "mod:model.layers.1.mlp") and graph.readable()


def test_expanding_a_module_zooms_to_what_it_opened_into(qtbot, window: MainWindow):
    window.resize(1024, 700)
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    graph = window.center.graph
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, frozenset({"mod:model"}))
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        graph.node_activated.emit(graph.items_by_id["mod:model.layers.1"].node)
    truth = _truth("llama_gqa")
    emitted = {n["module"] for n in truth["fx_nodes"] if n["onnx_nodes"]}
    children = {m for m in truth["module_paths"] if m.startswith("model.layers.1.") and m.count(".") == 3
                and any(e == m or e.startswith(m + ".") for e in emitted)}
    assert children == {f"model.layers.1.{c}" for c in
                        ("input_layernorm", "self_attn", "post_attention_layernorm", "mlp")}
    assert all(_in_view(graph, f"mod:{m}") for m in children) and graph.readable()
    assert not _in_view(graph, "in:input_ids")  # the view moved to layer 1, away from the top


def test_a_search_hit_deep_in_a_big_graph_is_selected_and_zoomed_to(qtbot, window: MainWindow):
    from inspector.core.search import SearchIndex

    window.resize(1024, 700)
    path = ZOO / "ts_plain_mixer.onnx"
    _open(qtbot, window, path)
    graph = window.center.graph
    assert not graph.fits()  # 54 nodes and their values: too tall to read whole
    last = onnx.load(str(path)).graph.node[-1]
    hit = next(h for h in SearchIndex(window.index).search(last.name).hits if h.kind == "node")
    assert hit.path == (len(onnx.load(str(path)).graph.node) - 1,)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.jump_to_hit(hit)
    node_id = f"n:{hit.path[0]}"
    assert graph.selected().id == node_id and _in_view(graph, node_id) and graph.readable()


def test_navigating_past_the_boxes_drawn_shows_the_boxes_around_the_target(qtbot, window: MainWindow,
                                                                          replica: Path, monkeypatch):
    """A scene draws its first boxes only (300; 30 here, so that the 64-layer replica is too big): a module
    further down is shown with the boxes around it, selected."""
    import inspector.gui.graph_panel as graph_panel

    monkeypatch.setattr(graph_panel, "MAX_NODES", 30)
    window.resize(1366, 768)
    _open(qtbot, window, replica)
    graph = window.center.graph
    with qtbot.waitSignal(window.center.view_shown, timeout=60000):
        window.show_object(module_node(window.index, "model.layers.50.mlp"))
    view = window.center.current_view()
    assert view == View(MAIN, frozenset({"mod:model", "mod:model.layers.50"}))  # real ancestors only
    assert graph.selected().id == "mod:model.layers.50.mlp"
    assert _in_view(graph, "mod:model.layers.50.mlp") and graph.readable()
    ids = set(graph.items_by_id)
    assert len(ids) == 30 and "mod:model.layers.0" not in ids and "in:input_ids" not in ids
    assert {"mod:model.layers.49", "mod:model.layers.50.self_attn", "mod:model.layers.51"} <= ids
    assert "more boxes not shown" in window.center.info.full_text()
