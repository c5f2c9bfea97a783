"""The Details panel of a node writes its attributes as the Signature tab and the graph's boxes do (a float32 by the
fewest digits that give it back: GPT-2's LayerNorm epsilon reads ``1e-05``, as torch's ``eps`` was; it read the
repr ``9.9999997e-06``), and each metadata entry with its value under its key, at the panel's width (beside keys as
long as ``pkg.torch.onnx.class_hierarchy`` a name scope path was a column of a few characters a line). The values
are the model's (torch's ``eps`` from the truth file; the metadata as the file holds it), escaped."""

from __future__ import annotations

import json
import re

import onnx
import pytest

pytest.importorskip("PySide6")

from inspector.core.model.index import open_index
from inspector.gui.node_details import node_html
from inspector.gui.text import esc
from tests.conftest import ZOO


def test_a_layer_norms_epsilon_reads_as_torchs_eps_and_metadata_reads_under_its_keys(qapp):
    index = open_index(ZOO / "gpt2.onnx")
    node = next(n for n in index.proto.graph.node if n.op_type == "LayerNormalization")
    fx = next(p.value for p in node.metadata_props if p.key == "pkg.torch.onnx.fx_node")
    name = fx.split(" ", 1)[0].lstrip("%")
    truth = next(n for n in json.loads((ZOO / "gpt2.truth.json").read_text())["fx_nodes"] if n["name"] == name)
    assert truth["args"]["eps"] == 1e-05
    html = str(node_html(index, node, "main graph", {}, {}, {}))
    epsilon = re.search(r"<b>epsilon</b></td><td><code>([^<]*)</code>", html)
    assert epsilon is not None and epsilon.group(1) == "1e-05"
    assert onnx.helper.get_attribute_value(next(a for a in node.attribute if a.name == "epsilon")) != 1e-05
    assert "<h3>Metadata</h3>" in html
    for p in node.metadata_props:
        if not p.key.endswith("stack_trace"):
            assert f"<p><b>{esc(p.key)}</b><br/><code>{esc(p.value)}</code></p>" in html
