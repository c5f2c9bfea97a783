"""``check`` after a re-export that split a reviewed body: some calls moved to a new body of the same template (another
eps), the others stayed in the reviewed one. The new body's values are compared with the reviewed body's (``changed``
with the value reviewed), because the review recorded which bodies of its template the model had then (``siblings``);
a body that was beside the reviewed one then never takes its review. Before, the new body read ``unreviewed``: the
reviewed body was still in the model, so it counted as no earlier body. A sidecar is untrusted input: a ``siblings``
that is not a list of strings is ignored (the entry reads as one written without them), never a crash.

``tests/evidence/split_eps_{a,b}.onnx``: three LayerNorms of one width, exported by torch with eps 1e-5 on each (A),
then 1e-6 on two of them (B); ``split_eps.truth.json`` holds each LayerNorm's eps as torch had it.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from inspector.cli import main
from inspector.core.model.index import open_index
from inspector.core.review.check import CheckItem, check_model
from inspector.core.review.store import ReviewStore, review_keys, reviewed_value, template_siblings
from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, Specialiser
from inspector.core.util.paths import sidecar_path

EVIDENCE = Path(__file__).resolve().parent / "evidence"
TRUTH: dict[str, dict[str, float]] = json.loads((EVIDENCE / "split_eps.truth.json").read_text())
KEPT = {m for m, eps in TRUTH["b"].items() if eps == TRUTH["a"][m]}  # the LayerNorms whose eps B kept
MOVED = set(TRUTH["b"]) - KEPT


def test_the_truth_is_a_split():
    assert len(set(TRUTH["a"].values())) == 1 and KEPT and MOVED
    assert len({TRUTH["b"][m] for m in MOVED}) == 1


def _export(tmp_path: Path, name: str) -> Path:
    """``split_eps_{name}`` as ``tmp_path/norms.onnx``: B copied over A keeps A's sidecar (exported again)."""
    model = tmp_path / "norms.onnx"
    shutil.copyfile(EVIDENCE / f"split_eps_{name}.onnx", model)
    return model


def _layer_norm(model: Path) -> FamilyAnalysis:
    (analysis,) = [a for a in Specialiser(open_index(model)).analyse_all() if a.family.label == "aten::layer_norm"]
    return analysis


def _body(analysis: FamilyAnalysis, modules: set[str]) -> BodyAnalysis:
    """The body whose calls are exactly those of the LayerNorms ``modules`` (torch's module names)."""
    (body,) = [b for b in analysis.bodies if {getattr(c, "module_path", "") for c in b.members} == modules]
    return body


def _review(model: Path, status: str = "ok", siblings: bool = True, bodies: set[str] | None = None) -> None:
    """Review every layer_norm item of ``model`` (of the bodies with these fingerprints only, when given) through
    ``ReviewStore.set``, with the siblings the app records (none, as an older build wrote, when not ``siblings``)."""
    analysis = _layer_norm(model)
    store = ReviewStore(model)
    for key, obj in review_keys(analysis):
        if bodies is None or key.fingerprint in bodies:
            store.set(key, status, "looked at it", reviewed_value(obj),
                      template_siblings(analysis, key) if siblings else None)


def _items(model: Path, body: BodyAnalysis) -> dict[str, CheckItem]:
    """``check``'s items of ``body`` (found by its fingerprint), by slot ("" for the body)."""
    result = check_model(open_index(model), ReviewStore(model))
    return {i.key.slot: i for i in result.items if i.key.fingerprint == body.fingerprints.full}


def _epsilon_held(model: Path, body: BodyAnalysis) -> float:
    """The epsilon the model holds on the LayerNormalization nodes of ``body``'s calls (read with onnx)."""
    graph = onnx.load(str(model)).graph
    held = set()
    for call in body.members:
        for path in getattr(call, "node_paths", []):
            node = graph.node[path[0]]
            held |= {a.f for a in node.attribute if node.op_type == "LayerNormalization" and a.name == "epsilon"}
    (eps,) = held
    return eps


def _check_exit(model: Path) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return main(["check", str(model)])


def test_a_body_split_off_the_reviewed_one_is_changed_since_review(tmp_path: Path):
    model = _export(tmp_path, "a")
    reviewed = _layer_norm(model)
    assert len(reviewed.bodies) == 1
    _review(model)
    assert _check_exit(model) == 0
    _export(tmp_path, "b")
    split = _layer_norm(model)
    kept, moved = _body(split, KEPT), _body(split, MOVED)
    assert kept.fingerprints.full == reviewed.bodies[0].fingerprints.full  # the reviewed body is still there
    assert moved.fingerprints.template == kept.fingerprints.template
    assert {slot: (i.status, i.basis) for slot, i in _items(model, kept).items()} == {
        "": ("ok", "fingerprint"), "0|attribute|epsilon": ("ok", "fingerprint"),
        "0|attribute|axis": ("ok", "fingerprint")}
    items = _items(model, moved)
    eps = items["0|attribute|epsilon"]
    assert (eps.status, eps.basis, eps.review_status, eps.note) == ("changed", "earlier_body", "ok", "looked at it")
    (was,) = {TRUTH["a"][m] for m in MOVED}
    (now,) = {TRUTH["b"][m] for m in MOVED}
    assert np.float32(eps.reviewed_value) == np.float32(was) == np.float32(_epsilon_held(EVIDENCE / "split_eps_a.onnx",
                                                                                      reviewed.bodies[0]))
    assert np.float32(eps.value) == np.float32(now) == np.float32(_epsilon_held(model, moved))
    axis = items["0|attribute|axis"]  # normalized_shape did not change: reviewed ok on the same value
    assert (axis.status, axis.basis, axis.value, axis.reviewed_value) == ("ok", "same_value", -1, -1)
    body = items[""]
    assert (body.status, body.basis) == ("changed", "earlier_body")
    assert [(c.where, np.float32(c.old), np.float32(c.new)) for c in body.changes] == [
        ("LayerNormalization.epsilon", np.float32(was), np.float32(now))]
    assert _check_exit(model) == 1


def test_a_review_without_siblings_leaves_the_new_body_unreviewed_as_before(tmp_path: Path):
    model = _export(tmp_path, "a")
    _review(model, siblings=False)  # (a sidecar of an older build)
    entries = json.loads(sidecar_path(model).read_text("utf-8"))["reviews"]
    assert entries and all("siblings" not in e for e in entries.values())
    _export(tmp_path, "b")
    split = _layer_norm(model)
    assert {i.status for i in _items(model, _body(split, KEPT)).values()} == {"ok"}
    moved = _items(model, _body(split, MOVED))
    assert {slot: (i.status, i.basis) for slot, i in moved.items()} == dict.fromkeys(
        ("", "0|attribute|epsilon", "0|attribute|axis"), ("unreviewed", "none"))


def test_a_body_that_was_beside_the_reviewed_one_does_not_take_its_review(tmp_path: Path):
    model = _export(tmp_path, "b")
    split = _layer_norm(model)
    kept, moved = _body(split, KEPT), _body(split, MOVED)
    _review(model, bodies={kept.fingerprints.full})  # only one of the two bodies, both in the model
    entry = next(iter(json.loads(sidecar_path(model).read_text("utf-8"))["reviews"].values()))
    assert entry["siblings"] == sorted([kept.fingerprints.full, moved.fingerprints.full])
    assert {i.status for i in _items(model, kept).values()} == {"ok"}
    assert {slot: i.status for slot, i in _items(model, moved).items()} == dict.fromkeys(
        ("", "0|attribute|epsilon", "0|attribute|axis"), "unreviewed")


def test_updating_a_review_keeps_the_siblings_it_was_first_written_with(tmp_path: Path):
    model = _export(tmp_path, "a")
    _review(model)
    first = json.loads(sidecar_path(model).read_text("utf-8"))["reviews"]
    _export(tmp_path, "b")
    _review(model, "suspicious", bodies={_body(_layer_norm(model), KEPT).fingerprints.full})  # reviewed again in B
    again = json.loads(sidecar_path(model).read_text("utf-8"))["reviews"]
    assert set(again) == set(first)
    assert all(again[t]["status"] == "suspicious" and again[t]["siblings"] == first[t]["siblings"] for t in first)
    assert {len(e["siblings"]) for e in again.values()} == {1}  # A's one body: B's new body came after
    eps = _items(model, _body(_layer_norm(model), MOVED))["0|attribute|epsilon"]
    assert (eps.status, eps.review_status) == ("changed", "suspicious")


@pytest.mark.parametrize("bad", ["not a list", [1, 2], {"x": []}, [["nested"]], None, 7])
def test_a_damaged_siblings_member_is_ignored(tmp_path: Path, bad: object):
    model = _export(tmp_path, "a")
    _review(model)
    path = sidecar_path(model)
    doc = json.loads(path.read_text("utf-8"))
    for entry in doc["reviews"].values():
        entry["siblings"] = bad
    path.write_text(json.dumps(doc), "utf-8")
    store = ReviewStore(model)
    assert len(store) == 3 and all(r.siblings == () and r.status == "ok" for _k, r in store.items())
    _export(tmp_path, "b")
    split = _layer_norm(model)
    assert {i.status for i in _items(model, _body(split, KEPT)).values()} == {"ok"}
    assert {i.status for i in _items(model, _body(split, MOVED)).values()} == {"unreviewed"}  # as without siblings
    # a review set again records siblings in place of the damaged ones; any other entry keeps what it holds
    key, obj = next((k, o) for k, o in review_keys(split) if k.fingerprint == _body(split, KEPT).fingerprints.full)
    store.set(key, "ok", "", reviewed_value(obj), template_siblings(split, key))
    entries = json.loads(path.read_text("utf-8"))["reviews"]
    assert entries[key.to_text()]["siblings"] == sorted(b.fingerprints.full for b in split.bodies)
    assert all(e["siblings"] == bad for t, e in entries.items() if t != key.to_text())
