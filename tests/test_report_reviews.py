"""A report shows each review item as ``check`` decides it (and as the app's Review list does): its own review, else
what a review of an earlier body carries over to it. A sibling body in the same model is no earlier version of
another: one of GPT-2's view bodies marked wrong made 7 items of its siblings read "reviewed wrong before the values
changed" in the report, where ``check`` and the app left them unreviewed."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from inspector.cli import main
from inspector.core.model.index import open_index
from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
from inspector.core.specialise.specialiser import Specialiser
from inspector.report import build_report
from inspector.report.html import render_html
from inspector.report.jsonreport import render_json
from inspector.report.markdown import render_markdown
from tests.conftest import FIXTURES, ZOO
from tests.test_report import _text, _validate


def _statuses_by_body(report: dict) -> dict[tuple[str, str], Counter]:
    """(family, body fingerprint) -> the statuses of its overload item and values, from the report's JSON."""
    out: dict[tuple[str, str], Counter] = {}
    for fam in report["families"]:
        for body in fam.get("bodies", []):
            found = Counter([body["review"]["status"]] if body.get("review") else [])
            found.update(s["review"]["status"] for s in body["specialised"] if s.get("review"))
            out[(fam["label"], body["fingerprint"])] = found
    return out


def _check_by_body(capsys, model: Path) -> dict[tuple[str, str], Counter]:
    """The same from ``check --format json`` (its not-review-worthy items are the report's unreviewed ones)."""
    main(["check", str(model), "--format", "json"])
    out: dict[tuple[str, str], Counter] = {}
    for item in json.loads(capsys.readouterr().out)["items"]:
        status = "unreviewed" if item["status"] == "not_review_worthy" else item["status"]
        out.setdefault((item["family"], item["fingerprint"]), Counter())[status] += 1
    return out


def _report_json(model: Path) -> dict:
    return _validate(render_json(build_report(open_index(model), ReviewStore(model), graphs=False)))


def test_a_sibling_bodys_review_is_not_shown_as_an_earlier_one(tmp_path, capsys):
    model = tmp_path / "gpt2.onnx"
    shutil.copyfile(ZOO / "gpt2.onnx", model)
    items = [(k, o) for a in Specialiser(open_index(model)).analyse_all() for k, o in review_keys(a)]
    key, obj = items[-1]  # a value of the last of GPT-2's view bodies
    assert key.family == "aten::view"
    ReviewStore(model).set(key, "wrong", "not what torch computes", reviewed_value(obj))
    data = _report_json(model)
    assert data["reviews"]["counts"] == {"unreviewed": len(items) - 1, "ok": 0, "suspicious": 0, "wrong": 1,
                                         "changed": 0}
    assert "previous" not in json.dumps(data["families"])
    assert _statuses_by_body(data) == _check_by_body(capsys, model)
    report = build_report(open_index(model), ReviewStore(model), graphs=False)
    for text in (_text(render_html(report)), render_markdown(report)):
        assert "earlier body" not in text and "before the values changed" not in text and "changed 0" not in text
        assert "carries over" not in text


def test_a_re_export_reads_as_check_decides(tmp_path, capsys):
    """dynamo_block reviewed at 2 heads, then exported again over itself at 4: the attention body and its 3 values
    that changed read ``changed`` with what they were; its perm, the same value, keeps the review ok."""
    model = tmp_path / "m.onnx"
    shutil.copyfile(FIXTURES / "dynamo_block.onnx", model)
    store = ReviewStore(model)
    for analysis in Specialiser(open_index(model)).analyse_all():
        for key, obj in review_keys(analysis):
            if key.family == "aten::scaled_dot_product_attention":
                store.set(key, "ok", "scale checked for 2 heads", reviewed_value(obj))
    shutil.copyfile(FIXTURES / "dynamo_block_h4.onnx", model)
    data = _report_json(model)
    assert data["reviews"]["counts"] == {"unreviewed": 13, "ok": 1, "suspicious": 0, "wrong": 0, "changed": 4}
    assert _statuses_by_body(data) == _check_by_body(capsys, model)
    sdpa = next(f for f in data["families"] if f["label"] == "aten::scaled_dot_product_attention")
    body = sdpa["bodies"][0]
    assert body["review"] == {"status": "changed", "note": "", "updated": "", "previous": {
        "status": "ok", "note": "scale checked for 2 heads", "basis": "earlier_body", "value": None}}
    values = {s["where"]: s["review"] for s in body["specialised"]}
    assert values["Transpose.perm"]["status"] == "ok"
    assert values["Transpose.perm"]["previous"]["basis"] == "same_value"
    assert values["constant val_49 (read by Mul)"] == {"status": "changed", "note": "", "updated": "", "previous": {
        "status": "ok", "note": "scale checked for 2 heads", "basis": "earlier_body", "value": [0.59460354]}}

    report = build_report(open_index(model), ReviewStore(model), graphs=False)
    html = render_html(report)
    text = _text(html)
    assert "<span class='badge changed'>changed</span> 4" in html
    assert "(was [0.59460354] when reviewed ok: scale checked for 2 heads)" in text
    assert "(kept from an earlier body, same value: scale checked for 2 heads)" in text
    assert "Changed since reviewed, marked wrong or suspicious" in text
    carried = json.dumps(data["families"]).count('"previous"')
    assert carried == 5  # (the 4 changed items, and the perm kept as the same value)
    said = f"{carried} items with no review of their own show what check carries over from an earlier body's"
    assert said in text
    md = render_markdown(report)
    assert said in md
    flagged = [line for line in md.splitlines() if line.startswith("| 🟣 changed |")]
    assert len(flagged) == 4 and "body changed since reviewed ok" in flagged[0]
