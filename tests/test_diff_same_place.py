"""An initializer of one name on both sides, read in the same place by matched calls, is one initializer whose value
changed, even where its old content equals another initializer's new one. Case: Swin exported again with another
``mlp_ratio``: the first stage's fc1 bias (64 zeros, as Hugging Face initialises a Linear's bias) had the content of
the other export's second stage's, and was matched to it, so the diff read a bias removed and a linear "rewired"
from ``encoder.layers.0.blocks.0.mlp.fc1.bias`` to the same name. ``tests/evidence/stage_ratio_*`` are such a pair
(``scripts/evidence_cases.py``: ``StageMLP``, stages of widths 16 and 32, fc1 of ``ratio`` times the width; its truth
file: each parameter's shape in torch)."""

from __future__ import annotations

import json

import pytest

from inspector.core.diff import diff_files
from tests.conftest import ZOO

EVIDENCE = ZOO.parent / "evidence"
TRUTH = json.loads((EVIDENCE / "stage_ratio.truth.json").read_text())


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_bias_reshaped_by_the_ratio_is_reshaped_not_removed(order: str):
    first, second = order
    d = diff_files(EVIDENCE / f"stage_ratio_{first}.onnx", EVIDENCE / f"stage_ratio_{second}.onnx")
    reshaped = {c.where: (c.old, c.new) for c in d.changes if c.kind == "initializer_reshaped"}
    for stage in (0, 1):
        name = f"stages.{stage}.0.bias"  # (each stage's fc1)
        was, now = TRUTH[first]["shapes"][name], TRUTH[second]["shapes"][name]
        assert was != now and reshaped[name] == (f"FLOAT{was}", f"FLOAT{now}")
    assert not [c for c in d.changes if c.kind == "rewired" and c.old == c.new]


@pytest.mark.parametrize("a, b", [("evidence/stage_ratio_a", "evidence/stage_ratio_b"),
                                  ("zoo/pair_heads_a", "zoo/pair_heads_b"), ("zoo/llama_gqa", "zoo/llama_gqa_noopt"),
                                  ("zoo/renumber_a", "zoo/renumber_b")])
def test_no_read_is_rewired_to_the_name_it_had(a: str, b: str):
    d = diff_files(ZOO.parent / f"{a}.onnx", ZOO.parent / f"{b}.onnx")
    assert not [c.detail for c in d.changes if c.kind == "rewired" and c.old == c.new]

