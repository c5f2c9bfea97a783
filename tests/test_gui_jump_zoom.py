"""A jump to one box is readable: a search result naming a module opens the main graph with that module's box
selected, centred, its title at least 9 px tall (it fitted the whole main graph, titles ~5 px). Real exports."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QGraphicsSimpleTextItem

from inspector.core.model.keys import MAIN
from tests.conftest import ZOO


def _title_px(view: Any, node_id: str) -> float:
    item = view.items_by_id[node_id]
    title = next(c for c in item.childItems() if isinstance(c, QGraphicsSimpleTextItem))
    return view.mapFromScene(title.sceneBoundingRect()).boundingRect().height()


@pytest.mark.parametrize(("model", "query", "module"), [
    ("llama_gqa", "model.layers.1.mlp", "model.layers.1.mlp"),
    ("whisper", "model.decoder.layers.0.encoder_attn", "model.decoder.layers.0.encoder_attn"),
])
def test_a_search_jump_to_a_module_selects_it_at_a_readable_zoom(qtbot, window, model, query, module):
    window.resize(1024, 700)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(ZOO / f"{model}.onnx")
    panel = window.search_panel
    window.start_search()
    panel.box.setText(query)
    panel.run()
    rows = [panel.results.item(r) for r in range(panel.results.count())]
    hit_row = next(r for r in rows if r.text().startswith("module") and r.text().split("  ")[1] == module)
    with qtbot.waitSignal(window.center.view_shown, timeout=60000):
        panel.results.itemClicked.emit(hit_row)
    graph = window.center.graph
    assert window.center.current_scope() == MAIN
    node = graph.selected()
    assert node is not None and node.id == f"mod:{module}" and node.kind == "module"
    assert _title_px(graph, node.id) >= 9
    box = graph.mapFromScene(graph.items_by_id[node.id].sceneBoundingRect()).boundingRect()
    assert graph.viewport().rect().contains(box)
