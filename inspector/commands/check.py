"""``onnx-inspector check MODEL [--reviews FILE] [--format text|json|github]``: reviews in CI.

Exit code 0 when every review item (overloads, specialised values) is reviewed OK by fingerprint or is not
review-worthy; 1 when any is unreviewed, suspicious, wrong, or changed since it was reviewed (listed, with the
old and the new value); 2 on bad input. ``--reviews`` reads another review file instead of the model's sidecar
(say, the reviews of the previous export). ``--format github`` prints GitHub Actions workflow annotations.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from inspector.core.categories import value_text
from inspector.core.check import CheckItem, CheckResult, check_model, load_reviews
from inspector.core.index import open_index
from inspector.core.textsafe import github_data, github_property, one_line

FORMATS = ("text", "json", "github")
LABELS = {"changed": "changed since review", "wrong": "reviewed wrong", "suspicious": "reviewed suspicious",
          "unreviewed": "unreviewed", "ok": "ok", "not_review_worthy": "not review-worthy"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="an .onnx file or ONNX text syntax file")
    p.add_argument("--reviews", metavar="FILE", help="the review file to check against (default: MODEL.review.json)")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (default), json (versioned object), github (workflow annotations)")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    model = Path(args.model)
    store = load_reviews(model, Path(args.reviews) if args.reviews else None)
    result = check_model(open_index(model), store)
    if args.format == "json":
        json.dump(result.to_json(), sys.stdout, indent=2, ensure_ascii=False, allow_nan=False)
        sys.stdout.write("\n")
    elif args.format == "github":
        sys.stdout.write(github_text(result))
    else:
        sys.stdout.write(check_text(result))
    return 0 if result.passed else 1


def verdict(result: CheckResult) -> str:
    """One line: passed or not, with the counts."""
    counts = result.counts()
    failing = [f"{n} {LABELS[s]}" for s, n in counts.items() if n and s in ("changed", "wrong", "suspicious",
                                                                           "unreviewed")]
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
    lines = [verdict(result), f"reviews: {one_line(result.reviews)}"]
    for item in result.failing:
        lines.append(f"  {LABELS[item.status]}: {one_line(item.key.family)}: {describe(item)}")
    return "\n".join(lines) + "\n"


def github_text(result: CheckResult) -> str:
    """One ``::error`` workflow command per failing item, then the verdict as a plain line."""
    file = github_property(result.model)
    lines = [f"::error file={file},title={github_property(f'{LABELS[i.status]}: {one_line(i.key.family)}')}"
             f"::{github_data(describe(i))}" for i in result.failing]
    lines.append(github_data(verdict(result)))
    return "\n".join(lines) + "\n"
