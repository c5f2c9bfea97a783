"""Where torch's truth puts the nodes that no FX node emitted: a dynamo export's optimizer makes some nodes of its own
in place of a call's (GPT-2's Split of its fused query, key and value, made of three Slices), with no metadata at all.
The app draws and counts each in the deepest module holding every node it reads from and every node that reads it
(``core.model.module_tree``); this is that rule worked out from the truth file's module stacks and the file's own
fx_node entries read with ``onnx``, not from the app's module tree."""

from __future__ import annotations

import json
from pathlib import Path

import onnx

FX_NODE = "pkg.torch.onnx.fx_node"


def made_by_optimizer(model_path: Path, truth_path: Path) -> dict[str, int]:
    """Per module path: how many main-graph nodes with no metadata the truth's module stacks put under it."""
    truth = json.loads(truth_path.read_text())
    stack_of = {n["name"]: n["module_stack"] for n in truth["fx_nodes"] if n["graph"] == ""}
    nodes = list(onnx.load(str(model_path), load_external_data=False).graph.node)
    stacks: list[list[str] | None] = []
    for node in nodes:
        text = next((p.value for p in node.metadata_props if p.key == FX_NODE), None)
        name = text.split(" : ", 1)[0].lstrip("%") if text else None
        stacks.append(stack_of.get(name) if name else None)
    maker = {v: j for j, node in enumerate(nodes) for v in node.output}
    readers: dict[str, list[int]] = {}
    for j, node in enumerate(nodes):
        for v in node.input:
            readers.setdefault(v, []).append(j)
    counts: dict[str, int] = {}
    for node in nodes:
        if node.metadata_props:
            continue
        near = [maker[v] for v in node.input if v in maker] + [j for v in node.output for j in readers.get(v, [])]
        known = [s for j in near if (s := stacks[j]) is not None]
        if not known:
            continue
        common = known[0]
        for s in known[1:]:
            k = 0
            while k < min(len(common), len(s)) and common[k] == s[k]:
                k += 1
            common = common[:k]
        for path in common:
            if path:
                counts[path] = counts.get(path, 0) + 1
    return counts
