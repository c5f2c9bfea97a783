"""``onnx-inspector diff A B [--format text|md|json|html] [-o FILE]``: what changed between two exports.

Exit code 0 when the models are equal (names aside), 1 when they differ (also when one is only the other
folded: equivalent, but not equal), 2 on error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from inspector.core.diff import diff_files
from inspector.core.fileio import check_output, write_atomic
from inspector.report.diff_render import DIFF_FORMATS, diff_chunks
from inspector.report.diff_text import verdict


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector diff", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="the old model (.onnx or ONNX text syntax)")
    p.add_argument("b", help="the new model")
    p.add_argument("--format", choices=DIFF_FORMATS, default="text",
                   help="text (default), md (fits a GitHub comment), json (versioned), html (one page)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    if args.output:
        check_output(args.output, (args.a, args.b), "the diff")
    d = diff_files(args.a, args.b)
    chunks = diff_chunks(d, args.format)
    if args.output:
        write_atomic(Path(args.output), (c.encode("utf-8") for c in chunks), make_parents=True)
        sys.stdout.write(f"{verdict(d)}; wrote {args.output}\n")
    else:
        for chunk in chunks:
            sys.stdout.write(chunk)
    return 0 if d.equal else 1
