"""``onnx-inspector summary MODEL [--json]``: model facts, families with overloads, aten targets."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from inspector import api
from inspector.commands import HelpFormatter
from inspector.core.util.jsonsafe import json_text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector summary", description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("model", help="an .onnx file or ONNX text syntax file")
    p.add_argument("--json", action="store_true", help="print the versioned JSON summary")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    model = api.open(args.model, modules=False, maps=True)  # (a summary specialises: it makes the maps at once)
    if args.json:
        data = model.summary()
        api.keep(data)
        sys.stdout.write(json_text(data))
    else:
        sys.stdout.write(model.summary_text())
    return 0
