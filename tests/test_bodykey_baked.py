"""A small initializer read by an aten call's node is a value baked in at export time, unless the FX node passed it
as a tensor argument: by its own name or by the FX name that the graph's value info maps to it. The group key's
quick test (is the name, or an FX name standing for it, in the FX text at all) must never miss such an argument."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.bodies.body import group_body
from inspector.core.bodies.bodykey import group_keys, group_shape
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import build_index
from inspector.core.model.loader import load_model

FX = "%add : [num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%x, {other}))"


def _model(tmp_path: Path, other: str, alias: str | None) -> Path:
    node = helper.make_node("Add", ["x", "val_7"], ["y"], name="add")
    node.metadata_props.add(key="pkg.torch.onnx.fx_node", value=FX.format(other=other))
    c_info = helper.make_tensor_value_info("val_7", TensorProto.FLOAT, [])
    if alias is not None:  # torch.export's name for the value, recorded on its value info
        c_info.metadata_props.add(key="pkg.torch.onnx.original_node_name", value=alias)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [helper.make_tensor("val_7", TensorProto.FLOAT, [], [0.5])], value_info=[c_info])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), path)
    return path


@pytest.mark.parametrize(("other", "alias", "reads", "constants"), [
    ("0.5", None, ["x"], ["val_7"]),                              # a Python scalar: baked into the body
    ("%val_7", None, ["x", "val_7"], []),                         # the tensor itself, by its ONNX name
    ("%lifted_tensor_0", "lifted_tensor_0", ["x", "val_7"], []),  # by the FX name the value info maps to it
    ("%val_77", None, ["x"], ["val_7"]),                          # a longer name that holds "val_7": baked
])
def test_a_small_initializer_is_baked_unless_it_is_a_tensor_argument(
        tmp_path: Path, other: str, alias: str | None, reads: list[str], constants: list[str]) -> None:
    index = build_index(load_model(_model(tmp_path, other, alias)))
    (call,) = index.provenance.calls
    maps = GraphMaps(index.proto.graph)
    shape = group_shape(call, maps)
    assert shape is not None and (shape.reads, shape.constants) == (reads, constants)
    body = group_body(call, maps)  # the slow path the key stands for agrees
    assert (body.canonical_inputs, list(body.constants)) == (reads, constants)
    assert list(maps.fx_names("val_7")) == ([alias] if alias else [])
    assert maps.original_names == ([("val_7", alias)] if alias else [])  # what fold's evidence reads
    # the specialiser's keys, made inline for one-node groups, are the key of these steps
    assert group_keys([call], maps) == [shape.key]
    assert shape.key[0] == tuple(constants)
