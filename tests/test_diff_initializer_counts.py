"""The matched line's initializer counts say how many of those on one side only are baked into aten calls (compared
there, as their calls' values), so every other one is listed as added or removed: before, a diff of pair_scale read
``30 initializers (+0 -1)`` and listed no initializer at all (the one removed is the SDPA scale the first export
baked into its attention)."""

from __future__ import annotations

import pytest

from inspector.core.diff import diff_dict, diff_files
from inspector.report.diff_text import matched_line
from tests.conftest import ROOT

ZOO = ROOT / "tests" / "zoo"


def test_the_one_initializer_of_pair_scale_removed_is_baked_into_its_attention():
    d = diff_files(ZOO / "pair_scale_a.onnx", ZOO / "pair_scale_b.onnx")
    m = d.matched["initializers"]
    assert (m.matched, m.only_a, m.only_b, m.baked) == (30, 1, 0, 1)
    assert "30 initializers (+0 -1, 1 baked into calls)" in matched_line(d)
    assert not [c for c in d.changes if c.section == "initializer"]
    assert diff_dict(d)["matched"]["initializers"] == {"matched": 30, "only_a": 1, "only_b": 0, "renamed": 16,
                                                       "baked": 1}


@pytest.mark.parametrize("a, b", [("pair_scale_a", "pair_scale_b"), ("llama_gqa", "llama_gqa_noopt"),
                                  ("gpt2", "gpt2_dynamic"), ("bert", "bert_noopt"), ("t5", "t5_noopt")])
@pytest.mark.parametrize("order", ["ab", "ba"])
def test_initializers_on_one_side_are_baked_or_listed(a: str, b: str, order: str):
    first, second = (a, b) if order == "ab" else (b, a)
    d = diff_files(ZOO / f"{first}.onnx", ZOO / f"{second}.onnx")
    m = d.matched["initializers"]
    listed = sum(1 for c in d.changes if c.kind in ("initializer_added", "initializer_removed"))
    assert listed == m.only_a + m.only_b - m.baked
