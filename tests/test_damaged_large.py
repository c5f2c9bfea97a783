"""Strings that are not valid UTF-8 in a model too large to be checked up front.

Up to ``EAGER_TEXT_CHECK_NODES`` nodes every string of a model is checked and repaired when it is opened
(``test_damaged.py``); a larger one only when indexing trips over one, so a damaged node name or value name, which
indexing never reads, reaches the scene, the details, the escapers and the diff as ``bytes``. Each must show it by
its decoding (U+FFFD for the bad byte) and never fail. The expected texts come from the bytes written into the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from inspector.cli import main
from inspector.core.model.index import EAGER_TEXT_CHECK_NODES, open_index
from inspector.core.model.keys import MAIN
from inspector.core.util.textsafe import html_text, md_text, one_line
from inspector.render.scene import build_scene

N = EAGER_TEXT_CHECK_NODES + 500
BAD = 12345  # the node whose name, and whose output's name, are damaged


def _chain(tmp: Path, name: str, damaged: bool) -> Path:
    nodes = [helper.make_node("Identity", ["x" if i == 0 else f"v{i - 1}"], [f"v{i}"], name=f"node{i}")
             for i in range(N)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"v{N - 1}", TensorProto.FLOAT, [1])])
    data = helper.make_model(graph).SerializeToString()
    if damaged:
        assert data.count(b"node12345") == 1 and data.count(b"v12345") == 2  # (its output, its reader's input)
        data = data.replace(b"node12345", b"node\xff2345").replace(b"v12345", b"v\xfe2345")
    path = tmp / name
    path.write_bytes(data)
    return path


def _aten_chain(path: Path) -> Path:
    """A flat export's shape: each node one aten call (``pkg.torch.onnx.fx_node``); node 0's output name is
    damaged, and the call the report shows first (aten::abs) is made of it."""
    nodes = []
    for i in range(N):
        node = helper.make_node("Abs", ["x" if i == 0 else f"abs_{i - 1}"], [f"abs_{i}"], name=f"node_abs_{i}")
        arg = "%x" if i == 0 else f"%abs_{i - 1}"
        helper.set_metadata_props(node, {"pkg.torch.onnx.fx_node": f"%abs_{i} : [num_users=1] = call_function["
                                         f"target=torch.ops.aten.abs.default](args = ({arg},), kwargs = {{}})"})
        nodes.append(node)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"abs_{N - 1}", TensorProto.FLOAT, [1])])
    data = helper.make_model(graph).SerializeToString()
    assert data.count(b"\x12\x05abs_0") == 1  # node 0's output (field 2, 5 bytes)
    path.write_bytes(data.replace(b"\x12\x05abs_0", b"\x12\x05abs\xff0"))
    return path


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    return _chain(tmp_path_factory.mktemp("damaged"), "damaged.onnx", True)


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    return _chain(tmp_path_factory.mktemp("clean"), "clean.onnx", False)


def test_the_model_is_not_repaired_when_opened(damaged: Path):
    ix = open_index(damaged)
    assert ix.proto.graph.node[BAD].name == b"node\xff2345"  # what every reader below gets
    assert [f.kind for f in ix.findings if f.kind == "invalid_text"] == []


def test_escapers_show_bytes_by_their_decoding():
    assert one_line(b"node\xff2345") == "node\ufffd2345"
    assert html_text(b"a<\xfe") == "a&lt;\ufffd"
    assert md_text(b"x_\xff") == "x\\_\ufffd"


def test_the_scene_around_the_damaged_node_has_text_labels(damaged: Path):
    ix = open_index(damaged)
    scene = build_scene(ix, MAIN, max_nodes=N + 10)
    box = next(n for n in scene.nodes if n.ref == (BAD,))
    assert (box.label, box.detail) == ("Identity", "node\ufffd2345")
    values = sorted(e.value for e in scene.edges if "2345" in e.value)
    assert values == ["v2345", "v\ufffd2345"]
    assert all(isinstance(n.detail, str) and isinstance(n.label, str) for n in scene.nodes)


def test_diff_against_the_clean_model_runs_and_finds_the_chains_equal(damaged: Path, clean: Path,
                                                                      tmp_path: Path):
    """Value and node names are not what the diff matches by: the two chains are equal, as the damaged and the
    clean file are the same chain. It failed with ``TypeError: intern() argument must be str, not bytes``."""
    out = tmp_path / "d.json"
    assert main(["diff", str(damaged), str(clean), "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["changes"] == []


def test_the_app_finds_shows_and_details_the_damaged_node(qtbot, window, damaged: Path):
    """Open, search the damaged name, jump to it: the graph draws it and the Details tab names it and its output by
    their decodings (a bytes label failed in ``QGraphicsSimpleTextItem``; the details showed ``b'node\\xff2345'``)."""
    pytest.importorskip("PySide6")
    from PySide6.QtCore import Qt

    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(damaged)
    panel = window.search_panel
    window.start_search()
    with qtbot.waitSignal(panel.shown, timeout=30000):
        qtbot.keyClicks(panel.box, "2345")
    rows = [panel.results.item(i) for i in range(panel.results.count())]
    assert [r.text() for r in rows] == ["name  node2345  ·  main/node2345",
                                        "name  node\ufffd2345  ·  main/node\ufffd2345"]
    panel.results.setCurrentRow(1)
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        qtbot.keyClick(panel.box, Qt.Key.Key_Return)
    selected = window.center.graph.selected()
    assert selected is not None and selected.ref == (BAD,)
    text = window.details.toPlainText()
    assert "Identity node\ufffd2345" in text and "v\ufffd2345" in text and "b'" not in text


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_report_shows_the_damaged_value_by_its_decoding(tmp_path: Path, fmt: str):
    """It failed with ``internal error: TypeError: sequence item 0: expected str instance, bytes found`` (the body
    text of the first aten call); now the report repairs the model when it trips and writes it again."""
    path = _aten_chain(tmp_path / "aten.onnx")
    out = tmp_path / f"r.{fmt}"
    assert main(["report", str(path), "--format", fmt, "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "abs\ufffd0" in text
    assert "b'abs" not in text and "\\xff" not in text


def test_the_app_shows_the_aten_call_made_of_the_damaged_node(qtbot, window, tmp_path: Path):
    """Select the first aten call: its details (the ONNX printer's text of its node, which failed with
    UnicodeDecodeError) and its body in the signature panel (which failed with TypeError) show the damaged output
    by its decoding."""
    path = _aten_chain(tmp_path / "aten.onnx")
    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(path)
    call = window.index.provenance.calls[0]
    assert call.name == "abs_0"
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        assert window.select_in_tree(call)
    details = window.details.toPlainText()
    assert '"abs\ufffd0" = Abs (x)' in details
    body = window.signature.view.toPlainText()
    assert "abs\ufffd0 = Abs" in body and "b'abs" not in body
