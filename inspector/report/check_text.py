"""A review check (``onnx-inspector check``) as text, GitHub workflow annotations or JSON. Model text goes through
``inspector.core.util.textsafe``: ``one_line`` for a terminal, ``github_data``/``github_property`` for annotations."""

from __future__ import annotations

from inspector.core.review.check import FAILING, CheckItem, CheckResult
from inspector.core.specialise.categories import value_text
from inspector.core.util.jsonsafe import json_text
from inspector.core.util.textsafe import github_data, github_property, one_line

__all__ = ["CHECK_FORMATS", "LABELS", "check_github", "check_text", "check_verdict", "describe", "render_check"]

CHECK_FORMATS = ("text", "json", "github")
LABELS = {"changed": "changed since review", "wrong": "reviewed wrong", "suspicious": "reviewed suspicious",
          "unreviewed": "unreviewed", "ok": "ok", "not_review_worthy": "not review-worthy"}


def render_check(result: CheckResult, fmt: str) -> str:
    """The check as ``text``, ``json`` or ``github``."""
    if fmt == "json":
        return json_text(result.to_json())
    if fmt == "github":
        return check_github(result)
    if fmt == "text":
        return check_text(result)
    raise ValueError(f"unknown check format {fmt!r}; expected one of {', '.join(CHECK_FORMATS)}")


def check_verdict(result: CheckResult) -> str:
    """One line: passed or not, with the counts."""
    counts = result.counts()
    failing = [f"{n} {LABELS[s]}" for s, n in counts.items() if n and s in FAILING]
    passing = f"{counts['ok']} ok, {counts['not_review_worthy']} not review-worthy"
    if failing:
        return f"check failed: {one_line(result.model)}: {', '.join(failing)}; {passing}"
    return f"check passed: {one_line(result.model)}: {passing}"


def describe(item: CheckItem) -> str:
    """What an item is and why it fails, on one line (model text made printable)."""
    if item.key.kind == "value":
        text = f"{one_line(item.where)} = {one_line(value_text(item.value))}"
        if item.status == "changed":
            was = one_line(value_text(item.reviewed_value)) if item.reviewed_value is not None else "(not recorded)"
            text += f", was {was} when reviewed {item.review_status}"
    else:
        text = "body"
        if item.status == "changed":
            text += f" changed since reviewed {item.review_status}"
            if item.changes:
                text += ": " + "; ".join(f"{one_line(c.where)} {one_line(value_text(c.old))} -> "
                                         f"{one_line(value_text(c.new))}" for c in item.changes)
    if item.note:
        text += f" (note: {one_line(item.note, 120)})"
    return text + (f" [{one_line(item.owner)}]" if item.owner else "")


def check_text(result: CheckResult) -> str:
    lines = [check_verdict(result), f"reviews: {one_line(result.reviews)}"]
    for item in result.failing:
        lines.append(f"  {LABELS[item.status]}: {one_line(item.key.family)}: {describe(item)}")
    return "\n".join(lines) + "\n"


def check_github(result: CheckResult) -> str:
    """One ``::error`` workflow command per failing item, then the verdict as a plain line."""
    file = github_property(result.model)
    lines = [f"::error file={file},title={github_property(f'{LABELS[i.status]}: {one_line(i.key.family)}')}"
             f"::{github_data(describe(i))}" for i in result.failing]
    lines.append(github_data(check_verdict(result)))
    return "\n".join(lines) + "\n"
