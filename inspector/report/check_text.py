"""A review check (``onnx-inspector check``) as text, GitHub workflow annotations or JSON. Model text goes through
``inspector.core.util.textsafe``: ``one_line`` for a terminal, ``github_data``/``github_property`` for annotations."""

from __future__ import annotations

from inspector.core.review.check import FAILING, CheckItem, CheckResult
from inspector.core.specialise.categories import value_text
from inspector.core.util.jsonsafe import json_text
from inspector.core.util.textsafe import github_data, github_property, one_line
from inspector.core.util.units import plural

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


# The annotation level of each failing status: a verdict a reviewer gave that now fails (wrong, or a reviewed item
# that changed) is an error, a doubt a warning, an item nobody looked at a notice. GitHub shows 10 annotations of each
# level per step (and 50 per job), in the order printed (actions/toolkit, docs/problem-matchers.md): one level for
# all of them showed the first 10 of GPT-NeoX's 48 and dropped the rest without a word.
GITHUB_LEVELS = {"changed": "error", "wrong": "error", "suspicious": "warning", "unreviewed": "notice"}
GITHUB_SHOWN = 10


def check_github(result: CheckResult) -> str:
    """A workflow annotation per failing item, worst first, at its status's level (``GITHUB_LEVELS``); where a level
    has more than GitHub shows a step, its last one says how many more there are. Then every failing item as a line of
    the log, in a group (what the annotations left out is read there), and the verdict."""
    file = github_property(result.model)
    by_level: dict[str, list[CheckItem]] = {}
    for item in result.failing:
        by_level.setdefault(GITHUB_LEVELS[item.status], []).append(item)
    lines: list[str] = []
    for level, items in by_level.items():
        shown = items if len(items) <= GITHUB_SHOWN else items[:GITHUB_SHOWN - 1]
        lines += [f"::{level} file={file},title={github_property(f'{LABELS[i.status]}: {one_line(i.key.family)}')}"
                  f"::{github_data(describe(i))}" for i in shown]
        if len(shown) < len(items):
            rest = items[len(shown):]
            counts = ", ".join(f"{n} {LABELS[s]}" for s in dict.fromkeys(i.status for i in rest)
                               if (n := sum(i.status == s for i in rest)))
            why = (f"{counts}: GitHub shows {GITHUB_SHOWN} {level} annotations a step; every failing item is listed in "
                   f"this step's log")
            lines.append(f"::{level} file={file},title={github_property(f'{len(rest)} more not annotated')}"
                         f"::{github_data(why)}")
    if result.failing:  # (a group: folded in the log, opened with a click)
        lines.append(f"::group::{github_data(plural(len(result.failing), 'failing review item'))}")
        lines += [github_data(f"{LABELS[i.status]}: {one_line(i.key.family)}: {describe(i)}") for i in result.failing]
        lines.append("::endgroup::")
    lines.append(github_data(check_verdict(result)))
    return "\n".join(lines) + "\n"
