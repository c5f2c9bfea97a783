"""Fingerprints ignore names and metadata but see ops, wiring, attributes and constants."""

from __future__ import annotations

from onnx import helper

from inspector.core.bodies.body import function_body, group_body
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import build_index, open_index
from inspector.core.model.keys import FunctionKey
from inspector.core.model.loader import LoadedModel
from tests.builders import renamed_copy
from tests.conftest import FIXTURES


def test_bodies_that_differ_only_in_names_match():
    index = open_index(FIXTURES / "overloads.onnx")
    renamed = build_index(LoadedModel(index.path, renamed_copy(index.proto), "binary", 0))
    for key, f in index.functions.functions.items():
        g = renamed.functions.functions[key]
        assert fingerprint(function_body(key, f)) == fingerprint(function_body(key, g))
    a = open_index(FIXTURES / "dynamo_block.onnx")
    b = build_index(LoadedModel(a.path, renamed_copy(a.proto), "binary", 0))
    fa = [fingerprint(group_body(c, GraphMaps(a.proto.graph))).full for c in a.provenance.calls]
    fb = [fingerprint(group_body(c, GraphMaps(b.proto.graph))).full for c in b.provenance.calls]
    assert fa == fb


def test_changed_perm_changes_fingerprint_but_not_template():
    index = open_index(FIXTURES / "overloads.onnx")
    fns = index.functions.functions
    fps = {k.overload: fingerprint(function_body(k, f)) for k, f in fns.items() if k.name == "tr"}
    assert len({fp.full for fp in fps.values()}) == 3
    assert len({fp.template for fp in fps.values()}) == 1
    scale = [fingerprint(function_body(k, f)) for k, f in fns.items() if k.name == "scale"]
    assert scale[0].full != scale[1].full and scale[0].template == scale[1].template


def test_structure_and_wiring_change_the_template():
    key = FunctionKey("local", "f")

    def body(nodes, inputs=("x", "y")):
        f = helper.make_function("local", "f", list(inputs), ["z"], nodes, [helper.make_opsetid("", 18)])
        return function_body(key, f)

    add = body([helper.make_node("Add", ["x", "y"], ["z"])])
    swapped = body([helper.make_node("Add", ["y", "x"], ["z"])])
    sub = body([helper.make_node("Sub", ["x", "y"], ["z"])])
    assert len({add.label and fingerprint(b).template for b in (add, swapped, sub)}) == 3


def test_small_initializers_are_constants_of_the_group():
    a = open_index(FIXTURES / "dynamo_block.onnx")
    b = open_index(FIXTURES / "dynamo_block_h4.onnx")
    sdpa_a = next(c for c in a.provenance.calls if c.target == "aten::scaled_dot_product_attention")
    sdpa_b = next(c for c in b.provenance.calls if c.target == "aten::scaled_dot_product_attention")
    ba, bb = group_body(sdpa_a, GraphMaps(a.proto.graph)), group_body(sdpa_b, GraphMaps(b.proto.graph))
    assert ba.inputs == ["transpose", "transpose_1", "transpose_2"]
    assert "val_49" in ba.constants  # the baked SDPA scale
    fa, fb = fingerprint(ba), fingerprint(bb)
    assert fa.full != fb.full and fa.template == fb.template  # head count changes only baked values
