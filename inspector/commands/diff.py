"""``onnx-inspector diff A B [--format text|md|json|html] [-o FILE]``: what changed between two exports.

Exit code 0 when the models are equal (names aside), 1 when they differ (also when one is only the other
folded: equivalent, but not equal), 2 on error.

With two folders, the exports under them are paired by relative path and diffed (in parallel processes), and
one table says which are equal, equivalent, different, only in A or only in B; exit code 0 only when every
path is in both and equal. A pair that cannot be read is a row with its error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from inspector.commands import kept
from inspector.core.diff import diff_files
from inspector.core.diff.folders import MAX_JOBS, diff_dirs, is_dir_pair, protected_files
from inspector.core.util.errors import InspectorError
from inspector.core.util.fileio import write_atomic
from inspector.core.util.paths import check_output, model_files
from inspector.report.diff_render import DIFF_FORMATS, DIFF_SUFFIXES, diff_chunks
from inspector.report.diff_text import verdict
from inspector.report.dir_diff import dir_diff_verdict, render_dir_diff


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector diff", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="the old model (.onnx or ONNX text syntax), or a folder of them")
    p.add_argument("b", help="the new model, or a folder")
    p.add_argument("--format", choices=DIFF_FORMATS,
                   help="text, md (fits a GitHub comment), json (versioned), html (one page); default: from the "
                        "suffix of -o FILE, else text")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")
    p.add_argument("--jobs", type=int, metavar="N", help=f"folders: diff N pairs at once (default: at most "
                   f"{MAX_JOBS}, never more than the CPUs)")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    folders = is_dir_pair(args.a, args.b)
    if args.output:
        inputs = protected_files(args.a, args.b) if folders else [*model_files(args.a), *model_files(args.b)]
        check_output(args.output, inputs, "the diff")
    fmt = args.format or (DIFF_SUFFIXES.get(Path(args.output).suffix.lower(), "text") if args.output else "text")
    if args.jobs is not None and args.jobs < 1:
        raise InspectorError("--jobs must be at least 1")
    if folders:
        dd = diff_dirs(args.a, args.b, jobs=args.jobs)
        _write(render_dir_diff(dd, fmt), args.output, dir_diff_verdict(dd))
        return 0 if dd.equal else 1
    d = diff_files(args.a, args.b, keep=kept())
    chunks = diff_chunks(d, fmt)
    if args.output:
        check_output(args.output, d.protected, "the diff")  # now with both models' external data
        write_atomic(Path(args.output), (c.encode("utf-8") for c in chunks), make_parents=True)
        sys.stdout.write(f"{verdict(d)}; wrote {args.output}\n")
    else:
        for chunk in chunks:
            sys.stdout.write(chunk)
    return 0 if d.equal else 1


def _write(text: str, output: str | None, verdict_line: str) -> None:
    if output:
        write_atomic(Path(output), text.encode("utf-8"), make_parents=True)
        sys.stdout.write(f"{verdict_line}; wrote {output}\n")
    else:
        sys.stdout.write(text)
