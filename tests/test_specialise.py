"""Specialised values: found on a hand-made family, on real exports, and linked to aten arguments."""

from __future__ import annotations

import pytest

from inspector.core.model.index import open_index
from inspector.core.specialise.specialiser import Specialiser
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
    assert spec.literal.kind == "parametric" and spec.literal.ref == "perm"
    # the value sits at each call site (tests/make_fixtures.py: par_a passes perm=[0, 1, 3, 2], par_b [3, 2, 1, 0]),
    # and differs between them
    assert spec.call_values == [("main/par_a", [0, 1, 3, 2]), ("main/par_b", [3, 2, 1, 0])] and spec.varies


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


ZOO = FIXTURES.parent / "zoo"


def test_lone_body_leaves_out_onnx_defaults_and_keeps_them_available() -> None:
    # gpt2's SDPA body (one body, no sibling): Reshape.allowzero=0 (twice) and Softmax.axis=-1 equal their opset-20
    # defaults; Transpose.perm=[0, 2, 1] does not (the default reverses the axes), so it stays a review item
    analysis = _analysis(ZOO / "gpt2.onnx", "aten_call", "aten", "scaled_dot_product_attention")
    (body,) = analysis.bodies
    left = sorted((s.literal.op_type, s.literal.name, s.literal.value) for s in body.left_out)
    assert left == [("Reshape", "allowzero", 0), ("Reshape", "allowzero", 0), ("Softmax", "axis", -1)]
    shown = {(s.literal.op_type, s.literal.name) for s in body.specialised if s.literal.kind == "attribute"}
    assert shown == {("Transpose", "perm")}


def test_defaults_that_link_stay_review_items() -> None:
    # Softmax.axis=-1 is the ONNX default, but in aten::softmax.int it is the dim argument: linked, so listed
    analysis = _analysis(ZOO / "t5_noopt.onnx", "aten_call", "aten", "softmax")
    (body,) = analysis.bodies
    (spec,) = body.specialised
    assert (spec.literal.name, spec.literal.value) == ("axis", -1) and spec.links[0].parameter == "dim"
    assert body.left_out == []


def test_constants_read_inside_an_if_branch_name_the_branch_node() -> None:
    import onnx

    analysis = _analysis(ZOO / "cond.onnx", "aten_call", "higher_order", "cond")
    (body,) = analysis.bodies
    model = onnx.load(ZOO / "cond.onnx", load_external_data=False)
    found = {}
    for spec in body.specialised:
        lit = spec.literal
        if lit.kind != "initializer":
            continue
        i, branch, j = lit.reader
        (attr,) = [a for a in model.graph.node[body.body.node_paths[int(i)][0]].attribute if a.name == branch]
        node = attr.g.node[int(j)]
        assert lit.name in node.input and node.op_type == lit.op_type
        found[lit.name] = (branch, lit.op_type)
    assert found == {"val_2": ("else_branch", "Sub"), "val_0_2": ("then_branch", "Mul")}


def _fx(name: str, target: str, args: str, kwargs: str = "{}") -> str:
    head = f"%{name} : [num_users=1] = call_function[target=torch.ops.aten.{target}]"
    return f"{head}(args = ({args}), kwargs = {kwargs})"


def _hand_made(tmp_path):  # type: ignore[no-untyped-def]
    """One call per argument kind, each lowered as torchlib does, with decoys of equal value in other places."""
    import onnx
    from onnx import TensorProto, helper

    def node(op, ins, outs, fx, **attrs):  # type: ignore[no-untyped-def]
        n = helper.make_node(op, ins, outs, name=outs[0], **attrs)
        p = n.metadata_props.add()
        p.key, p.value = "pkg.torch.onnx.fx_node", fx
        return n

    c = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in (("four", 4.0), ("two", 2.0), ("zero", 0.0))]
    c.append(helper.make_tensor("pads", TensorProto.INT64, [6], [0, 0, 1, 0, 0, 1]))
    nodes = [
        node("Gelu", ["x"], ["gelu"], _fx("gelu", "gelu.default", "%x,", "{approximate: tanh}"), approximate="tanh"),
        node("Mul", ["gelu", "four"], ["mul"], _fx("mul", "mul.Tensor", "%gelu, 4")),
        # add(x, mul, alpha=2): torchlib multiplies other by alpha (a decoy: 2.0 is also alpha's value elsewhere)
        node("Mul", ["mul", "two"], ["t"], _fx("add", "add.Tensor", "%x, %mul", "{alpha: 2}")),
        node("Add", ["x", "t"], ["add"], _fx("add", "add.Tensor", "%x, %mul", "{alpha: 2}")),
        node("Where", ["cond", "zero", "add"], ["where"], _fx("where", "where.self", "%cond, 0.0, %add")),
        node("Softmax", ["where"], ["softmax"], _fx("softmax", "softmax.int", "%where, 2"), axis=-1),
        node("Conv", ["img", "w"], ["conv"], _fx("conv", "conv2d.default", "%img, %w, None, [1, 1], [1, 1], [1, 1]"),
             pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], kernel_shape=[3, 3], group=1),
        node("MaxPool", ["conv"], ["pool"], _fx("pool", "max_pool2d.default", "%conv, [2, 2], []"),
             kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0]),
        # strings: reduce quoted in args ("amax" is ONNX's "max"), mode unquoted in kwargs (a Symbol)
        node("ScatterElements", ["x", "idx", "x"], ["scat"],
             _fx("scat", "scatter_reduce.two", "%x, 2, %idx, %x, 'amax'"), axis=-1, reduction="max"),
        node("Pad", ["x", "pads"], ["pad"], _fx("pad", "pad.default", "%x, [1, 1]", "{mode: reflect}"), mode="reflect"),
    ]
    vi = helper.make_tensor_value_info
    inputs = [vi("x", TensorProto.FLOAT, [1, 2, 3]), vi("cond", TensorProto.BOOL, [1, 2, 3]),
              vi("idx", TensorProto.INT64, [1, 2, 3]),
              vi("img", TensorProto.FLOAT, [1, 1, 8, 8]), vi("w", TensorProto.FLOAT, [1, 1, 3, 3])]
    g = helper.make_graph(nodes, "g", inputs,
                          [vi("softmax", TensorProto.FLOAT, [1, 2, 3]), vi("pool", TensorProto.FLOAT, [1, 1, 4, 4]),
                           vi("scat", TensorProto.FLOAT, [1, 2, 3]), vi("pad", TensorProto.FLOAT, [1, 2, 5])],
                          initializer=c, value_info=[vi("where", TensorProto.FLOAT, [1, 2, 3])])
    path = tmp_path / "kinds.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)]), path)
    return path


def test_every_argument_kind_links_where_the_lowering_puts_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    index = open_index(_hand_made(tmp_path))
    specialiser = Specialiser(index)
    got = set()
    for fam in index.families:
        for body in specialiser.analyse(fam).bodies:
            for s in body.specialised:
                for a in s.links:
                    got.add((body.members[0].target, f"{s.literal.op_type}.{s.literal.name}", a.parameter,
                             str(a.value)))
    assert got == {
        ("aten::gelu", "Gelu.approximate", "approximate", "tanh"),  # FX wrote tanh without quotes (a Symbol)
        ("aten::mul.Tensor", "Mul.four", "other", "4"),
        ("aten::add.Tensor", "Mul.two", "alpha", "2"),
        ("aten::where.self", "Where.zero", "self", "0.0"),  # a Python scalar passed for a Tensor parameter
        ("aten::softmax.int", "Softmax.axis", "dim", "2"),  # dim 2 of a rank-3 input is axis -1
        ("aten::conv2d", "Conv.pads", "padding", "[1, 1]"),  # not dilations, though equal to padding
        ("aten::conv2d", "Conv.strides", "stride", "[1, 1]"),
        ("aten::conv2d", "Conv.dilations", "dilation", "[1, 1]"),
        ("aten::conv2d", "Conv.group", "groups", "1"),  # schema default
        ("aten::max_pool2d", "MaxPool.kernel_shape", "kernel_size", "[2, 2]"),
        ("aten::max_pool2d", "MaxPool.strides", "stride", "[]"),  # empty stride: torch uses kernel_size
        ("aten::max_pool2d", "MaxPool.pads", "padding", "[0, 0]"),  # schema default padding=0, as [0, 0]
        ("aten::scatter_reduce.two", "ScatterElements.reduction", "reduce", "amax"),
        ("aten::scatter_reduce.two", "ScatterElements.axis", "dim", "2"),  # dim 2 of rank 3 is axis -1
        ("aten::pad", "Pad.mode", "mode", "reflect"),
        # torch's pad (begin, end of the last dim) as ONNX pads [0, 0, 1, 0, 0, 1]: learned (torch_pads)
        ("aten::pad", "Pad.pads", "pad", "[1, 1]"),
    }


def test_shape_specialised_values_say_which_shape_they_came_from() -> None:
    # gpt2 (key FLOAT[1, 2, 8, 16]): torchlib reshapes the key to (-1, S, E) = [-1, 8, 16] and back to
    # (1, 2, E, S) = [1, 2, 16, 8]; the optimizer baked both. view_8's size [-1, 32] became [8, 32] for an input of
    # 256 elements. The scale 0.5 was passed explicitly (scale=0.25): not shape-specialised.
    sdpa = _analysis(ZOO / "gpt2.onnx", "aten_call", "aten", "scaled_dot_product_attention")
    shaped = {str(s.literal.value): s.shape for b in sdpa.bodies for s in b.specialised}
    key = "of key transpose [1, 2, 8, 16]"
    assert shaped == {"[-1, 8, 16]": f"[-1, 8, 16] = (-1, S, E) {key}",
                      "[1, 2, 16, 8]": f"[1, 2, 16, 8] = key's leading dims, then (E, S), {key}",
                      "0.5": None, "[0, 2, 1]": None, "0.0": None}
    view = _analysis(ZOO / "gpt2.onnx", "aten_call", "aten", "view")
    shaped = {str(s.literal.value): s.shape for b in view.bodies for s in b.specialised if s.shape}
    assert shaped == {"[8, 32]": "[8, 32]: size[0]=-1 resolved from the static shape of transpose_3 [1, 8, 2, 16]"}
    # the default scale depends on the query's head dim
    pair = _analysis(ZOO / "pair_heads_b.onnx", "aten_call", "aten", "scaled_dot_product_attention")
    (scale,) = [s for b in pair.bodies for s in b.specialised if s.links and s.links[0].parameter == "scale"]
    assert scale.shape is not None and "head dim E=8" in scale.shape


def test_values_of_trace_only_lowerings_name_the_function_that_baked_them() -> None:
    analysis = _analysis(ZOO / "gpt2.onnx", "aten_call", "aten", "transpose")
    (body,) = analysis.bodies
    (perm,) = body.specialised
    assert perm.baked_by == "aten_transpose"  # @torch_op("aten::transpose.int", trace_only=True) in onnxscript 0.7.2
    assert perm.to_json()["baked_by"] == "torchlib aten_transpose (trace_only)"


def test_torchscript_call_sites_carry_each_instance_value_and_vary() -> None:
    """TorchScript module functions read eps and shapes through ref_attr_name; each call site passes its instance's
    value (truth: module_functions[].instances, in forward's call order; the reshape is [1, seq, heads, d/heads])."""
    import json

    import numpy as np

    truth = json.loads((ZOO / "ts_functions.truth.json").read_text())
    seq, d = truth["inputs"][0]["shape"][1], truth["config"]["d"]
    index = open_index(ZOO / "ts_functions.onnx")
    specialiser = Specialiser(index)
    for mf in truth["module_functions"]:
        fam = index.family("function", mf["domain"], mf["name"])
        assert fam is not None
        specs = [s for b in specialiser.analyse(fam).bodies for s in b.specialised if s.literal.kind == "parametric"]
        assert specs
        for spec in specs:
            got = [v for _w, v in spec.call_values]
            if mf["name"] == "Block":
                want: list = [i["eps"] for i in mf["instances"]]
                assert [round(v, 12) for v in got] == [round(float(np.float32(e)), 12) for e in want]
            else:
                assert got == [[1, seq, i["heads"], d // i["heads"]] for i in mf["instances"]]
            assert spec.varies and len(spec.family_values) == 2
            assert [c["call"] for c in spec.to_json()["call_sites"]] == [w for w, _v in spec.call_values]
