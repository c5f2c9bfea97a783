"""An empty functions or modules tree says why instead of showing a blank panel: no model yet, a filter that
matches nothing, or an export without pkg.torch.onnx metadata (a TorchScript export), whose nodes have no aten calls
and name no modules."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

pytest.importorskip("PySide6")

from inspector.gui.main_window import MainWindow
from tests.conftest import SAMPLE, ZOO


def _open(window: MainWindow, qtbot, path: Path) -> None:
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(path)


def test_the_trees_say_why_they_are_empty(window: MainWindow, qtbot, tmp_path: Path):
    view = window.family_view
    assert view.empty_hint().startswith("Open a model")
    assert window.module_view.empty_hint().startswith("Open a model")
    _open(window, qtbot, SAMPLE)
    assert window.family_filter.rowCount() > 0 and view.empty_hint() == ""
    assert window.module_view.model().index(0, 0).data() == "(model)" and window.module_view.empty_hint() == ""
    window.filter_box.set_now("<b>no such</b>")
    assert window.family_filter.rowCount() == 0
    assert view.empty_hint() == "No function, overload or aten call matches “<b>no such</b>”."
    view.grab()  # painted as plain text (a failed paint or a Qt warning fails the test)
    window.filter_box.set_now("")
    assert view.empty_hint() == ""

    proto = onnx.load(str(ZOO / "gpt2.onnx"), load_external_data=False)
    for item in (*proto.graph.node, *proto.graph.input, *proto.graph.value_info):
        del item.metadata_props[:]
    proto.ir_version = 9  # as TorchScript writes it: no body templates are looked for (core.model.recognise.applies)
    stripped = tmp_path / "torchscript_like.onnx"
    onnx.save(proto, stripped)
    _open(window, qtbot, stripped)
    assert window.family_filter.rowCount() == 0
    assert view.empty_hint().startswith("No local functions or aten calls: this model carries no pkg.torch.onnx "
                                        "metadata")
    view.grab()
    # the module tree had one row, "(model)" with 0 nodes, for a model of 92; now none, and why
    assert window.module_view.model().rowCount() == 0
    assert window.module_view.empty_hint().startswith("No module tree: this model carries no pkg.torch.onnx metadata")
    window.trees.setCurrentWidget(window.module_view)
    window.module_view.grab()


def test_a_model_of_another_producer_is_not_taken_for_a_torchscript_export(window: MainWindow, qtbot, tmp_path: Path):
    """onnx's own test data (Inception, made by onnx-caffe2) read "a TorchScript export, or one whose metadata was
    removed"; the hints name the producer the model names, on one line however it is spelt."""
    light = Path(onnx.__file__).parent / "backend/test/data/light/light_inception_v1.onnx"
    producer = onnx.load(str(light), load_external_data=False).producer_name
    assert producer == "onnx-caffe2"
    _open(window, qtbot, light)
    hint = window.family_view.empty_hint()
    assert f"(made by {producer}" in hint and "TorchScript" not in hint
    assert f"(made by {producer}" in window.module_view.empty_hint()
    proto = onnx.load(str(light), load_external_data=False)
    proto.producer_name, proto.producer_version = "tool\nwith\x1b[31m escapes", ""
    odd = tmp_path / "odd.onnx"
    onnx.save(proto, odd)
    _open(window, qtbot, odd)
    hint = window.family_view.empty_hint()
    assert "\n" not in hint and "\x1b" not in hint and "made by tool ⏎ with" in hint
    window.family_view.grab()
