"""Common subexpressions shared by recognised calls (``recognise_shared``), on crafted graphs as a hostile file would
make them: mask positions computed once (Max, Shape, Expand, Unsqueeze, Concat: ``aten::index.Tensor``'s body) and
read by many GatherND nodes. The first reader's call holds them, every later GatherND is a call of its own reusing
them; and the work stays linear however many nodes read the shared value (each of its readers is looked at once, not
once per call that might hold it)."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from inspector.core.aten.templates import load_templates
from inspector.core.model.graph import GraphMaps
from inspector.core.model.recognise import onnx_opset, recognise
from tests.builders import count_calls


def _positions_read_by(readers: int) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Max", ["a", "b"], ["m"]),
        helper.make_node("Shape", ["m"], ["s"], start=0),
        helper.make_node("Expand", ["a", "s"], ["ea"]),
        helper.make_node("Unsqueeze", ["ea", "axes"], ["ua"]),
        helper.make_node("Expand", ["b", "s"], ["eb"]),
        helper.make_node("Unsqueeze", ["eb", "axes"], ["ub"]),
        helper.make_node("Concat", ["ua", "ub"], ["c"], axis=-1),
        *[helper.make_node("GatherND", ["x", "c"], [f"g{k}"], batch_dims=0) for k in range(readers)],
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
         helper.make_tensor_value_info("a", TensorProto.INT64, [2, 1, 1, 1]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [1, 1, 8, 1])],
        [helper.make_tensor_value_info(f"g{k}", TensorProto.FLOAT, None) for k in range(readers)],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [-1])])
    return helper.make_model(graph, producer_name="pytorch", ir_version=10, opset_imports=[helper.make_opsetid("", 18)])


def _recognise(model: onnx.ModelProto) -> list:
    return recognise(model.graph, GraphMaps(model.graph, flat=True), set(), load_templates(), onnx_opset(model))


def test_the_first_reader_holds_the_positions_and_every_later_one_reuses_them() -> None:
    found = _recognise(_positions_read_by(5))
    assert [(r.nodes, r.candidates) for r in found] == [
        ((0, 1, 2, 3, 4, 5, 6, 7), ("aten::index.Tensor",)),
        *[((8 + k,), ("aten::index.Tensor",)) for k in range(4)]]


def test_the_work_stays_linear_in_the_readers_of_the_shared_value() -> None:
    _recognise(_positions_read_by(2))  # (the catalogue, prepared once)
    small = count_calls(lambda: _recognise(_positions_read_by(300)))
    big = count_calls(lambda: _recognise(_positions_read_by(2400)))
    assert big <= 8.8 * small, f"{big:,} calls for 8x the readers, {small:,} for 1x ({big / small:.1f}x)"
