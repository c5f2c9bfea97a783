"""A report with a diff says, beside each change, what the report model's reviews said of the body it is in, as the
compare window's change details do: the report handed to a model's owner listed the changed epsilon of a re-export
without the review that had marked it ok in A, and why.

Truth: the pair differs in LayerNorm's ``eps`` alone (1e-5 in A, 1e-6 in B: the zoo's truth files, from torch); the
reviews are made here through the store, as the app makes them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from inspector.cli import main
from inspector.core.model.index import open_index
from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
from inspector.core.specialise.categories import short_where
from inspector.core.specialise.specialiser import SpecialisedValue, Specialiser
from tests.conftest import ZOO
from tests.test_report import _text, _validate

NOTE = "eps <b>1e-5</b> | as configured"  # (a note with markup and a table's cell separator: user text)


def _truth(name: str) -> dict:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """A copy of pair_eps_a with its layer_norm body marked suspicious and its epsilon ok, with a note; and the
    epsilon as A holds it."""
    assert _truth("pair_eps_a")["pair"] == {"hyperparameter": "eps", "value": 1e-05, "other": "pair_eps_b",
                                            "other_value": 1e-06}
    model = tmp_path_factory.mktemp("reviewed") / "pair_eps_a.onnx"
    shutil.copy(ZOO / "pair_eps_a.onnx", model)
    store = ReviewStore(model)
    items = [(k, o) for a in Specialiser(open_index(model)).analyse_all() for k, o in review_keys(a)
             if k.family == "aten::layer_norm"]
    (key, eps), = [(k, o) for k, o in items if isinstance(o, SpecialisedValue) and short_where(o).endswith("epsilon")]
    store.set(key, "ok", NOTE, reviewed_value(eps))
    body_key, body = next((k, o) for k, o in items if k.kind == "overload")
    store.set(body_key, "suspicious", "", reviewed_value(body))
    assert eps.literal.value == pytest.approx(1e-05)
    return model, eps.literal.value


def _report(model: Path, suffix: str, tmp_path: Path, other: Path = ZOO / "pair_eps_b.onnx") -> str:
    out = tmp_path / f"report{suffix}"
    assert main(["report", str(model), "--compare", str(other), "-o", str(out), "--no-graphs"]) == 0
    return out.read_text(encoding="utf-8")


def test_the_json_report_lists_the_reviews_of_the_changed_body(reviewed: tuple[Path, float], tmp_path: Path):
    model, eps = reviewed
    data = _validate(_report(model, ".json", tmp_path))
    changes = data["diff"]["changes"]
    said = [c for c in changes if "reviews" in c]
    assert [c["family"] for c in said] == ["aten::layer_norm"]
    assert said[0]["kind"] == "value_changed"
    assert [(r["what"], r["status"], r["note"]) for r in said[0]["reviews"]] == [
        ("body", "suspicious", ""), (f"LayerNormalization.epsilon = {eps:g}", "ok", NOTE)]
    assert all(r["updated"] for r in said[0]["reviews"])


def test_the_html_report_shows_them_under_the_change_escaped(reviewed: tuple[Path, float], tmp_path: Path):
    model, eps = reviewed
    page = _report(model, ".html", tmp_path)
    text = _text(page)
    assert "Reviewed in A (the body this change is in)" in text
    assert f"LayerNormalization.epsilon = {eps:g}: OK — {NOTE}" in text
    assert "body: suspicious" in text
    assert "<b>1e-5</b>" not in page and "&lt;b&gt;1e-5&lt;/b&gt;" in page
    assert text.count("Reviewed in A") == 1  # (the one change of a reviewed body)


def test_the_markdown_report_says_them_in_the_changes_cell(reviewed: tuple[Path, float], tmp_path: Path):
    from tests.gfm import gfm, shown

    model, eps = reviewed
    md = _report(model, ".md", tmp_path)
    rows = re.findall(r"<tr>(.*?)</tr>", gfm(md), flags=re.S)
    (row,) = [r for r in rows if "reviewed in A" in r]
    cells = re.findall(r"<td>(.*?)</td>", row, flags=re.S)
    assert len(cells) == 3 and shown(cells[0]).strip() == "value changed"  # (the table's three columns kept)
    cell = cells[1]
    seen = " ".join(shown(cell).split())
    assert f"reviewed in A: LayerNormalization.epsilon = {eps:g}: ok — {NOTE}" in seen
    assert "reviewed in A: body: suspicious" in seen
    assert "<b>1e-5</b>" not in cell  # (inert: the note's markup is text)


def test_a_report_without_reviews_or_of_an_unreviewed_model_says_none(tmp_path: Path):
    page = _report(ZOO / "pair_eps_a.onnx", ".html", tmp_path)
    assert "Reviewed in A" not in _text(page)
    data = _validate(_report(ZOO / "pair_eps_a.onnx", ".json", tmp_path))
    assert not any("reviews" in c for c in data["diff"]["changes"])


def test_a_changed_initializer_is_said_of_the_body_of_its_first_reader(tmp_path: Path):
    """Llama's rotary cos table changed in a copy: the report says what A's reviews said of the call that reads it,
    as the compare window does."""
    from tests.builders import reviewed_cos_table

    model, other = reviewed_cos_table(tmp_path, "the cos table is baked in")
    data = _validate(_report(model, ".json", tmp_path, other))
    (said,) = [c for c in data["diff"]["changes"] if "reviews" in c]
    assert said["section"] == "initializer"
    assert [(r["what"], r["status"], r["note"]) for r in said["reviews"]] == [
        ("body", "suspicious", "the cos table is baked in")]
    text = _text(_report(model, ".html", tmp_path, other))
    assert "Reviewed in A (the body of the first call that reads it)" in text
