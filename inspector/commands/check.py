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

from inspector import api
from inspector.commands import RawDescriptionHelpFormatter
from inspector.report.check_text import CHECK_FORMATS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector check", description=__doc__,
                                formatter_class=RawDescriptionHelpFormatter)
    p.add_argument("model", help="an .onnx file or ONNX text syntax file")
    p.add_argument("--reviews", metavar="FILE", help="the review file to check against (default: MODEL.review.json)")
    p.add_argument("--format", choices=CHECK_FORMATS, default="text",
                   help="text (default), json (versioned object), github (workflow annotations)")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    result = api.check(args.model, reviews=args.reviews)
    sys.stdout.write(result.render(args.format))
    return 0 if result.passed else 1
