"""``onnx-inspector summary MODEL [--json]``: model facts, families with overloads, aten targets."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from inspector.commands import keep
from inspector.core.model.index import open_index
from inspector.core.summary import summary_dict, summary_text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector summary", description=__doc__)
    p.add_argument("model", help="an .onnx file or ONNX text syntax file")
    p.add_argument("--json", action="store_true", help="print the versioned JSON summary")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    index = open_index(args.model, modules=False)
    data = summary_dict(index)
    keep(index, data)
    if args.json:
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary_text(data))
    return 0
