"""The search panel on a real export: typing searches off the GUI thread, stack-trace hits are named by module path
and FX name and say where they matched, and a hit jumps to its node in the graph of its aten call."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from inspector.core.search import around
from inspector.gui.search_panel import MATCH_CHARS

ZOO = Path(__file__).resolve().parent / "zoo"
STACK_TRACE = "pkg.torch.onnx.stack_trace"


def _rotary_nodes(path: Path) -> list[int]:
    """Main-graph nodes whose stack trace mentions "rotary", read from the file."""
    model = onnx.load(path)
    return [i for i, n in enumerate(model.graph.node)
            if any(e.key == STACK_TRACE and "rotary" in e.value.casefold() for e in n.metadata_props)]


def test_typing_rotary_lists_the_stack_trace_hits_and_a_click_reveals_the_node(qtbot, window):
    path = ZOO / "llama_gqa.onnx"
    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(path)
    panel = window.search_panel
    window.start_search()
    with qtbot.waitSignal(panel.shown, timeout=30000) as shown:
        qtbot.keyClicks(panel.box, "rotary")  # the debounced search runs on a worker and fills the list later
    assert shown.args == ["rotary"]
    expected = _rotary_nodes(path)
    assert len(expected) == 28
    assert panel.status.text() == "28 results"
    rows = [panel.results.item(i) for i in range(panel.results.count())]
    hits = [r.data(Qt.ItemDataRole.UserRole) for r in rows]
    assert [h.path for h in hits] == [(i,) for i in expected]
    for row, hit in zip(rows, hits):
        call = panel.owner(hit)
        assert call is not None
        # where it matched first, then the matched line around the match (its start, elided, lost it: ``query_states,
        # key_states = apply_ro…``), then the distinguishing module path and FX name last; the tooltip: the whole line
        shown = around(hit.text, "rotary", MATCH_CHARS)
        assert "apply_rotary_pos_emb" in shown and len(shown) <= MATCH_CHARS < len(hit.text)
        assert row.text() == f"stack trace  {shown}  ·  {call.module_path} › {call.name}"
        assert hit.text.replace("=", "&#61;") in row.toolTip()  # (escaped: shown as text)
    assert len({r.text() for r in rows}) == len(rows)  # no two rows alike
    assert panel.results.textElideMode() == Qt.TextElideMode.ElideMiddle

    panel.results.setCurrentRow(3)
    hit = hits[3]
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(panel.box, Qt.Key.Key_Return)
    assert window.center.current_scope() is panel.owner(hit)
    selected = window.center.graph.selected()
    assert selected is not None and selected.ref == hit.path


def test_a_result_for_older_text_is_not_shown(qtbot, window):
    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(ZOO / "llama_gqa.onnx")
    panel = window.search_panel
    panel.box.setText("rotary")
    panel._start()  # a search for "rotary" is on its way ...
    panel.box.setText("ReshapeReshape")  # ... and the text changes before it reports
    qtbot.waitUntil(lambda: panel.results.count() > 0, timeout=30000)
    texts = [panel.results.item(i).text() for i in range(panel.results.count())]
    assert texts and all(t.startswith("metadata  ReshapeReshape  ·  ") for t in texts)
    assert len(texts) == 2


def test_enter_before_the_results_come_jumps_to_the_first_once_they_do(qtbot, window):
    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(ZOO / "llama_gqa.onnx")
    panel = window.search_panel
    window.start_search()
    qtbot.keyClicks(panel.box, "rotary")
    with qtbot.waitSignal(panel.jump, timeout=30000) as jumped:
        qtbot.keyClick(panel.box, Qt.Key.Key_Return)  # at once: the search has not even started
        assert panel.results.count() == 0  # nothing ran on this thread
    first = panel.results.item(0).data(Qt.ItemDataRole.UserRole)
    assert jumped.args == [first] and first.path == (_rotary_nodes(ZOO / "llama_gqa.onnx")[0],)


def test_a_node_in_a_branch_of_torch_cond_belongs_to_the_call_its_metadata_names(qtbot, window):
    """Rows name the aten call a node came from: for the nodes in the branches of an If (``torch.cond``), the call
    is the one torch wrote in the node's own FX metadata, not the last call under the If (the owners were once keyed
    by the If's position: both branches' Gemm nodes read ``root › mul`` twice)."""
    import re

    from inspector.core.model.walk import resolve_path

    path = ZOO / "cond.onnx"
    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(path)
    panel, graph = window.search_panel, onnx.load(path).graph
    window.start_search()
    checked: set[tuple] = set()
    for query in ("Gemm", "Relu", "Tanh", "LayerNormalization", "node_"):
        with qtbot.waitSignal(panel.shown, timeout=30000):
            panel.box.setText(query)
        rows = [panel.results.item(i) for i in range(panel.results.count())]
        for row in rows:
            hit = row.data(Qt.ItemDataRole.UserRole)
            if hit.kind not in ("op_type", "node") or hit.scope is None:
                continue
            node = resolve_path(graph.node, hit.path)
            fx = next((e.value for e in node.metadata_props if e.key == "pkg.torch.onnx.fx_node"), "")
            named = re.match(r"%(\w+) ", fx)
            owner = panel.owner(hit)
            assert (owner.name if owner else None) == (named.group(1) if named else None), (hit.where, fx)
            checked.add(hit.path)
        texts = [r.text() for r in rows]
        assert len(set(texts)) == len(texts), texts
    ops = {"Gemm", "Relu", "Tanh", "LayerNormalization"}
    branch_nodes = {(i, attr.name, k) for i, node in enumerate(graph.node) if node.op_type == "If"
                    for attr in node.attribute for k, inner in enumerate(attr.g.node) if inner.op_type in ops}
    assert len(branch_nodes) == 5  # then: Gemm, Relu; else: Gemm, LayerNormalization, Tanh
    assert branch_nodes <= checked
