"""``onnx-inspector fold MODEL -o OUT [--domain D] [--modules PATTERNS [--hoist]]``: make each aten call of a flat
export a local function call, or with ``--modules`` each instance of the nn.Module classes named."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from inspector import api
from inspector.commands import HelpFormatter
from inspector.core.fold.aten_fold import DEFAULT_DOMAIN, FoldReport
from inspector.core.fold.modules import MODULE_DOMAIN
from inspector.core.util.units import plural


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector fold", description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("model", help="a flat dynamo export (.onnx)")
    p.add_argument("-o", "--output", required=True, help="where to write the folded model")
    p.add_argument("--domain", help=f"domain of the functions (default {DEFAULT_DOMAIN}, with --modules "
                   f"{MODULE_DOMAIN})")
    p.add_argument("--modules", metavar="PATTERN[,PATTERN...]",
                   help="fold these nn.Module instances instead of aten calls: fnmatch patterns over the class "
                        "(LlamaDecoderLayer, '*Attention') or the module path ('model.layers.*')")
    p.add_argument("--hoist", action="store_true",
                   help="with --modules: literals that differ between instances of a class become attributes of "
                        "its one function, passed at each call site")
    p.add_argument("--check", action="store_true", help="run onnx.checker.check_model(full_check=True) on the result")
    p.add_argument("-v", "--verbose", action="store_true", help="list every group left flat")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    report = api.fold(args.model, args.output, domain=args.domain, check=args.check, modules=args.modules,
                      hoist=args.hoist)
    out = sys.stdout
    if not isinstance(report, FoldReport):
        out.writelines(f"{line}\n" for line in report.lines(args.verbose))
        out.write(f"wrote {args.output}\n")
        return 0
    out.write(f"folded {plural(report.calls_folded, 'aten call')} into {plural(len(report.functions), 'function')} "
              f"({plural(report.families, 'family', 'families')}) in domain {args.domain or DEFAULT_DOMAIN}\n")
    out.write(f"main graph: {report.nodes_before} -> {report.nodes_after} nodes\n")
    if report.left_flat:
        out.write(f"left flat: {plural(len(report.left_flat), 'call')}\n")
        shown = report.left_flat if args.verbose else report.left_flat[:10]
        for name, target, reason in shown:
            out.write(f"  {name} ({target}): {reason}\n")
        if len(shown) < len(report.left_flat):
            out.write(f"  … {len(report.left_flat) - len(shown)} more (-v lists all)\n")
    out.write(f"wrote {args.output}\n")
    return 0
