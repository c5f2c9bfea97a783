"""What sits beside the graph, on real exports: operator docs rendered (not raw Markdown), the Review panel's Item
column never cut, counts in the right number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRect, Qt, QThreadPool
from PySide6.QtWidgets import QApplication

from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import MAIN
from inspector.core.util.units import plural
from inspector.gui.main_window import MainWindow
from tests.conftest import ROOT

ZOO = ROOT / "tests" / "zoo"


def _open(qtbot: Any, w: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(w.center.view_shown, timeout=60000):
        w.open_path(path)


def _call(window: MainWindow, name: str) -> AtenCall:
    assert window.index is not None
    return next(c for c in window.index.provenance.calls if c.name == name)


def _select_op(qtbot: Any, window: MainWindow, call: str, op_type: str) -> str:
    """Open an aten call, click its ``op_type`` box; the Details tab's text."""
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(_call(window, call))
    graph = window.center.graph
    box = next(i for i, item in graph.items_by_id.items() if item.node.kind == "op" and item.node.label == op_type)
    graph.select(box)
    return window.details.toPlainText()


def test_operator_docs_are_rendered_not_raw_markdown(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    text = _select_op(qtbot, window, "transpose", "Transpose")
    doc = text.split("Operator", 1)[1]
    assert doc.startswith("\nTranspose (since opset 13, domain 'ai.onnx')\n")
    # onnx's Markdown: "(Similar to `numpy.transpose`)": the backticks become code, not characters
    assert "Returns a transpose of the input tensor. (Similar to numpy.transpose)." in doc
    assert "`" not in doc
    html = window.details.toHtml()
    assert "font-family:'monospace';\">numpy.transpose</span>" in html


def test_operator_doc_code_blocks_and_indentation(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "gpt2.onnx")
    layer_norm = next(c.name for c in window.index.provenance.calls if c.target == "aten::layer_norm")
    doc = _select_op(qtbot, window, layer_norm, "LayerNormalization").split("Operator", 1)[1]
    schema = onnx.defs.get_schema("LayerNormalization", 20)
    assert "```" in schema.doc and "```" not in doc  # a fenced block in onnx's text, shown as a block here
    assert "\nMean = ReduceMean<axes=normalized_axes>(X)\nD = Sub(X, Mean)\n" in doc
    assert "This is layer normalization defined in ONNX as function." in doc
    assert "      This is" not in doc  # onnx indents the text by six spaces: not a code block


def test_review_items_are_never_cut(qtbot, window: MainWindow):
    window.resize(1366, 768)
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    QThreadPool.globalInstance().waitForDone(30000)
    QApplication.processEvents()
    panel = window.review_panel
    window.trees.setCurrentWidget(panel)
    QApplication.processEvents()
    tree = panel.tree
    header = tree.header()
    fm = tree.fontMetrics()
    rows = [tree.topLevelItem(f).child(k) for f in range(tree.topLevelItemCount())
            for k in range(tree.topLevelItem(f).childCount())]
    assert len(rows) == len(panel.items()) == 45  # everything is open after loading
    assert tree.horizontalScrollBar().maximum() == 0  # nothing to scroll sideways to
    assert header.sectionPosition(0) == 0 and header.sectionSize(0) > tree.viewport().width() // 2
    room = header.sectionSize(0) - 2 * tree.indentation() - 8  # a row is indented twice (root decorated)
    for row in rows:
        text = row.text(0)
        assert row.toolTip(0)  # the whole label, too
        for word in text.split():
            assert fm.horizontalAdvance(word) <= room, word  # no word is wider than its column
        needed = fm.boundingRect(QRect(0, 0, room, 1 << 20), Qt.TextFlag.TextWordWrap, text).height()
        assert tree.visualItemRect(row).height() >= needed, text  # every wrapped line has its room


def test_counts_in_the_right_number(qtbot, window: MainWindow):
    assert [plural(1, "node"), plural(2, "node"), plural(1, "box", "boxes"), plural(1204, "box", "boxes")] == [
        "1 node", "2 nodes", "1 box", "1,204 boxes"]
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(_call(window, "embedding"))  # one ONNX node: Gather
    info = window.center.info.full_text()
    graph = window.center.graph
    kinds = sorted(i.node.kind for i in graph.items_by_id.values())
    assert kinds.count("op") == 1
    assert info.startswith(f"{len(kinds)} boxes, {len(graph.edges)} edges")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN)
    assert window.center.info.full_text().startswith("4 boxes, 3 edges")


def test_a_scalar_initializer_is_one_value(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    text = _select_op(qtbot, window, "pow_1", "Pow")  # x ** 2: the exponent is a one-element initializer
    model = onnx.load(str(ZOO / "llama_gqa.onnx"))
    pow_node = next(n for n in model.graph.node if n.op_type == "Pow")
    exponent = next(t for t in model.graph.initializer if t.name == pow_node.input[1])
    assert list(exponent.dims) == [] and onnx.numpy_helper.to_array(exponent).item() == 2.0
    assert exponent.name in text and "[2.0] min 2 max 2 mean 2 std 0 (1 value)" in text  # (spaces as HTML shows them)
    assert "1 values" not in text


def test_one_call_and_one_function_are_singular(qtbot, window: MainWindow):
    _open(qtbot, window, ZOO / "llama_gqa.onnx")
    fam = window.index.family("aten_call", "aten", "embedding")
    assert fam is not None and fam.call_count == _truth_count("llama_gqa", "aten::embedding") == 1
    window.show_object(fam)
    text = window.details.toPlainText()
    assert ": 1 call" in text and "1 calls" not in text
    import json

    truth = json.loads((ZOO / "llama_gqa.truth.json").read_text())
    calls = sum(1 for n in truth["fx_nodes"] if n["onnx_nodes"])
    assert (truth["onnx"]["main_graph_nodes"], calls) == (137, 110)
    assert window.counts.full_text() == "137 nodes · 0 functions · 110 aten calls · 0 findings"


def _truth_count(name: str, target: str) -> int:
    import json

    truth = json.loads((ZOO / f"{name}.truth.json").read_text())
    return sum(1 for n in truth["fx_nodes"] if n["target"] == target and n["onnx_nodes"])


def test_a_node_the_optimizer_made_says_which_module_holds_it(qtbot, window: MainWindow):
    """GPT-2's Split of its fused query, key and value carries no metadata: its details said "main graph" alone,
    though the graph draws it in its attention. They name that module and why the node is there. Truth: the nodes
    torch's FX graph says feed it and read it, in ``transformer.h.0.attn`` (``tests/truth_modules.py``)."""
    from tests.truth_modules import made_by_optimizer

    made = made_by_optimizer(ZOO / "gpt2.onnx", ZOO / "gpt2.truth.json")
    assert made["transformer.h.0.attn"] == made["transformer.h.1.attn"] == 1
    _open(qtbot, window, ZOO / "gpt2.onnx")
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.center.show_scope(MAIN, frozenset({"mod:transformer", "mod:transformer.h.0",
                                                  "mod:transformer.h.0.attn"}))
    graph = window.center.graph
    (split,) = [i for i, item in graph.items_by_id.items() if item.node.kind == "op" and item.node.label == "Split"]
    node = window.index.proto.graph.node[graph.items_by_id[split].node.ref[0]]
    assert node.op_type == "Split" and not node.metadata_props
    graph.select(split)
    assert (f"main graph › transformer.h.0.attn (no metadata: placed where its neighbours are) / {node.name}"
            in window.details.toPlainText())
    # a node in a call says nothing of a module: its call's scope says where it is
    text = _select_op(qtbot, window, "layer_norm", "LayerNormalization")
    assert " › " not in text.splitlines()[1]
