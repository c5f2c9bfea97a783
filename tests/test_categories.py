"""Specialised-value categories: one classification, colour, label and explanation for every view."""

from __future__ import annotations

import json

import numpy as np

from inspector.core.model.index import open_index
from inspector.core.specialise.categories import Category, classify, explain, short_where, value_text, where
from inspector.core.specialise.specialiser import Specialiser
from tests.conftest import FIXTURES

ZOO = FIXTURES.parent / "zoo"


def _specs(path, kind, domain, name):
    index = open_index(path)
    fam = index.family(kind, domain, name)
    assert fam is not None
    return [s for b in Specialiser(index).analyse(fam).bodies for s in b.specialised]


def test_category_values_are_the_json_strings():
    assert [c.value for c in Category] == ["varies", "shape_specialised", "linked", "lone", "parametric"]
    assert json.dumps({"c": Category.LINKED}) == '{"c": "linked"}'
    assert f"spec {Category.LONE}" == "spec lone" and str(Category.VARIES) == "varies"
    assert Category("parametric") is Category.PARAMETRIC


def test_colours_labels_icons():
    assert {c: c.colour for c in Category} == {Category.VARIES: "#f6b26b", Category.SHAPE: "#d5a6bd",
                                               Category.LINKED: "#9fc5e8", Category.LONE: "#ffe599",
                                               Category.PARAMETRIC: "#d9d9d9"}
    assert Category.LINKED.label == "from an aten argument" and Category.VARIES.icon == "🟧"
    assert Category.SHAPE.label == "shape-specialised (wrong for another input shape)" and Category.SHAPE.icon == "🟪"
    assert len({c.label for c in Category}) == len({c.icon for c in Category}) == len({c.colour for c in Category}) == 5


def test_varies_and_its_explanation():
    (spec, *_) = _specs(FIXTURES / "overloads.onnx", "function", "local", "sm")
    assert classify(spec) is Category.VARIES
    assert where(spec) == short_where(spec) == "Softmax.axis"
    text = explain(spec)
    assert text.startswith("Softmax.axis = ") and "\nvaries across the family: " in text


def test_linked_names_argument_and_rule():
    (perm,) = _specs(FIXTURES / "dynamo_block.onnx", "aten_call", "aten", "transpose")
    assert classify(perm) is Category.LINKED
    assert explain(perm) == ("Transpose.perm = [0, 2, 1, 3]\n"
                             "from aten argument dim0=1 at Transpose.perm: perm swaps dims 1 and 2\n"
                             "from aten argument dim1=2 at Transpose.perm: perm swaps dims 1 and 2\n"
                             "put there at export time by torchlib aten_transpose (trace_only Python)")


def test_parametric_comes_first_and_says_only_where_it_is_bound():
    (spec,) = _specs(FIXTURES / "overloads.onnx", "function", "local", "par")
    assert classify(spec) is Category.PARAMETRIC
    assert explain(spec) == ("Transpose.perm is parametric: bound to function attribute @perm\n"
                             "each call passes its own value (they differ):\n"
                             "  main/par_a: [0, 1, 3, 2]\n"
                             "  main/par_b: [3, 2, 1, 0]")


def test_value_text_is_one_short_line():
    assert value_text(0.1 + 0.2) == "0.3" and value_text("a") == "'a'"
    assert value_text(list(range(100)), 10) == "[0, 1, 2,…"
    assert value_text({"a": "x\ny"}) == "{'a': 'x\\ny'}"


def test_where_a_constant_sits():
    index = open_index(FIXTURES / "dynamo_block.onnx")
    fam = index.family("aten_call", "aten", "scaled_dot_product_attention")
    assert fam is not None
    spec = next(s for b in Specialiser(index).analyse(fam).bodies for s in b.specialised
                if s.literal.kind == "initializer")
    name, op = spec.literal.name, spec.literal.op_type
    assert op and where(spec) == f"constant {name} (read by {op})" and short_where(spec) == f"{name} ({op})"


def test_shape_specialised_comes_after_varies_and_before_linked():
    """On the zoo (torch exports): llama_gqa's SDPA reshapes key to (-1, S, E); with one body in the family the
    value does not vary, so it is shape-specialised; the varying SDPA scale of pair_scale_a stays orange."""
    specs = _specs(ZOO / "llama_gqa.onnx", "aten_call", "aten", "scaled_dot_product_attention")
    shaped = [s for s in specs if classify(s) is Category.SHAPE]
    assert [s.literal.value for s in shaped] == [[4, 8, 8], [1, 4, 8, 8]]
    assert explain(shaped[0]).splitlines() == [
        "constant val_206/shape (read by Reshape) = [4, 8, 8]",
        "shape-specialised (wrong for another input shape): [4, 8, 8] = (-1, S, E) of key expand_2 [1, 2, 2, 8, 8] "
        "(-1 resolved)",
    ]  # rewritten by the optimizer (rule_names): torchlib is not said to have put it there
    scale_a = [s for s in _specs(ZOO / "pair_scale_a.onnx", "aten_call", "aten", "scaled_dot_product_attention")
               if s.links and s.links[0].parameter == "scale"]
    assert [classify(s) for s in scale_a] == [Category.VARIES, Category.VARIES] and all(s.shape for s in scale_a)
    assert explain(scale_a[0]).splitlines()[2:] == [
        "shape-specialised (wrong for another input shape): default scale: constant val_64 is sqrt(1/sqrt(E)), "
        "applied to both query and key, for head dim E=8 (the last dim of query [1,4,8,8])",
        "from aten argument scale=None at Mul on query/key: default scale: constant val_64 is sqrt(1/sqrt(E)), "
        "applied to both query and key, for head dim E=8 (the last dim of query [1,4,8,8])",
        "put there at export time by torchlib aten_scaled_dot_product_attention (trace_only Python)",
    ]


def test_parametric_lists_the_value_of_each_call_site():
    """TorchScript module functions: Block's eps is passed per instance (1e-5, 1e-6, 1e-5 in the torch model)."""
    (eps,) = [s for s in _specs(ZOO / "ts_functions.onnx", "function", "__main__", "Block")
              if s.literal.kind == "parametric"]
    assert classify(eps) is Category.PARAMETRIC and eps.varies
    assert explain(eps).splitlines() == [
        "LayerNormalization.epsilon is parametric: bound to function attribute @inferred::LayerNormalization_epsilon",
        "each call passes its own value (they differ):",
        "  main//blocks.0/Block: 1e-05",
        "  main//blocks.1/Block: 1e-06",
        "  main//blocks.2/Block: 1e-05",
    ]
    truth = json.loads((ZOO / "ts_functions.truth.json").read_text())
    block = next(f for f in truth["module_functions"] if f["name"] == "Block")
    assert [(call.split("/")[-2], round(v, 12)) for call, v in eps.call_values] == [
        (i["path"], round(float(np.float32(i["eps"])), 12)) for i in block["instances"]]
    assert explain(eps, max_calls=1).splitlines()[-2:] == ["  main//blocks.0/Block: 1e-05", "  … 2 more calls"]
