"""``onnx-inspector check MODEL [--reviews FILE] [--format text|json|github]``: reviews in CI.

Exit code 0 when every review item (overloads, specialised values) is reviewed OK by fingerprint or is not
review-worthy; 1 when any is unreviewed, suspicious, wrong, or changed since it was reviewed (listed, with the
old and the new value); 2 on bad input. ``--reviews`` reads another review file instead of the model's sidecar
(say, the reviews of the previous export). ``--format github`` prints GitHub Actions workflow annotations.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from inspector.commands import keep
from inspector.core.model.index import open_index
from inspector.core.review.check import check_model, load_reviews
from inspector.report.check_text import CHECK_FORMATS, render_check


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="an .onnx file or ONNX text syntax file")
    p.add_argument("--reviews", metavar="FILE", help="the review file to check against (default: MODEL.review.json)")
    p.add_argument("--format", choices=CHECK_FORMATS, default="text",
                   help="text (default), json (versioned object), github (workflow annotations)")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    model = Path(args.model)
    store = load_reviews(model, Path(args.reviews) if args.reviews else None)
    index = open_index(model)
    keep(index)
    result = check_model(index, store)
    sys.stdout.write(render_check(result, args.format))
    return 0 if result.passed else 1
