"""A recognised call holds no node (``recognise_call.RecognisedCall`` reads its first node from the graph when asked),
so the keys' loop (``bodykey.group_keys``) reads a recognised call's node from the graph itself instead of through
that property. What it reads must be what the property gives: every recognised call of every stripped dynamo export
of the zoo is keyed as the call-by-call steps key it, and as a scan's call holding the same node is keyed; and two
recognised calls whose nodes differ in an attribute alone get two keys.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.bodies.bodykey import group_key, group_keys, group_shape, group_shapes
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import open_index
from inspector.core.model.recognise_call import RecognisedCall
from inspector.core.specialise.specialiser import Specialiser
from tests.stripping import stripped_file, zoo_dynamo


def _stripped(path: Path, tmp_path: Path) -> Path:
    return stripped_file(path, tmp_path)


def _held(call: AtenCall) -> AtenCall:
    """The same call as a scan makes it: a plain AtenCall holding its first node."""
    fields = {f.name: getattr(call, f.name) for f in dataclasses.fields(AtenCall)}
    fields["first_node"] = call.first_node
    return AtenCall(**fields)


@pytest.mark.parametrize("path", zoo_dynamo(), ids=lambda p: p.name)
def test_recognised_calls_are_keyed_as_each_call_and_as_a_call_holding_its_node(path: Path, tmp_path: Path) -> None:
    index = open_index(_stripped(path, tmp_path))
    maps = index.graph_maps()
    calls = [c for c in index.provenance.calls if c.recognised]
    assert calls and all(type(c) is RecognisedCall for c in calls)
    keys = group_keys(calls, maps)
    assert keys == [group_key(c, maps) for c in calls]
    held = [_held(c) for c in calls]
    assert all(type(c) is AtenCall and c.first_node is not None for c in held)
    assert group_keys(held, maps) == keys
    assert group_shapes(calls, maps) == [group_shape(c, maps) for c in calls] == group_shapes(held, maps)
    assert None not in keys  # (every recognised call is of main-graph nodes: each has a key)


def test_two_recognised_transposes_of_different_perm_get_two_keys(tmp_path: Path) -> None:
    """Three Transposes recognised by template (a lone Transpose is ``permute`` or ``transpose.int``: one ambiguous
    target), two of them alike: two keys, and the specialiser builds two bodies whose perm is what each node holds."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    nodes = [helper.make_node("Transpose", ["x"], ["t0"], perm=[0, 2, 1]),
             helper.make_node("Transpose", ["t0"], ["t1"], perm=[1, 0, 2]),
             helper.make_node("Transpose", ["t1"], ["t2"], perm=[0, 2, 1])]
    out = helper.make_tensor_value_info("t2", TensorProto.FLOAT, [3, 4, 2])
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [out]), opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="pytorch", ir_version=10)
    path = tmp_path / "transposes.onnx"
    onnx.save(model, str(path))
    index = open_index(path)
    calls = index.provenance.calls
    assert [c.candidates for c in calls] == [("aten::permute", "aten::transpose.int")] * 3
    assert all(type(c) is RecognisedCall for c in calls) and len({c.target for c in calls}) == 1
    keys = group_keys(calls, index.graph_maps())
    assert keys[0] == keys[2] and keys[0] != keys[1]
    family = next(f for f in index.families if f.kind == "aten_call")
    analysis = Specialiser(index).analyse(family)
    perms = sorted(([lit.value for lit in b.literals if lit.name == "perm"], len(b.members)) for b in analysis.bodies)
    assert perms == [([[0, 2, 1]], 2), ([[1, 0, 2]], 1)]
