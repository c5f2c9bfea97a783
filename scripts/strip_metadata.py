"""Strip the torch exporter's node metadata (``pkg.torch.onnx.*`` metadata_props: fx_node, name_scopes,
class_hierarchy, stack_trace, ...) from ONNX files, as size-conscious pipelines and other tools do, so that
recognition by body template can be measured against the original metadata as truth.

Usage::

    .venv/bin/python scripts/strip_metadata.py IN.onnx OUT.onnx
    .venv/bin/python scripts/strip_metadata.py --zoo OUT_DIR     # every dynamo export of tests/zoo

Nodes everywhere are stripped: the main graph, function bodies and If/Loop/Scan bodies at any depth. Other
metadata (``namespace``, the optimizer's rule names) is kept: the brief of the measurement is the exporter's own keys.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parents[1]
PREFIX = "pkg.torch.onnx."


def _graphs(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    out: list[onnx.GraphProto] = []
    stack: list[onnx.GraphProto] = [model.graph]
    while stack:
        g = stack.pop()
        out.append(g)
        for node in g.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack.append(a.g)
                stack.extend(a.graphs)
    return out


def strip(model: onnx.ModelProto) -> int:
    """Remove ``pkg.torch.onnx.*`` entries from every node's metadata_props; the number of entries removed."""
    removed = 0
    nodes = [n for g in _graphs(model) for n in g.node] + [n for f in model.functions for n in f.node]
    for node in nodes:
        keep = [(p.key, p.value) for p in node.metadata_props if not p.key.startswith(PREFIX)]
        removed += len(node.metadata_props) - len(keep)
        if len(keep) != len(node.metadata_props):
            del node.metadata_props[:]
            for k, v in keep:
                node.metadata_props.add(key=k, value=v)
    return removed


def zoo_dynamo(folder: Path | None = None) -> list[Path]:
    """The zoo's exports that carry fx metadata (the dynamo ones), or those of ``folder``."""
    out = []
    for path in sorted((folder or REPO / "tests" / "zoo").glob("*.onnx")):
        model = onnx.load(str(path), load_external_data=False)
        if any(p.key == PREFIX + "fx_node" for n in model.graph.node for p in n.metadata_props):
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--zoo", type=Path, default=None, help="strip every dynamo export of the zoo into this folder")
    args = parser.parse_args(argv)
    pairs: list[tuple[Path, Path]] = []
    if args.zoo is not None:
        args.zoo.mkdir(parents=True, exist_ok=True)
        pairs = [(p, args.zoo / p.name) for p in zoo_dynamo()]
    elif len(args.paths) == 2:
        pairs = [(args.paths[0], args.paths[1])]
    else:
        parser.error("give IN.onnx OUT.onnx, or --zoo OUT_DIR")
    for src, dst in pairs:
        model = onnx.load(str(src), load_external_data=False)
        n = strip(model)
        onnx.save(model, str(dst))
        print(f"{src.name}: {n} entries stripped -> {dst}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
