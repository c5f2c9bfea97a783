"""A target with several bodies lists them in the Signature tab, each other one a link to its first call: Whisper's
linear calls with a bias lower to MatMul and Add, those without (its k_proj) to a MatMul alone; selecting the overload
showed the first body and said "2 distinct bodies", and the tree was the only way to the other. Truth from torch:
the zoo's truth file counts each call's ONNX nodes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QUrl

from inspector.core.model.calls import AtenCall
from inspector.gui.family_model import FamilyModel
from tests.conftest import ZOO, open_copy


def test_the_other_body_of_a_target_is_one_click_away(qtbot, window, tmp_path: Path):
    truth = json.loads((ZOO / "whisper.truth.json").read_text())
    linear = [n for n in truth["fx_nodes"] if n["target"] == "aten::linear" and n["graph"] == ""]
    assert Counter(n["onnx_nodes"] for n in linear) == {2: 13, 1: 4}
    open_copy(qtbot, window, tmp_path, "whisper")
    overload = next(ov for f in window.index.families for ov in f.overloads if ov.target == "aten::linear")
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        assert window.select_in_tree(overload)
    text = window.signature.view.toPlainText()
    assert "Bodies of aten::linear: 13 calls, 2 nodes · 4 calls, 1 node" in text
    assert 'href="body:1"' in window.signature.view.toHtml() and 'href="body:0"' not in window.signature.view.toHtml()
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.signature.view.anchorClicked.emit(QUrl("body:1"))
    shown = window.session.selection
    assert shown is not None and len(shown.analysis.members) == 4 and len(shown.analysis.body.nodes) == 1
    no_bias = {n["name"] for n in linear if n["onnx_nodes"] == 1}
    assert {m.name for m in shown.analysis.members} == no_bias
    current = window.family_view.currentIndex().data(FamilyModel.ObjectRole)
    assert isinstance(current, AtenCall) and current is shown.analysis.members[0]  # (the tree follows: its first call)
    assert "Bodies of aten::linear: 13 calls, 2 nodes · 4 calls, 1 node" in window.signature.view.toPlainText()
    assert 'href="body:0"' in window.signature.view.toHtml() and 'href="body:1"' not in window.signature.view.toHtml()
