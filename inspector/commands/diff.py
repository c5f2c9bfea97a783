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

from inspector import api
from inspector.commands import RawDescriptionHelpFormatter
from inspector.core.util.errors import InspectorError
from inspector.report.diff_render import DIFF_FORMATS, DIFF_SUFFIXES


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector diff", description=__doc__,
                                formatter_class=RawDescriptionHelpFormatter)
    p.add_argument("a", help="the old model (.onnx or ONNX text syntax), or a folder of them")
    p.add_argument("b", help="the new model, or a folder")
    p.add_argument("--format", choices=DIFF_FORMATS,
                   help="text, md (fits a GitHub comment), json (versioned), html (one page); default: from the "
                        "suffix of -o FILE, else text")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")
    jobs = p.add_argument("--jobs", type=int, metavar="N", help="folders: diff N pairs at once (default: at most "
                          "%(max_jobs)s, never more than the CPUs)")
    jobs.max_jobs = _MaxJobs()  # type: ignore[attr-defined]  # (argparse fills %(name)s from the action's attributes)
    return p


class _MaxJobs:
    """The folder diff's most workers, read from its module when the help is formatted: a diff of two files does not
    import the folder diff (its two dataclasses were 7 of the 390 million instructions of the command, callgrind)."""

    def __str__(self) -> str:
        from inspector.core.diff.folders import MAX_JOBS

        return str(MAX_JOBS)


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    fmt = args.format or (DIFF_SUFFIXES.get(Path(args.output).suffix.lower(), "text") if args.output else "text")
    if args.jobs is not None and args.jobs < 1:
        raise InspectorError("--jobs must be at least 1")
    result = api.diff(args.a, args.b, jobs=args.jobs)
    if args.output:
        result.save(args.output, fmt)
        sys.stdout.write(f"{result.verdict}; wrote {args.output}\n")
    elif isinstance(result, api.Diff):
        for chunk in result.chunks(fmt):
            sys.stdout.write(chunk)
    else:
        sys.stdout.write(result.render(fmt))
    return 0 if result.equal else 1
