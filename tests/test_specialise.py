"""Specialised values: found on a hand-made family, on real exports, and linked to aten arguments."""

from __future__ import annotations

import pytest

from inspector.core.index import open_index
from inspector.core.specialise import Specialiser
from tests.conftest import FIXTURES


def _analysis(path, kind, domain, name):
    index = open_index(path)
    fam = index.family(kind, domain, name)
    assert fam is not None
    return Specialiser(index).analyse(fam)


@pytest.mark.parametrize(
    ("name", "attribute", "values"),
    [
        ("tr", "perm", [[0, 2, 1, 3], [0, 2, 3, 1], [1, 0, 2, 3]]),
        ("sm", "axis", [1, -1]),
        ("scale", "value", [0.25, 0.35355338]),
    ],
)
def test_values_that_vary_between_overloads(name: str, attribute: str, values: list):
    analysis = _analysis(FIXTURES / "overloads.onnx", "function", "local", name)
    assert len(analysis.bodies) == len(values)
    found = []
    for body in analysis.bodies:
        (spec,) = body.specialised
        assert spec.literal.name == attribute and spec.varies
        assert sorted(map(str, spec.family_values)) == sorted(map(str, values))
        found.append(spec.literal.value)
    assert sorted(map(str, found)) == sorted(map(str, values))


def test_ref_attr_name_is_parametric_not_specialised():
    analysis = _analysis(FIXTURES / "overloads.onnx", "function", "local", "par")
    (spec,) = analysis.bodies[0].specialised
    assert spec.literal.kind == "parametric" and spec.literal.ref == "perm" and not spec.varies


def test_transpose_perm_linked_to_dims():
    analysis = _analysis(FIXTURES / "dynamo_block.onnx", "aten_call", "aten", "transpose")
    (body,) = analysis.bodies
    assert len(body.members) == 8
    (perm,) = body.specialised
    assert perm.literal.value == [0, 2, 1, 3]
    assert {(link.parameter, link.value) for link in perm.links} == {("dim0", 1), ("dim1", 2)}


def test_sdpa_scale_and_reshape_shapes_follow_head_count():
    for path, heads, hd in ((FIXTURES / "dynamo_block.onnx", 2, 8), (FIXTURES / "dynamo_block_h4.onnx", 4, 4)):
        analysis = _analysis(path, "aten_call", "aten", "scaled_dot_product_attention")
        (body,) = analysis.bodies
        by_value = {str(s.literal.value): s for s in body.specialised if s.literal.kind == "initializer"}
        scale = next(s for s in body.specialised if s.links and s.links[0].parameter == "scale")
        assert abs(scale.literal.value[0] ** 4 - 1 / hd) < 1e-5
        assert f"head dim E={hd}" in scale.links[0].rule
        assert str([1, heads, hd, 8]) in by_value  # the reshape of the transposed key into heads
        assert str([-1, 8, hd]) in by_value


def test_view_sizes_vary_and_link_to_size():
    analysis = _analysis(FIXTURES / "dynamo_block.onnx", "aten_call", "aten", "view")
    assert len(analysis.bodies) == 2
    for body in analysis.bodies:
        (spec,) = body.specialised
        assert spec.varies and spec.links[0].parameter == "size"
        assert spec.links[0].value == spec.literal.value


def test_links_only_when_the_evidence_holds():
    # the rewriter fused two transposes: the surviving perm is not a swap of this call's dims
    analysis = _analysis(FIXTURES / "dynamo_rewritten.onnx", "aten_call", "aten", "transpose")
    perms = {str(s.literal.value): s for b in analysis.bodies for s in b.specialised}
    assert perms[str([0, 2, 1, 3])].links
    assert perms[str([0, 2, 3, 1])].links == []
    mul = _analysis(FIXTURES / "dynamo_rewritten.onnx", "aten_call", "aten", "mul")
    (spec,) = mul.bodies[0].specialised
    assert spec.links[0].parameter == "other"
