"""``onnx-inspector report MODEL [--compare OTHER] [--format html|md|json|pdf] -o FILE``: an annotated report.

The report shows model facts, families with their overloads, each distinct body with its aten signature and
highlighted specialised values, reviews from the model's sidecar (read only, never written), findings, and with
``--compare`` the changes against another model. ``--format`` defaults to the output file's suffix (.html, .md,
.json, .pdf), else html. ``-o -`` writes text formats to stdout. Files are written atomically.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspector.commands import keep, kept
from inspector.core.diff import ModelDiff, diff_models
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.util.errors import InspectorError
from inspector.core.util.fileio import check_output, write_atomic
from inspector.report.render import FORMATS, SUFFIXES, render_text

__all__ = ["FORMATS", "SUFFIXES", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="an .onnx file or ONNX text syntax file")
    p.add_argument("--compare", metavar="OTHER", help="another model to diff against (e.g. the previous export)")
    p.add_argument("--format", choices=FORMATS, help="html (default), md (fits a GitHub comment), json, pdf")
    p.add_argument("-o", "--output", required=True, help="the report file ('-' for stdout, text formats only)")
    p.add_argument("--no-graphs", action="store_true", help="leave out the body graphs (faster)")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    fmt = args.format or SUFFIXES.get(Path(args.output).suffix.lower(), "html")
    to_stdout = args.output == "-"
    if to_stdout and fmt == "pdf":
        raise InspectorError("a PDF report needs an output file (-o FILE)")
    html_to_pdf = _pdf_writer() if fmt == "pdf" else None  # fail before the work when PDF cannot be written
    index = open_index(args.model)
    keep(index)
    output = None if to_stdout else Path(args.output)
    if output is not None:
        check_output(output, [index.path, *([args.compare] if args.compare else [])], "the report")
    compare = _compare(index, args.compare) if args.compare else None
    store = _reviews(index)

    from inspector.report.build import build_report

    report = build_report(index, store, compare, graphs=not args.no_graphs and fmt in ("html", "pdf"))
    text = render_text(report, fmt)
    keep(report, compare)
    if output is None:
        sys.stdout.write(text)
        return 0
    if html_to_pdf is not None:
        html_to_pdf(text, output)
    else:
        write_atomic(output, text.encode("utf-8"))
    sys.stderr.write(f"wrote {output} ({fmt}, {output.stat().st_size:,} bytes)\n")
    return 0


def _pdf_writer() -> Any:
    try:
        from inspector.gui.pdf import html_to_pdf
    except ImportError as e:
        raise InspectorError(f"PDF reports need the desktop extra (PySide6): {e.name or e}; "
                             "use --format html and print it from a browser") from None
    return html_to_pdf


def _reviews(index: ModelIndex) -> Any:
    """The model's review store when its sidecar exists and reads; a warning (and no reviews) otherwise."""
    from inspector.core.review.store import ReviewStore, sidecar_path

    if not os.path.lexists(sidecar_path(index.path)):
        return None  # no reviews yet; anything else by that name (a FIFO, a folder) is warned about below
    store = ReviewStore(index.path)
    try:
        store.load()  # reads only; the report never writes the sidecar
    except InspectorError as e:
        sys.stderr.write(f"onnx-inspector: warning: {e}; the report has no reviews\n")
        return None
    return store


def _compare(index: ModelIndex, other: str) -> ModelDiff:
    """The diff of ``index`` against ``other``."""
    other_index = open_index(other)
    keep(other_index)
    return diff_models(index, other_index, keep=kept())
