"""Value types as the app's details show them (``ValueTypes``), read when asked for: exact texts on a hand-made graph
with repeated and untyped declarations, and on a real export against the declarations onnx itself reads."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.model.values import ValueTypes, graph_values
from tests.conftest import ZOO


def _graph() -> onnx.GraphProto:
    untyped = onnx.ValueInfoProto(name="e")
    untyped.type.SetInParent()  # a type field that says nothing
    g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", None])],
        [helper.make_tensor("c", TensorProto.FLOAT16, [4], [0, 0, 0, 0]),
         helper.make_tensor("d", TensorProto.FLOAT, [5], [0] * 5)],
        value_info=[helper.make_tensor_value_info("z", TensorProto.FLOAT, [2]),
                    onnx.ValueInfoProto(name="z"),  # declared again without a type: the typed one stands
                    helper.make_tensor_value_info("w", TensorProto.FLOAT, [2]),
                    helper.make_tensor_value_info("w", TensorProto.DOUBLE, [3]),  # the last typed one stands
                    helper.make_tensor_value_info("d", TensorProto.INT32, [5]),  # a declaration beats the tensor
                    untyped])
    return g


def test_value_types_of_a_hand_made_graph():
    types = ValueTypes(_graph())
    assert types["x"] == "FLOAT[1,8,16]"
    assert types["y"] == "INT64[batch,?]"
    assert types["z"] == "FLOAT[2]"
    assert types["w"] == "DOUBLE[3]"
    assert types["c"] == "FLOAT16[4]"
    assert types["d"] == "INT32[5]"
    assert types["e"] == ""
    assert types.get("nowhere", "-") == "-" and "nowhere" not in types
    with pytest.raises(KeyError):
        types["nowhere"]
    assert dict(types) == {"x": "FLOAT[1,8,16]", "y": "INT64[batch,?]", "z": "FLOAT[2]", "w": "DOUBLE[3]",
                           "c": "FLOAT16[4]", "d": "INT32[5]", "e": ""}


def test_value_types_of_a_real_export_match_its_declarations():
    model = onnx.load(ZOO / "llama_gqa.onnx", load_external_data=False)
    g = model.graph
    types, initializers = graph_values(g)
    assert set(initializers) == {t.name for t in g.initializer}
    declared = {}
    for v in [*g.input, *g.value_info, *g.output]:  # what onnx reads: element type and dims of each declaration
        t = v.type.tensor_type
        dims = ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim)
        declared[v.name] = f"{TensorProto.DataType.Name(t.elem_type)}[{dims}]"
    assert len(declared) == len(g.input) + len(g.value_info) + len(g.output) == 174
    assert {name: types[name] for name in declared} == declared


def test_value_types_are_read_when_asked_for_and_once(monkeypatch):
    # opening a 100k-node export read 100k value types (1 s of the app's opening) that no one had asked for yet
    import inspector.core.model.values as values

    read: list[str] = []
    real = values.type_text
    monkeypatch.setattr(values, "type_text", lambda tp: read.append("r") or real(tp))
    g = onnx.load(ZOO / "llama_gqa.onnx", load_external_data=False).graph
    types = ValueTypes(g)
    assert read == []
    name = g.value_info[10].name
    assert types[name] == types.get(name) != ""
    assert read == ["r"]
