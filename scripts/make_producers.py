"""Write test models in other producers' conventions for aten functions, from zoo exports (no torch needed).

The seed's representation (aten ops as model-local functions with overloads) is written by more than one tool,
each naming things its own way. ``fold`` writes ``pkg.torch.aten.view`` with the aten schema as doc string and the
aten arguments as call attributes. This script rewrites ``fold``'s output of a zoo export (with the onnx package
only) into three other conventions, so that tests can check that each reads as one family per aten op, with
signatures and links:

- ``NAME.torch_aten.onnx``: functions ``aten_<op>`` in ``pkg.torch.aten``, overloads ``<overload>_<hash>`` (a
  hash of the body), doc strings that are qualified names (``aten.view.default``), the FX node metadata on every
  call node and no attributes: the signature comes from the metadata alone. The functions type the values made
  inside them (``FunctionProto.value_info``), with the flat export's shapes.
- ``NAME.attributes.onnx``: functions ``<op>`` in domain ``aten`` with ``aten::view.default`` doc strings and hash
  overloads; call nodes without any metadata: the signature comes from the call's attributes alone.
- ``NAME.nested.onnx``: ``torch_aten``, with the calls of each top-level module instance moved into a function
  ``pkg.torch.module.Block`` (one overload per instance) that calls the aten functions: functions calling
  functions, with the metadata on the inner call nodes.

Usage: ``python scripts/make_producers.py [NAME ...]`` (default: the models in ``MODELS``); writes into
``tests/producers``. Every model written is checked with ``onnx.checker.check_model(full_check=True)``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import onnx
from onnx import helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inspector.core.fold.aten_fold import fold_model  # noqa: E402
from inspector.core.model.calls import NAME_SCOPES, split_target  # noqa: E402
from inspector.core.model.index import open_index  # noqa: E402
from inspector.core.model.keys import FunctionKey  # noqa: E402

MODELS = ("pair_transpose_a", "pair_heads_a", "convnet")
OUT = ROOT / "tests" / "producers"
MODULE_DOMAIN = "pkg.torch.module"


def folded(name: str) -> onnx.ModelProto:
    model, _report = fold_model(open_index(ROOT / "tests" / "zoo" / f"{name}.onnx"))
    return model


def _target(f: onnx.FunctionProto) -> str:
    return f.doc_string.partition("(")[0].strip()


def _digest(f: onnx.FunctionProto) -> str:
    body = onnx.FunctionProto()
    body.CopyFrom(f)
    body.overload = ""
    return hashlib.sha256(body.SerializeToString(deterministic=True)).hexdigest()[:8]


def rename(model: onnx.ModelProto, domain: str, style: str, typed: list[onnx.ValueInfoProto]
           ) -> dict[FunctionKey, FunctionKey]:
    """Functions renamed in another producer's style (``torch_aten`` or ``attributes``), calls renamed with them;
    ``torch_aten`` functions type the values made inside them (``typed``: the flat export's value infos)."""
    renamed: dict[FunctionKey, FunctionKey] = {}
    for f in model.functions:
        old = FunctionKey(f.domain, f.name, f.overload)
        ns, op, overload = split_target(_target(f))
        f.overload = f"{overload}_{_digest(f)}"
        if style == "torch_aten":
            f.name, f.doc_string = f"aten_{op}", f"{ns}.{op}.{overload}"
            del f.attribute[:]
            del f.attribute_proto[:]
            made = {o for n in f.node for o in n.output} - set(f.output)
            f.value_info.extend(v for v in typed if v.name in made)  # as IR 10 functions may type their values
        else:
            f.name, f.doc_string = op, f"{ns}::{op}.{overload}"
        f.domain = domain
        renamed[old] = FunctionKey(f.domain, f.name, f.overload)
    if not any(o.domain == domain for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(domain, 1))
    for node in model.graph.node:
        new = renamed.get(FunctionKey(node.domain, node.op_type, node.overload))
        if new is None:
            continue
        node.domain, node.op_type, node.overload = new
        if style == "torch_aten":
            del node.attribute[:]
        else:
            del node.metadata_props[:]
    old_domains = {k.domain for k in renamed} - {domain}
    keep = [o for o in model.opset_import if o.domain not in old_domains]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    return renamed


def nest(model: onnx.ModelProto) -> None:
    """The call nodes of each top-level module instance (``name_scopes`` entry 1) moved into one function, an
    overload per instance, called where the instance's last node was; the instance's outputs read outside it are
    the function's outputs."""
    g = model.graph
    by_instance: dict[str, list[int]] = {}
    for i, node in enumerate(g.node):
        scopes = next((p.value for p in node.metadata_props if p.key == NAME_SCOPES), "")
        parts = [s.strip(" '") for s in scopes.strip("[]").split(",")]
        if len(parts) > 2 and parts[1] and node.domain == "pkg.torch.aten":
            by_instance.setdefault(parts[1], []).append(i)
    opsets = [o for o in model.opset_import if o.domain != MODULE_DOMAIN]
    moved: dict[int, onnx.NodeProto] = {}
    for k, (instance, indices) in enumerate(sorted(by_instance.items())):
        if len(indices) < 2:
            continue
        inside = [g.node[i] for i in indices]
        made = {o for n in inside for o in n.output}
        reads = list(dict.fromkeys(x for n in inside for x in n.input if x and x not in made))
        chosen = set(indices)
        used_after = {x for j, n in enumerate(g.node) if j not in chosen for x in n.input}
        used_after |= {o.name for o in g.output}
        outs = [o for n in inside for o in n.output if o in used_after]
        between = [g.node[j] for j in range(indices[0], indices[-1]) if j not in chosen]
        if any(x in made for n in between for x in n.input):
            continue  # the instance's nodes interleave with a reader of its outputs: left as it is
        f = helper.make_function(MODULE_DOMAIN, "Block", reads, outs,
                                 [_copy(n) for n in inside], opsets)
        f.overload = f"i{k}"
        model.functions.append(f)
        call = helper.make_node(f.name, reads, outs, name=f"call_{instance}", domain=MODULE_DOMAIN)
        call.overload = f.overload
        moved[indices[-1]] = call  # where its last node was: everything it reads is made before
        for i in indices[:-1]:
            moved[i] = onnx.NodeProto()
    if not moved:
        return
    nodes = [moved.get(i, n) for i, n in enumerate(g.node)]
    del g.node[:]
    g.node.extend(n for n in nodes if n.op_type)
    model.opset_import.append(helper.make_opsetid(MODULE_DOMAIN, 1))


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=list(MODELS))
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        for style in ("torch_aten", "attributes", "nested"):
            model = folded(name)
            typed = list(onnx.load(ROOT / "tests" / "zoo" / f"{name}.onnx").graph.value_info)
            rename(model, "aten" if style == "attributes" else "pkg.torch.aten",
                   "attributes" if style == "attributes" else "torch_aten", typed)
            if style == "nested":
                nest(model)
            onnx.checker.check_model(model, full_check=True)
            path = OUT / f"{name}.{style}.onnx"
            onnx.save(model, path)
            print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
