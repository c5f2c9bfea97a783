"""The app's Review list says what ``check`` says of every item of a model re-exported over itself (its sidecar kept):
a value reviewed on an earlier body and unchanged keeps its review, a changed one reads ``changed`` with what it
was, and both count as ``check`` counts them. The app listed every item of a new body as unreviewed: the 4 values
``check`` passed as reviewed ok on the same value, and the 4 items it failed as changed since review.

pair_scale_a exported again as pair_scale_b (the zoo: torch 2.13; truth files give the SDPA scale, None then 0.3).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from inspector.cli import main
from inspector.core.model.index import open_index
from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
from inspector.core.specialise.specialiser import Specialiser
from tests.conftest import ZOO


def _check(model: Path) -> dict[tuple[str, str, str, str], dict]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        main(["check", str(model), "--format", "json"])
    return {(i["kind"], i["family"], i["fingerprint"], i["slot"] or ""): i for i in json.loads(out.getvalue())["items"]}


def test_a_model_exported_again_over_itself_lists_what_check_says(qtbot, window, tmp_path: Path):
    truth_a, truth_b = (json.loads((ZOO / f"{n}.truth.json").read_text()) for n in ("pair_scale_a", "pair_scale_b"))
    assert (truth_a["pair"]["value"], truth_b["pair"]["value"]) == (None, 0.3)
    model = tmp_path / "attention.onnx"
    shutil.copy(ZOO / "pair_scale_a.onnx", model)
    store = ReviewStore(model)
    for analysis in Specialiser(open_index(model)).analyse_all():
        for key, obj in review_keys(analysis):
            store.set(key, "ok", "looked at it", reviewed_value(obj))
    shutil.copy(ZOO / "pair_scale_b.onnx", model)  # (exported again over the reviewed file)
    checked = _check(model)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(model)
    shown = {(i.key.kind, i.key.family, i.key.fingerprint, i.key.slot or ""): r for i, r in window.session.review_list}
    assert set(shown) == set(checked)
    compared = {k: (r.status, checked[k]["status"]) for k, r in shown.items()
                if checked[k]["status"] != "not_review_worthy"}
    assert all(app == cli for app, cli in compared.values()), compared
    statuses = [cli for _app, cli in compared.values()]
    assert statuses.count("changed") == 4 and statuses.count("ok") == 20 and "unreviewed" not in statuses
    kept = [r for k, r in shown.items() if checked[k]["basis"] == "same_value"]
    assert len(kept) == 4 and all(r.note == "kept from an earlier body, same value: looked at it" for r in kept)
    # what it was, on the row and in the review bar; the list to review holds the changed items
    panel = window.review_panel
    assert panel.summary.text().endswith(" · 4 changed")
    rows = [panel.tree.topLevelItem(k).child(j) for k in range(panel.tree.topLevelItemCount())
            for j in range(panel.tree.topLevelItem(k).childCount())]
    assert {row.text(1) for row in rows} == {"changed"} and len(rows) == 4
    value_row = next(r for r in rows if r.data(0, Qt.ItemDataRole.UserRole).key.kind == "value")
    assert value_row.text(2).startswith("was [0.") and "when reviewed ok: looked at it" in value_row.text(2)
    # the value as the Signature tab writes it: sqrt of the new scale in float32's fewest digits (numpy's str), not the
    # 8 digits of its repr (0.54772258)
    scale = truth_b["pair"]["value"]
    assert value_row.text(0).split("\n")[0].endswith(f" = {np.float32(math.sqrt(scale))!s}")
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        panel.tree.itemActivated.emit(value_row, 0)
    bar = window.review_bar
    assert bar.status.text() == "changed" and bar.note.text() == "" and "was [0." in bar.status.toolTip()
    # marked ok in the app, it passes in check too
    key = value_row.data(0, Qt.ItemDataRole.UserRole).key
    window.review_bar.buttons["ok"].click()
    assert _check(model)[(key.kind, key.family, key.fingerprint, key.slot or "")]["status"] == "ok"
    assert panel.summary.text().endswith(" · 3 changed")
