"""The shipped template catalogue reads back to itself: each line, parsed and written again, is the same text, so the
generator's ``--only`` runs (which keep every other line as it is) and the matcher see one catalogue. A fused body
(``"form": "fused"``: what the optimizer makes of a view of a view) keeps its form; a line with a form that is no
string is refused, not trusted."""

from __future__ import annotations

import json

import pytest

from inspector.core.aten.resources import read_resource_lines
from inspector.core.aten.templates import CATALOGUE_FILE, load_templates, parse_template, template_json


def test_every_line_reads_back_to_itself() -> None:
    lines = [line for line in read_resource_lines(CATALOGUE_FILE) or [] if line and not line.startswith("#")]
    assert len(lines) == len(load_templates()) > 400
    assert [template_json(parse_template(line)) for line in lines] == lines
    fused = [t for t in load_templates() if t.form]
    assert [(t.name, t.form, t.named, t.rules) for t in fused] == [
        # (its Conv's output: the batch norm's first result, ``getitem`` in FX; the rules as its export's node says)
        ("aten::_native_batch_norm_legit_no_training#7", "fused", "getitem", ("FuseBatchNormIntoConv",)),
        ("aten::_native_batch_norm_legit_no_training#8", "fused", "getitem",
         ("RemoveOptionalBiasFromConv", "FuseBatchNormIntoConv")),  # (each rule once, as ``add_rules`` keeps them)
        # (a bias of zeros the optimizer removed: GPT-2's Conv1D as initialised, a Gemm of two operands)
        ("aten::addmm#1", "fused", "", ("RemoveOptionalBiasFromGemm",)),
        # (positions made from constants, folded into one constant the GatherND reads: transformers' mask indexing)
        ("aten::index.Tensor#3", "fused", "", ()),
        ("aten::view#1", "fused", "", ("ReshapeReshape",))]
    assert not any(t.named or t.rules for t in load_templates() if not t.form)  # (a lone call's body has neither)
    view = fused[-1]
    assert view.nodes[0].attributes == () and not view.constants[0].relation  # (no size is read back)
    # (a batch norm fused into a Conv: what the convolution's arguments wrote is masked, as moved by no argument of the
    # batch norm: ``#fused_...``, which nothing reads back; with trained statistics the Conv has a bias, else none)
    norms = [t for t in fused if "batch_norm" in t.target]
    assert [len(t.nodes[0].inputs) for t in norms] == [3, 2]
    assert all(s.masked and all(p.startswith("#fused_") for p in s.moves_with)
               for t in norms for name, s in t.nodes[0].attributes if name != "auto_pad")
    addmm = fused[2]  # (its weight's width varied: masked, read back as no argument)
    assert [r.kind for r in addmm.nodes[0].inputs] == ["x", "c"] and addmm.constants[0].moves_with == ("#fused_weight",)


@pytest.mark.parametrize(("field", "value"), [("named", 3), ("rules", "FuseBatchNormIntoConv"), ("rules", [1])])
def test_a_name_or_rules_of_another_type_are_refused(field: str, value: object) -> None:
    line = next(line for line in read_resource_lines(CATALOGUE_FILE) or [] if '"named"' in line)
    raw = json.loads(line)
    raw[field] = value
    with pytest.raises(ValueError):
        parse_template(json.dumps(raw))


def test_a_form_that_is_no_string_is_refused() -> None:
    line = next(line for line in read_resource_lines(CATALOGUE_FILE) or [] if '"form"' in line)
    raw = json.loads(line)
    raw["form"] = ["fused"]
    with pytest.raises(ValueError):
        parse_template(json.dumps(raw))
