"""``onnx-inspector fold MODEL -o OUT [--domain D]``: make each aten call of a flat export a local function call."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from inspector import api
from inspector.core.fold.aten_fold import DEFAULT_DOMAIN


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector fold", description=__doc__)
    p.add_argument("model", help="a flat dynamo export (.onnx)")
    p.add_argument("-o", "--output", required=True, help="where to write the folded model")
    p.add_argument("--domain", default=DEFAULT_DOMAIN, help=f"domain of the aten functions (default {DEFAULT_DOMAIN})")
    p.add_argument("--check", action="store_true", help="run onnx.checker.check_model(full_check=True) on the result")
    p.add_argument("-v", "--verbose", action="store_true", help="list every group left flat")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    report = api.fold(args.model, args.output, domain=args.domain, check=args.check)
    out = sys.stdout
    out.write(f"folded {report.calls_folded} aten calls into {len(report.functions)} functions "
              f"({report.families} families) in domain {args.domain}\n")
    out.write(f"main graph: {report.nodes_before} -> {report.nodes_after} nodes\n")
    if report.left_flat:
        out.write(f"left flat: {len(report.left_flat)} calls\n")
        shown = report.left_flat if args.verbose else report.left_flat[:10]
        for name, target, reason in shown:
            out.write(f"  {name} ({target}): {reason}\n")
        if len(shown) < len(report.left_flat):
            out.write(f"  … {len(report.left_flat) - len(shown)} more (-v lists all)\n")
    out.write(f"wrote {args.output}\n")
    return 0
