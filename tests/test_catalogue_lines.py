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
    assert [(t.name, t.form) for t in fused] == [("aten::view#4", "fused")]
    assert fused[0].nodes[0].attributes == () and not fused[0].constants[0].relation  # (no size is read back)


def test_a_form_that_is_no_string_is_refused() -> None:
    line = next(line for line in read_resource_lines(CATALOGUE_FILE) or [] if '"form"' in line)
    raw = json.loads(line)
    raw["form"] = ["fused"]
    with pytest.raises(ValueError):
        parse_template(json.dumps(raw))
