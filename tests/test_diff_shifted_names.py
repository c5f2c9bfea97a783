"""The diff matches initializers by content before name: two real exports of one model whose folded weights
shift names (made by ``scripts/gen_evidence.py --pairs``, ``evidence_cases.Shifted``: A's ``t``/``t_1`` are B's
``t_1``/``t_2``, B folds one more weight first) were reported as two weights re-valued and one added."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import onnx

from inspector.cli import main
from inspector.core.diff import diff_files
from inspector.core.diff.values import content_digest

EVIDENCE = Path(__file__).resolve().parent / "evidence"


def test_renamed_identical_initializers_are_matched_by_content() -> None:
    """Two real exports whose folded weights shift names (``t``/``t_1`` in A are ``t_1``/``t_2`` in B, B has one
    more): only B's extra weight is added; nothing is re-valued, reshaped or removed."""
    a, b = EVIDENCE / "shifted_names_a.onnx", EVIDENCE / "shifted_names_b.onnx"
    result = diff_files(a, b)
    inits = [c for c in result.changes if c.section == "initializer"]
    assert [(c.kind, c.where) for c in inits] == [("initializer_added", "t")]
    assert result.matched["initializers"].matched == 2 and result.matched["initializers"].renamed == 2
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["diff", str(a), str(b), "--format", "json"])
    data = json.loads(buf.getvalue())
    assert not [c for c in data["changes"] if c["kind"] in ("initializer_revalued", "initializer_reshaped",
                                                             "initializer_removed")]


def test_the_shifted_weights_are_the_same_tensors() -> None:
    """The premise: B's t_1 and t_2 hold A's t and t_1, byte for byte, and B's t is new."""
    a = {t.name: content_digest(t) for t in onnx.load(EVIDENCE / "shifted_names_a.onnx").graph.initializer}
    b = {t.name: content_digest(t) for t in onnx.load(EVIDENCE / "shifted_names_b.onnx").graph.initializer}
    assert (b["t_1"], b["t_2"]) == (a["t"], a["t_1"]) and b["t"] not in a.values()


def test_zoo_pairs_report_no_initializer_change() -> None:
    """The zoo's pairs are built from one seed and differ in one hyperparameter (their truth files), so no weight
    changes: ``pair_scale``'s optimizer names shift (its ``val_82`` [64, 32] and ``val_77`` [32, 96] were reported
    removed and added)."""
    zoo = Path(__file__).resolve().parent / "zoo"
    for pair in ("eps", "heads", "scale", "transpose"):
        result = diff_files(zoo / f"pair_{pair}_a.onnx", zoo / f"pair_{pair}_b.onnx")
        assert [(c.kind, c.where) for c in result.changes if c.section == "initializer"] == [], pair
