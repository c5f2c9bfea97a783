"""``onnx-inspector report MODEL [--compare OTHER] [--format html|md|json|pdf] -o FILE``: an annotated report.

The report shows model facts, families with their overloads, each distinct body with its aten signature and
highlighted specialised values, reviews from the model's sidecar (read only, never written), findings, and with
``--compare`` the changes against another model. ``--format`` defaults to the output file's suffix (.html, .md,
.json, .pdf), else html. ``-o -`` writes text formats to stdout. Files are written atomically. PDF is printed by
Qt (``inspector.pdf``; the desktop app is never imported).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from inspector import api
from inspector.commands import RawDescriptionHelpFormatter
from inspector.core.util.errors import InspectorError
from inspector.report.render import FORMATS, SUFFIXES

__all__ = ["FORMATS", "SUFFIXES", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector report", description=__doc__,
                                formatter_class=RawDescriptionHelpFormatter)
    p.add_argument("model", help="an .onnx file or ONNX text syntax file")
    p.add_argument("--compare", metavar="OTHER", help="another model to diff against (e.g. the previous export)")
    p.add_argument("--format", choices=FORMATS, help="html (default), md (fits a GitHub comment), json, pdf")
    p.add_argument("-o", "--output", required=True, help="the report file ('-' for stdout, text formats only)")
    p.add_argument("--no-graphs", action="store_true", help="leave out the body graphs (faster)")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    fmt = args.format or SUFFIXES.get(Path(args.output).suffix.lower(), "html")
    output = None if args.output == "-" else Path(args.output)
    if output is None and fmt == "pdf":
        raise InspectorError("a PDF report needs an output file (-o FILE)")
    report = api.report(args.model, fmt, compare=args.compare, graphs=not args.no_graphs, on_warning=_warn)
    if output is None:
        sys.stdout.write(report.text)
        return 0
    report.save(output, make_parents=False)
    sys.stderr.write(f"wrote {output} ({fmt}, {output.stat().st_size:,} bytes)\n")
    return 0


def _warn(message: str) -> None:
    sys.stderr.write(f"onnx-inspector: warning: {message}\n")
