"""A call of one target in place of a call of another, against torch: ``tests/evidence/activations_*.onnx``
(``scripts/evidence_cases.py``'s ``Activations``: two MLP blocks with GELU in A and ReLU in B, and a head with ReLU in
both). The diff said "family removed aten::gelu" and "call added aten::relu", two changes with nothing between them;
now each says which call stands in for which, where the matched calls read them. Stripped of their metadata, the two
exports diff alike (B's ReLUs were read as the GELUs they replaced: A's recognised calls were taken over at nodes that
differ).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.core.diff import diff_files
from tests.conftest import ROOT
from tests.stripping import stripped_file

EVIDENCE = ROOT / "tests" / "evidence"
A, B = EVIDENCE / "activations_a.onnx", EVIDENCE / "activations_b.onnx"
TRUTH = json.loads((EVIDENCE / "activations.truth.json").read_text(encoding="utf-8"))
# the modules whose activation changed target, with torch's FX names of their calls in A and B
CHANGED = sorted((v["a"][1], v["b"][1]) for v in TRUTH.values() if v["a"][0] != v["b"][0])


def _changes(a: Path, b: Path) -> list[tuple[str, str, str, list[str], str]]:
    return [(c.kind, c.family, c.detail, c.sites, c.stand_in) for c in diff_files(a, b).changes]


def test_the_relus_are_said_to_be_in_place_of_the_gelus() -> None:
    assert CHANGED == [("gelu", "relu"), ("gelu_1", "relu_1")]
    assert _changes(A, B) == [
        ("family_removed", "aten::gelu", "aten::gelu: 1 overload (default), 2 calls; replaced by aten::relu where its "
         "calls were read (" + ", ".join(f"{a} by {b}" for a, b in CHANGED) + ")", ["aten::gelu"], CHANGED[0][1]),
        ("call_added", "aten::relu", "aten::relu; in place of aten::gelu (" +
         ", ".join(f"{b} for {a}" for a, b in CHANGED) + ")", [b for _a, b in CHANGED], CHANGED[0][0])]


def test_the_other_way_round() -> None:
    assert _changes(B, A) == [
        ("family_added", "aten::gelu", "aten::gelu: 1 overload (default), 2 calls; in place of aten::relu where its "
         "calls are read (" + ", ".join(f"{a} for {b}" for a, b in CHANGED) + ")", ["aten::gelu"], CHANGED[0][1]),
        ("call_removed", "aten::relu", "aten::relu; replaced by aten::gelu (" +
         ", ".join(f"{b} by {a}" for a, b in CHANGED) + ")", [b for _a, b in CHANGED], CHANGED[0][0])]


@pytest.mark.parametrize("order", ["a b", "b a"])
def test_two_stripped_exports_diff_as_the_exports_do(tmp_path: Path, order: str) -> None:
    first, second = (A, B) if order == "a b" else (B, A)
    (tmp_path / "s").mkdir()
    stripped = stripped_file(first, tmp_path), stripped_file(second, tmp_path / "s")
    assert _changes(*stripped) == _changes(first, second)


def test_a_review_of_the_replaced_calls_is_read_on_both_changes(tmp_path: Path) -> None:
    """The GELUs reviewed in A: the family removed and the ReLUs added in their place both carry that review (the
    added call's was looked up by its own name in A, the head's ReLU there)."""
    import shutil

    from inspector.core.model.index import open_index
    from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
    from inspector.core.reviewed_changes import reviews_of_diff
    from inspector.core.specialise.specialiser import Specialiser

    a = tmp_path / "activations_a.onnx"
    shutil.copy(A, a)
    index = open_index(a)
    (analysis,) = [x for x in Specialiser(index).analyse_all() if x.family.name == "gelu"]
    (body,) = analysis.bodies_of([c for c in index.provenance.calls if c.target == "aten::gelu"][:1])
    (key,) = [k for k, o in review_keys(analysis) if o is body]
    ReviewStore(a).set(key, "suspicious", "must become ReLU", reviewed_value(body))
    changes = diff_files(a, B).changes
    reviewed = reviews_of_diff(open_index(a), changes)
    assert [(c.kind, [(w, r.status, r.note) for w, r in reviewed.get(id(c), [])]) for c in changes] == [
        ("family_removed", [("body", "suspicious", "must become ReLU")]),
        ("call_added", [("body", "suspicious", "must become ReLU")])]


@pytest.mark.parametrize("order", ["a b", "b a"])
def test_two_stripped_exports_of_other_call_counts_diff_as_the_exports_do(tmp_path: Path, order: str) -> None:
    """GPT-NeoX's parallel LayerNorms (``tests/evidence/parallel_norms_*``: one call in A, two in B), both stripped:
    every call of each is recognised, and that their numbers differ is no change of where calls come from (it read
    "metadata removed" with their two counts)."""
    a, b = EVIDENCE / "parallel_norms_a.onnx", EVIDENCE / "parallel_norms_b.onnx"
    first, second = (a, b) if order == "a b" else (b, a)
    (tmp_path / "s").mkdir()
    stripped = stripped_file(first, tmp_path), stripped_file(second, tmp_path / "s")
    assert _changes(*stripped) == _changes(first, second)
