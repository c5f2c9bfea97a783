"""Choosing where an output goes (report, diff, graph) in the app: a file that is an input (the open model, its
reviews) is refused before anything is asked, and an existing file is replaced only when the user says so. Qt's save
dialog used to ask "replace?" for the open model itself, then the write was refused."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QFileDialog, QMessageBox

from tests.conftest import ZOO


class _Boxes:
    """Every message box shown (its text and icon), answered with ``answer``."""

    def __init__(self, monkeypatch: Any, answer: QMessageBox.StandardButton) -> None:
        self.shown: list[tuple[QMessageBox.Icon, str]] = []
        boxes = self

        def exec_(box: QMessageBox) -> int:
            boxes.shown.append((box.icon(), box.text()))
            return int(answer.value)

        monkeypatch.setattr(QMessageBox, "exec", exec_)


def _choose(monkeypatch: Any, path: Path) -> list[Any]:
    options: list[Any] = []

    def dialog(*_args: Any, **kwargs: Any) -> tuple[str, str]:
        options.append(kwargs.get("options"))
        return str(path), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", dialog)
    return options


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def opened(window: Any, qtbot: Any, tmp_path: Path) -> Path:
    model = tmp_path / "gpt2.onnx"
    shutil.copy(ZOO / "gpt2.onnx", model)
    with qtbot.waitSignal(window.center.view_shown, timeout=60000):
        window.open_path(model)
    return model


@pytest.mark.parametrize("target", ["model", "reviews"])
def test_an_input_is_refused_without_asking_to_replace_it(window: Any, qtbot: Any, opened: Path, monkeypatch: Any,
                                                         target: str) -> None:
    chosen = opened if target == "model" else opened.with_name(opened.name + ".review.json")
    if target == "reviews":
        chosen.write_text('{"format": "onnx-inspector/review", "reviews": {}, "version": 1}')
    before = _digest(chosen)
    boxes = _Boxes(monkeypatch, QMessageBox.StandardButton.Yes)
    options = _choose(monkeypatch, chosen)
    exported: list[Path] = []
    window.report_exported.connect(exported.append)
    window.export_report()
    qtbot.wait(300)
    assert options == [QFileDialog.Option.DontConfirmOverwrite]  # the dialog does not ask: we do
    assert [icon for icon, _ in boxes.shown] == [QMessageBox.Icon.Warning]  # no question, one refusal
    assert boxes.shown[0][1].startswith(f"refusing to overwrite {chosen}")
    assert exported == [] and _digest(chosen) == before


@pytest.mark.parametrize("answer", [QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes])
def test_an_existing_output_is_replaced_only_when_the_user_says_so(window: Any, qtbot: Any, opened: Path,
                                                                   monkeypatch: Any, answer: Any) -> None:
    out = opened.with_name("old.report.md")
    out.write_text("an older report\n")
    boxes = _Boxes(monkeypatch, answer)
    _choose(monkeypatch, out)
    if answer == QMessageBox.StandardButton.Yes:
        with qtbot.waitSignal(window.report_exported, timeout=60000):
            window.export_report()
        assert "aten::view" in out.read_text()
    else:
        window.export_report()
        qtbot.wait(300)
        assert out.read_text() == "an older report\n"
    assert boxes.shown == [(QMessageBox.Icon.Question, "old.report.md already exists. Replace it?")]


def test_a_graph_is_not_exported_over_the_model(window: Any, qtbot: Any, opened: Path, monkeypatch: Any) -> None:
    before = _digest(opened)
    boxes = _Boxes(monkeypatch, QMessageBox.StandardButton.Yes)
    _choose(monkeypatch, opened)
    window.center.export_dialog()
    assert [icon for icon, _ in boxes.shown] == [QMessageBox.Icon.Warning]
    assert _digest(opened) == before
