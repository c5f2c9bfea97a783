"""The details panel's model overview says where a model's aten calls came from: fx metadata, or recognition by body
template in nodes that carry none (``core.model.recognise``), so that a stripped export says so before any call is
opened. Counts are torch's: the zoo's truth files list the calls torch made."""

from __future__ import annotations

import json
from pathlib import Path

import onnx

from inspector.core.model.index import open_index
from inspector.gui.details import model_overview
from tests.conftest import ZOO
from tests.stripping import stripped_file, stripped_model


def _truth_calls(name: str) -> int:
    """The FX nodes torch translated into at least one ONNX node: the export's aten calls."""
    return sum(1 for n in json.loads((ZOO / f"{name}.truth.json").read_text())["fx_nodes"] if n.get("onnx_nodes"))


def test_an_export_with_its_metadata_counts_its_calls_alone():
    text = model_overview(open_index(ZOO / "llama_gqa.onnx"))
    assert f"<td>{_truth_calls('llama_gqa'):,}</td>" in text
    assert "recognised" not in text


def test_a_stripped_export_says_its_calls_were_all_recognised(tmp_path: Path):
    index = open_index(stripped_file(ZOO / "llama_gqa.onnx", tmp_path))
    assert index.provenance.recognised == len(index.provenance.calls) == _truth_calls("llama_gqa") == 110
    assert "110, all recognised by body template (no fx metadata)" in model_overview(index)


def test_an_export_stripped_in_part_says_how_many_calls_were_recognised(tmp_path: Path):
    """The nodes of the second half of the graph lose their metadata, as GridSample's do (pytorch #172784)."""
    model = onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False)
    bare = stripped_model(ZOO / "llama_gqa.onnx")
    half = len(model.graph.node) // 2
    for node, without in zip(model.graph.node[half:], bare.graph.node[half:]):
        node.ClearField("metadata_props")
        node.metadata_props.extend(without.metadata_props)
    onnx.save(model, str(tmp_path / "half.onnx"))
    index = open_index(tmp_path / "half.onnx")
    total, recognised = len(index.provenance.calls), index.provenance.recognised
    assert 0 < recognised < total
    assert f"{total:,}, {recognised:,} of them recognised by body template (no fx metadata)" in model_overview(index)
