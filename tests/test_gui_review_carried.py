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
from inspector.core.specialise.categories import value_text
from inspector.core.specialise.specialiser import Specialiser
from inspector.core.util.paths import sidecar_path
from tests.conftest import ZOO

EVIDENCE = Path(__file__).resolve().parent / "evidence"


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


def test_a_body_split_off_a_body_reviewed_in_the_app_lists_changed(qtbot, window, tmp_path: Path):
    """Reviewed in the app, each review records the bodies of its template the model has (``siblings``); exported
    again with another eps on some LayerNorms (tests/evidence/split_eps_*, truth from torch), those calls move to a
    new body while the reviewed one stays: the new body's eps lists ``changed`` with what it was, as ``check`` says."""
    truth = json.loads((EVIDENCE / "split_eps.truth.json").read_text())
    moved = {m for m, eps in truth["b"].items() if eps != truth["a"][m]}
    assert moved and len({truth["b"][m] for m in moved}) == 1 and len(set(truth["a"].values())) == 1
    model = tmp_path / "norms.onnx"
    shutil.copy(EVIDENCE / "split_eps_a.onnx", model)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(model)
    session = window.session
    for _ in range(sum(r.status == "unreviewed" for _i, r in session.review_list)):  # Ctrl+N, Ctrl+1: each ok
        before = session.target
        qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda b=before: session.target is not None and session.target is not b, timeout=30000)
        with qtbot.waitSignal(window.review_saved, timeout=5000):
            qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    saved = json.loads(sidecar_path(model).read_text())["reviews"]
    norms = [e for e in saved.values() if e["family"] == "aten::layer_norm"]
    assert len(norms) == 3 and all(e["status"] == "ok" and len(e["siblings"]) == 1 for e in norms)
    shutil.copy(EVIDENCE / "split_eps_b.onnx", model)  # (exported again over the reviewed file)
    checked = _check(model)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(model)
    shown = {(i.key.kind, i.key.family, i.key.fingerprint, i.key.slot or ""): (i, r) for i, r in session.review_list}
    assert set(shown) == set(checked)
    new = {k: (i, r) for k, (i, r) in shown.items()
           if i.body is not None and {getattr(c, "module_path", "") for c in i.body.members} == moved}
    assert {(k[0], k[3]): (r.status, checked[k]["status"]) for k, (_i, r) in new.items()} == {
        ("overload", ""): ("changed", "changed"), ("value", "0|attribute|epsilon"): ("changed", "changed"),
        ("value", "0|attribute|axis"): ("ok", "ok")}
    (eps,) = [(i, r) for (_k, _f, _fp, slot), (i, r) in new.items() if slot == "0|attribute|epsilon"]
    (was,) = {truth["a"][m] for m in moved}
    assert np.float32(eps[1].value) == np.float32(was)
    assert eps[1].note == f"was {value_text(eps[1].value)} when reviewed ok"
    assert np.float32(eps[0].obj.literal.value) == np.float32(truth["b"][next(iter(moved))])
    tree = window.review_panel.tree  # the list to review: the new body and its eps, changed
    rows = [tree.topLevelItem(k).child(j) for k in range(tree.topLevelItemCount())
            for j in range(tree.topLevelItem(k).childCount())]
    assert sorted(row.text(1) for row in rows) == ["changed", "changed"]
    # the reviewed body is still in the model: marked again in the app, what the new body carries of it follows
    (kept_axis,) = [i for i, _r in session.review_list if i.key.slot == "0|attribute|axis" and i.key.kind == "value"
                    and i.body is not None and {getattr(c, "module_path", "") for c in i.body.members} != moved]
    window.review_panel.jump.emit(kept_axis)
    qtbot.waitUntil(lambda: session.target is not None and session.target.item.key == kept_axis.key, timeout=30000)
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        window.review_bar.buttons["wrong"].click()
    checked = _check(model)
    now = {(i.key.kind, i.key.family, i.key.fingerprint, i.key.slot or ""): r for i, r in session.review_list}
    compared = {k: (r.status, checked[k]["status"]) for k, r in now.items()
                if checked[k]["status"] != "not_review_worthy"}
    assert all(app == cli for app, cli in compared.values()), compared
    assert [now[k].status for k in new if k[3] == "0|attribute|axis"] == ["wrong"]
