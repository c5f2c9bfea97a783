"""The one pass over the initializers (``index._initializer_facts``) on hostile tensor metadata: it reads each tensor's
dims as a list and every external-data entry by a loop of its own, so pin what it must still give: negative dims count
as empty, packed 4-bit types round up to whole bytes, a scalar is one element, and a tensor that names two external
locations protects both files (a reader may take either)."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from inspector.core.model.index import open_index
from inspector.core.model.parameters import ParameterStats


def _external(name: str, dims: list[int], locations: list[str]) -> TensorProto:
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims, data_location=TensorProto.EXTERNAL)
    for loc in locations:
        t.external_data.add(key="location", value=loc)
    t.external_data.add(key="offset", value="0")
    return t


def _model(path: Path) -> Path:
    inits = [
        _external("twice", [2, 3], ["a.bin", "b.bin"]),  # 6 floats, 24 bytes, both files named
        TensorProto(name="negative", data_type=TensorProto.INT64, dims=[-1, 4]),  # empty: 0 elements
        TensorProto(name="packed", data_type=TensorProto.INT4, dims=[3], raw_data=b"\x21\x03"),  # 3 x 4 bits: 2 bytes
        TensorProto(name="scalar", data_type=TensorProto.FLOAT16, dims=[], raw_data=b"\x00\x3c"),  # 1 element
        _external("again", [5], ["a.bin"]),  # 5 floats, 20 bytes; a.bin once in the list
    ]
    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    out = path / "hostile_initializers.onnx"
    out.write_bytes(model.SerializeToString())
    return out


def test_counts_bytes_and_external_part_from_hostile_metadata(tmp_path: Path) -> None:
    index = open_index(_model(tmp_path))
    assert index.parameters() == ParameterStats(count=6 + 0 + 3 + 1 + 5, bytes=24 + 0 + 2 + 2 + 20,
                                                external_bytes=24 + 20)


def test_every_location_a_tensor_names_is_protected_once(tmp_path: Path) -> None:
    path = _model(tmp_path)
    files = open_index(path).protected_files()
    external = files[4:]  # after the model, its sidecar, lock and backup (paths.model_files)
    assert external == [tmp_path / "a.bin", tmp_path / "b.bin"]
    assert onnx.load(str(path), load_external_data=False).graph.initializer[0].external_data[1].value == "b.bin"
