"""Aten calls, module tree and signatures from real dynamo exports."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import onnx

from inspector.core.model.index import build_index, open_index
from inspector.core.model.loader import load_model
from inspector.core.model.signature import call_signature
from tests.conftest import FIXTURES, SAMPLE


def test_nodes_are_grouped_by_fx_node():
    index = open_index(FIXTURES / "dynamo_block.onnx")
    prov = index.provenance
    by_target = Counter(c.target for c in prov.calls)
    assert by_target["aten::transpose.int"] == 8
    assert by_target["aten::scaled_dot_product_attention"] == 2
    assert by_target["aten::linear"] == 12
    # every node with fx metadata belongs to exactly one call
    grouped = [p for c in prov.calls for p in c.node_paths]
    assert len(grouped) == len(set(grouped)) == prov.nodes_with_metadata - prov.nodes_without_fx
    linear = next(c for c in prov.calls if c.target == "aten::linear")
    ops = sorted(index.proto.graph.node[p[0]].op_type for p in linear.node_paths)
    assert ops == ["Add", "MatMul"]
    fam = index.family("aten_call", "aten", "transpose")
    assert fam is not None and [(o.overload, o.call_count) for o in fam.overloads] == [("int", 8)]


def test_module_tree_and_stack_trace():
    index = open_index(FIXTURES / "dynamo_block.onnx")
    root = index.provenance.module_root
    assert root.class_name == "__main__.TinyTransformer"
    layer0 = root.children["layers.0"]
    assert layer0.class_name == "__main__.TransformerLayer"
    attn = layer0.children["layers.0.attn"]
    assert attn.class_name == "__main__.SelfAttention"
    assert set(attn.children) == {f"layers.0.attn.{p}_proj" for p in "qkv"} | {"layers.0.attn.out_proj"}
    assert root.total_nodes() == sum(len(c.node_paths) for c in index.provenance.calls)
    sdpa = next(c for c in index.provenance.calls if c.target == "aten::scaled_dot_product_attention")
    assert sdpa.module_path == "layers.0.attn"
    assert "scaled_dot_product_attention" in sdpa.stack_trace


def test_rewriter_rule_names_are_kept():
    index = open_index(FIXTURES / "dynamo_rewritten.onnx")
    rules = {r for c in index.provenance.calls for r in c.rule_names}
    assert rules
    raw = {p.value for n in index.proto.graph.node for p in n.metadata_props
           if p.key == "pkg.onnxscript.rewriter.rule_name"}
    assert rules == raw


def test_signature_binds_arguments_to_parameter_names():
    index = open_index(SAMPLE)
    transpose = next(c for c in index.provenance.calls if c.target == "aten::transpose.int")
    sig = call_signature(transpose)
    assert sig.schema is not None and sig.problem is None
    values = {b.parameter.name: b.value for b in sig.bound}
    assert values["dim0"] == 1 and values["dim1"] == 2
    assert "dim0=1, dim1=2" in sig.text
    sdpa = next(c for c in index.provenance.calls if c.target == "aten::scaled_dot_product_attention")
    bound = {b.parameter.name: b for b in call_signature(sdpa).bound}
    assert bound["scale"].is_default and bound["scale"].value is None
    assert bound["dropout_p"].value == 0.0
    assert [b.parameter.name for b in call_signature(sdpa).non_tensor()][:2] == ["dropout_p", "is_causal"]


def test_damaged_metadata_degrades_gracefully(tmp_path: Path):
    model = onnx.load(str(FIXTURES / "dynamo_block.onnx"))
    for i, node in enumerate(model.graph.node):
        for p in node.metadata_props:
            if p.key == "pkg.torch.onnx.fx_node" and i % 3 == 0:
                p.value = "<<garbage %%% [target="
            elif p.key == "pkg.torch.onnx.name_scopes" and i % 3 == 1:
                p.value = "['unterminated"
            elif p.key == "pkg.torch.onnx.fx_node" and i % 3 == 2:
                p.value = p.value[: len(p.value) // 2]
    path = tmp_path / "damaged.onnx"
    onnx.save(model, str(path))
    index = build_index(load_model(path))
    assert index.provenance.calls
    assert any(f.kind == "damaged_metadata" for f in index.findings)
    for call in index.provenance.calls:
        call_signature(call)  # never raises
