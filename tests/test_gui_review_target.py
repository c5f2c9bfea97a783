"""The review target follows what is shown: on every way of moving (tree, search, graph clicks and double-clicks,
Modules tab, Back/Forward, the Review list, compare windows, another model) the Signature tab, the review bar and
the target name the body the graph shows, and Ctrl+1 writes exactly that body (read back from the sidecar).

Real exports only: GPT-2 from the zoo (torch 2.13, dynamo with the optimizer), whose five layer_norm calls and two
SDPA calls are aten calls with bodies of their own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from inspector.core.model.calls import AtenCall
from inspector.core.review.store import ReviewKey, sidecar_path
from inspector.gui.analysis import Analyses
from inspector.gui.main_window import MainWindow

ZOO = Path(__file__).resolve().parent / "zoo"


@pytest.fixture
def gpt2(tmp_path: Path) -> Path:
    model = tmp_path / "gpt2.onnx"
    shutil.copy(ZOO / "gpt2.onnx", model)
    return model


def _open(qtbot: Any, window: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(path)


def _family(window: MainWindow, name: str) -> Any:
    assert window.index is not None
    fam = window.index.family("aten_call", "aten", name)
    assert fam is not None
    return fam


def _calls(window: MainWindow, name: str) -> list[AtenCall]:
    return [c for ov in _family(window, name).overloads for c in ov.aten_calls]


def _click_row(qtbot: Any, window: MainWindow, obj: Any) -> None:
    """Make ``obj``'s row of the functions tree current, as a click does, and wait for its body."""
    proxy = window.family_filter.mapFromSource(window.families.index_of(obj))
    assert proxy.isValid()
    window.trees.setCurrentWidget(window.family_view)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(proxy)


def _expected_key(window: MainWindow, obj: Any) -> str:
    """The sidecar key of the body of ``obj`` (an overload's or call's body), worked out apart from the window."""
    assert window.index is not None
    analyses = Analyses(window.index)
    sel = analyses.selection(obj)
    assert sel is not None
    fam = analyses.family_of(obj)
    assert fam is not None
    from inspector.core.review.store import review_keys

    keys = [k for k, thing in review_keys(analyses.family(fam)) if thing is sel.analysis]
    assert len(keys) == 1
    return keys[0].to_text()


def _ctrl1_writes(qtbot: Any, window: MainWindow, model: Path) -> dict[str, Any]:
    """Press Ctrl+1 and read the sidecar back from disk."""
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    return json.loads(sidecar_path(model).read_text())["reviews"]


def _assert_target(window: MainWindow, obj: Any, words: str) -> None:
    """The Signature tab, the review bar and the target all name the body of ``obj``."""
    sel = window.session.selection
    assert sel is not None and window.session.target is not None
    assert window.session.target.item.obj is sel.analysis
    assert any(m is obj or m == obj for m in sel.analysis.members)
    assert words in window.signature.view.toPlainText().splitlines()[0]
    assert words in window.review_bar.target.full_text()
    assert window.review_bar.buttons["ok"].isEnabled()


def test_layer_norm_then_search_softmax_second_result_targets_the_sdpa_call_shown(qtbot, window, gpt2):
    """The bug this started from: the graph showed the SDPA call of the second Softmax while the Signature tab and
    the review bar still said aten::layer_norm, and Ctrl+1 marked layer_norm."""
    _open(qtbot, window, gpt2)
    layer_norm = _family(window, "layer_norm").overloads[0]
    _click_row(qtbot, window, layer_norm)
    assert "aten::layer_norm" in window.review_bar.target.full_text()
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    with qtbot.waitSignal(window.search_panel.shown, timeout=30000):
        qtbot.keyClicks(window.search_panel.box, "softmax")
    results = window.search_panel.results
    assert results.count() == 2
    second = results.item(1)
    hit = second.data(Qt.ItemDataRole.UserRole)
    sdpa = window.search_panel.owner(hit)
    assert sdpa is not None and sdpa.target == "aten::scaled_dot_product_attention"
    assert sdpa is _calls(window, "scaled_dot_product_attention")[1]
    rect = results.visualItemRect(second)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        qtbot.mouseClick(results.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.center.current_scope() is sdpa
    _assert_target(window, sdpa, "aten::scaled_dot_product_attention")
    assert "layer_norm" not in window.review_bar.target.full_text()
    reviews = _ctrl1_writes(qtbot, window, gpt2)
    assert list(reviews) == [_expected_key(window, sdpa)]
    assert reviews[_expected_key(window, sdpa)]["family"] == "aten::scaled_dot_product_attention"
    assert reviews[_expected_key(window, sdpa)]["status"] == "ok"
    assert ReviewKey.from_text(next(iter(reviews))).kind == "overload"
