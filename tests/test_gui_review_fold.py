"""The app shows a flat export's reviews on its fold, and the fold's reviews on the flat export (issue 31): a
sidecar written for one form, put beside the other, lists every item of that other form as reviewed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings, QThreadPool

from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
from inspector.core.specialise.specialiser import Specialiser
from inspector.core.util.paths import sidecar_path
from inspector.gui.main_window import MainWindow
from tests.test_gui_review_search import _open, _select_overload

ZOO = Path(__file__).resolve().parent / "zoo"


@pytest.fixture
def make_window(qtbot, tmp_path: Path):
    def make() -> MainWindow:
        w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.show()
        qtbot.waitExposed(w)
        return w

    yield make
    QThreadPool.globalInstance().waitForDone(30000)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    flat = tmp_path / "flat" / "pair.onnx"
    folded = tmp_path / "folded" / "pair.onnx"
    flat.parent.mkdir()
    folded.parent.mkdir()
    shutil.copy(ZOO / "pair_transpose_a.onnx", flat)
    model, _report = fold_model(open_index(flat))
    onnx.save(model, folded)
    return flat, folded


def test_the_flat_exports_reviews_show_on_its_fold(qtbot, make_window, pair: tuple[Path, Path]):
    flat, folded = pair
    store = ReviewStore(flat)
    for analysis in Specialiser(open_index(flat)).analyse_all():
        for key, obj in review_keys(analysis):
            store.set(key, "ok", "seen in the flat export", reviewed_value(obj))
    shutil.copy(sidecar_path(flat), sidecar_path(folded))
    window = make_window()
    _open(qtbot, window, folded)
    listed = window.review_panel.items()
    assert len(listed) == 16
    assert {(r.status, r.note) for _i, r in listed} == {("ok", "seen in the flat export")}
    assert {i.key.family for i, _r in listed} >= {"aten::transpose", "aten::view", "aten::layer_norm"}


def test_a_review_made_on_the_fold_shows_on_the_flat_export(qtbot, make_window, pair: tuple[Path, Path]):
    flat, folded = pair
    window = make_window()
    _open(qtbot, window, folded)
    _select_overload(qtbot, window, "aten::transpose", "int")
    (perm,) = [s for s in window.signature.specialised() if s.literal.name == "perm"]
    assert [a.parameter for a in perm.links] == ["dim0", "dim1"]  # linked in the fold as in the flat export
    window.signature.value_clicked.emit(perm)
    window.review_bar.note.setText("perm swaps 1 and 2")
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        window.review_bar.buttons["suspicious"].click()
    entries = json.loads(sidecar_path(folded).read_text())["reviews"]
    assert [e["value"] for e in entries.values()] == [[0, 2, 1, 3]]
    window.close()
    shutil.copy(sidecar_path(folded), sidecar_path(flat))
    again = make_window()
    _open(qtbot, again, flat)
    reviewed = [(i.key.family, i.label, r.status, r.note) for i, r in again.review_panel.items()
                if r.status != "unreviewed"]
    assert len(reviewed) == 1
    family, label, status, note = reviewed[0]
    assert (family, status, note) == ("aten::transpose", "suspicious", "perm swaps 1 and 2") and "perm" in label
