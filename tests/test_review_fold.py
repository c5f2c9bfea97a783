"""Reviews hold across fold (issue 31): a value reviewed in a flat export is reviewed in its fold and back, and a
value that changed is still caught as changed. Real exports from the zoo, folded by ``fold``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
import pytest

from inspector.cli import main
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from inspector.core.review.check import check_model, load_reviews
from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
from inspector.core.specialise.specialiser import Specialiser
from inspector.core.util.paths import sidecar_path

ZOO = Path(__file__).resolve().parent / "zoo"


def review_all(model: Path, status: str = "ok") -> int:
    """Mark every review item of ``model`` in its sidecar; how many there were."""
    index = open_index(model)
    store = ReviewStore(model)
    n = 0
    for analysis in Specialiser(index).analyse_all():
        for key, obj in review_keys(analysis):
            store.set(key, status, value=reviewed_value(obj))
            n += 1
    return n


def copy(name: str, folder: Path) -> Path:
    path = folder / f"{name}.onnx"
    shutil.copy(ZOO / f"{name}.onnx", path)
    return path


def fold(name: str, folder: Path) -> Path:
    model, _report = fold_model(open_index(ZOO / f"{name}.onnx"))
    path = folder / f"{name}.folded.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(("name", "items", "folded_items"), [
    ("pair_transpose_a", 16, 16), ("gpt2", 47, 47), ("bert_noopt", 105, 105), ("cond", 19, 21),
])
def test_check_of_the_fold_passes_with_the_flat_exports_reviews(name: str, items: int, folded_items: int,
                                                                 tmp_path: Path) -> None:
    flat = copy(name, tmp_path)
    assert review_all(flat) == items
    folded = fold(name, tmp_path)
    result = check_model(open_index(folded), load_reviews(folded, sidecar_path(flat)))
    # cond: fold leaves the calls inside the If branches flat; two of its bodies become one function each,
    # reviewed through their fold keys, beside the flat calls that keep their own keys
    assert result.counts()["ok"] == folded_items and result.passed


@pytest.mark.parametrize("name", ["pair_transpose_a", "gpt2"])
def test_reviews_of_the_fold_hold_on_the_flat_export(name: str, tmp_path: Path) -> None:
    folded = fold(name, tmp_path)
    review_all(folded)
    flat = copy(name, tmp_path)
    result = check_model(open_index(flat), load_reviews(flat, sidecar_path(folded)))
    assert result.passed and result.counts()["unreviewed"] == 0


def test_a_changed_value_is_caught_across_fold(tmp_path: Path) -> None:
    """pair_transpose_b transposes (1, 3) where _a transposes (1, 2): its fold, checked against _a's flat reviews,
    has the perm as changed, with the value reviewed and the value now."""
    flat = copy("pair_transpose_a", tmp_path)
    review_all(flat)
    folded = fold("pair_transpose_b", tmp_path)
    result = check_model(open_index(folded), load_reviews(folded, sidecar_path(flat)))
    changed = [i.to_json() for i in result.items if i.status == "changed"]
    assert not result.passed
    assert sorted((c["kind"], c["where"], json.dumps(c["reviewed_value"]), json.dumps(c["value"]))
                  for c in changed) == [("overload", "body", "null", "null"),
                                        ("value", "Transpose.perm", "[0, 2, 1, 3]", "[0, 3, 2, 1]")]
    (overload,) = [c for c in changed if c["kind"] == "overload"]
    assert overload["changes"] == [{"where": "Transpose.perm", "old": [0, 2, 1, 3], "new": [0, 3, 2, 1]}]


def test_check_command_passes_on_the_fold_with_the_flat_reviews(tmp_path: Path, capsys) -> None:
    flat = copy("pair_transpose_a", tmp_path)
    review_all(flat)
    folded = fold("pair_transpose_a", tmp_path)
    assert main(["check", str(folded), "--reviews", str(sidecar_path(flat))]) == 0
    assert main(["check", str(folded)]) == 1  # its own sidecar has no reviews
    capsys.readouterr()


def test_the_sidecar_records_the_fold_key_only_for_aten_families(tmp_path: Path) -> None:
    flat = copy("pair_transpose_a", tmp_path)
    review_all(flat)
    entries = json.loads(sidecar_path(flat).read_text())["reviews"]
    perm = [e for e in entries.values() if e.get("value") == [0, 2, 1, 3]]
    assert len(perm) == 1 and perm[0]["family"] == "aten::transpose"
    template, fingerprint, slot = perm[0]["fold"]
    assert len(template) == len(fingerprint) > 8 and slot == "0|attribute|perm"
    ts = copy("ts_functions", tmp_path)
    review_all(ts)
    assert not [e for e in json.loads(sidecar_path(ts).read_text())["reviews"].values() if "fold" in e]
