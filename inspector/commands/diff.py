"""``onnx-inspector diff A B [--format text|md|json|html] [-o FILE]``: what changed between two exports.

Exit code 0 when the models are equal (names aside), 1 when they differ (also when one is only the other
folded: equivalent, but not equal), 2 on error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
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
    chunks = render_chunks(d, args.format)
    if args.output:
        write_atomic(Path(args.output), (c.encode("utf-8") for c in chunks), make_parents=True)
        sys.stdout.write(f"{verdict(d)}; wrote {args.output}\n")
    else:
        for chunk in chunks:
            sys.stdout.write(chunk)
    return 0 if d.equal else 1


def render_chunks(d: ModelDiff, fmt: str) -> Iterator[str]:
    """The diff in one of ``FORMATS``, in pieces: JSON is encoded as it is written, so that a diff of a large
    model is never held as one string (on 200k removed nodes that string and its bytes doubled the peak)."""
    if fmt != "json":
        yield render(d, fmt)
        return
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, allow_nan=False)
    buffered: list[str] = []
    size = 0
    for piece in encoder.iterencode(diff_dict(d)):
        buffered.append(piece)
        size += len(piece)
        if size > 1 << 16:
            yield "".join(buffered)
            buffered, size = [], 0
    yield "".join(buffered) + "\n"


def render(d: ModelDiff, fmt: str) -> str:
    """The diff in one of ``FORMATS``."""
    if fmt == "json":
        return "".join(render_chunks(d, fmt))
    if fmt == "md":
        return render_markdown(d)
    if fmt == "html":
        return render_html(d)
    return diff_text(d)
