"""Specialised-value categories: one classification, colour, label and explanation for every view."""

from __future__ import annotations

import json

from inspector.core.categories import Category, classify, explain, short_where, value_text, where
from inspector.core.index import open_index
from inspector.core.specialise import Specialiser
from tests.conftest import FIXTURES


def _specs(path, kind, domain, name):
    index = open_index(path)
    fam = index.family(kind, domain, name)
    assert fam is not None
    return [s for b in Specialiser(index).analyse(fam).bodies for s in b.specialised]


def test_category_values_are_the_json_strings():
    assert [c.value for c in Category] == ["varies", "linked", "lone", "parametric"]
    assert json.dumps({"c": Category.LINKED}) == '{"c": "linked"}'
    assert f"spec {Category.LONE}" == "spec lone" and str(Category.VARIES) == "varies"
    assert Category("parametric") is Category.PARAMETRIC


def test_colours_labels_icons():
    assert {c: c.colour for c in Category} == {Category.VARIES: "#f6b26b", Category.LINKED: "#9fc5e8",
                                               Category.LONE: "#ffe599", Category.PARAMETRIC: "#d9d9d9"}
    assert Category.LINKED.label == "from an aten argument" and Category.VARIES.icon == "🟧"
    assert len({c.label for c in Category}) == len({c.icon for c in Category}) == 4


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
                             "from aten argument dim0=1: perm swaps dims 1 and 2\n"
                             "from aten argument dim1=2: perm swaps dims 1 and 2")


def test_parametric_comes_first_and_says_only_where_it_is_bound():
    (spec,) = _specs(FIXTURES / "overloads.onnx", "function", "local", "par")
    assert classify(spec) is Category.PARAMETRIC
    assert explain(spec) == "Transpose.perm is parametric: bound to function attribute @perm"


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
