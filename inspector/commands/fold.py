"""``onnx-inspector fold MODEL -o OUT [--domain D] [--modules PATTERNS [--hoist]]``: make each aten call of a flat
export a local function call, or with ``--modules`` each instance of the nn.Module classes named."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import onnx

from inspector.commands import keep
from inspector.core.fold.aten_fold import DEFAULT_DOMAIN, fold_model
from inspector.core.fold.modules import MODULE_DOMAIN, fold_modules
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.util.encoding import encoded
from inspector.core.util.errors import InspectorError
from inspector.core.util.fileio import write_atomic
from inspector.core.util.paths import check_output


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector fold", description=__doc__)
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
    if args.hoist and args.modules is None:
        raise InspectorError("--hoist needs --modules")
    index = open_index(args.model, modules=args.modules is not None)
    keep(index)
    check_output(args.output, index.protected_files(), "the folded model")
    if index.parameters().external_bytes and Path(args.output).resolve().parent != index.path.parent:
        raise InspectorError("the model keeps weights as external data; write the folded model into the same "
                             "folder so that their locations stay valid")
    if not index.provenance.calls:
        have = len(index.functions.functions)
        already = f"; it has {have} local functions already (a TorchScript export?)" if have else ""
        raise InspectorError(f"{args.model}: no aten calls to fold (no pkg.torch.onnx.fx_node metadata){already}")
    if args.modules is not None:
        return _fold_modules(index, args)
    try:
        folded, report = fold_model(index, args.domain or DEFAULT_DOMAIN, consume=True)  # index not used after
        keep(folded)
    except ValueError as e:
        raise InspectorError(str(e)) from None
    _write(folded, args)
    out = sys.stdout
    out.write(f"folded {report.calls_folded} aten calls into {len(report.functions)} functions "
              f"({report.families} families) in domain {args.domain or DEFAULT_DOMAIN}\n")
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


def _fold_modules(index: ModelIndex, args: argparse.Namespace) -> int:
    try:
        folded, report = fold_modules(index, args.modules, args.domain or MODULE_DOMAIN, hoist=args.hoist)
    except ValueError as e:
        raise InspectorError(str(e)) from None
    _write(folded, args)
    sys.stdout.writelines(f"{line}\n" for line in report.lines(args.verbose))
    sys.stdout.write(f"wrote {args.output}\n")
    return 0


def _write(folded: onnx.ModelProto, args: argparse.Namespace) -> None:
    if args.check:
        try:
            onnx.checker.check_model(folded, full_check=True)
        except Exception as e:
            reason = " ".join(str(e).split())[:300]
            raise InspectorError(f"the folded model does not pass the checker: {reason}") from None
    write_atomic(Path(args.output), encoded(folded), make_parents=True)  # in pieces: no 130 MB buffer at 100k
