"""``onnx-inspector diff A B [--format text|md|json|html] [-o FILE]``: what changed between two exports.

Exit code 0 when the models are equal (names aside), 1 when they differ (also when one is only the other
folded: equivalent, but not equal), 2 on error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from inspector.core.diff import ModelDiff, diff_dict, diff_files
from inspector.core.fileio import check_output, write_atomic
from inspector.report.diff_html import render_html
from inspector.report.diff_markdown import render_markdown
from inspector.report.diff_text import diff_text, verdict

FORMATS = ("text", "md", "json", "html")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector diff", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="the old model (.onnx or ONNX text syntax)")
    p.add_argument("b", help="the new model")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (default), md (fits a GitHub comment), json (versioned), html (one page)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    if args.output:
        check_output(args.output, (args.a, args.b), "the diff")
    d = diff_files(args.a, args.b)
    text = render(d, args.format)
    if args.output:
        write_atomic(Path(args.output), text.encode("utf-8"), make_parents=True)
        sys.stdout.write(f"{verdict(d)}; wrote {args.output}\n")
    else:
        sys.stdout.write(text)
    return 0 if d.equal else 1


def render(d: ModelDiff, fmt: str) -> str:
    """The diff in one of ``FORMATS``."""
    if fmt == "json":
        return json.dumps(diff_dict(d), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt == "md":
        return render_markdown(d)
    if fmt == "html":
        return render_html(d)
    return diff_text(d)
