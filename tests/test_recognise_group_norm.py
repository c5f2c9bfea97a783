"""Group norms recognised by body template where models hold their weight and bias as parameters, against torch:
``tests/evidence/group_norms.onnx`` (``scripts/evidence_cases.py``'s ``GroupNorms``: wav2vec2's first feature
encoder layer, one group per channel of a 3-D input, and a UNet block's two groups), stripped of its metadata.

The optimizer folds each ``Unsqueeze`` of a parameter into a constant. Such a node of two operands (the weight and
the axes) did not count as one the optimizer may fold when the matcher ruled out templates whose keys the graph
lacks, so no group norm template was tried; and where the input's shape is the one the Reshape makes, the optimizer
drops the Reshape back, a body of four nodes no template had. Both went unrecognised (lone ``view``,
``instance_norm``, ``mul`` and ``add`` calls).
"""

from __future__ import annotations

import json
from pathlib import Path

from inspector.core.model.index import open_index
from tests.conftest import ROOT
from tests.stripping import stripped_file

EXPORT = ROOT / "tests" / "evidence" / "group_norms.onnx"
TRUTH = json.loads((ROOT / "tests" / "evidence" / "group_norms.truth.json").read_text(encoding="utf-8"))


def _nodes(call) -> frozenset[int]:
    return frozenset(int(p[0]) for p in call.node_paths if len(p) == 1)


def test_each_group_norm_is_recognised_with_its_nodes_and_eps(tmp_path: Path) -> None:
    truth = {_nodes(c): c.module_path for c in open_index(EXPORT).provenance.calls if c.target == "aten::group_norm"}
    assert sorted(truth.values()) == sorted(TRUTH) == ["audio_norm", "image_norm"]
    assert sorted(len(n) for n in truth) == [4, 5]  # the audio body without its Reshape back

    recognised = [c for c in open_index(stripped_file(EXPORT, tmp_path)).provenance.calls
                  if c.target == "aten::group_norm"]
    assert {_nodes(c) for c in recognised} == set(truth)
    for call in recognised:
        assert call.recognised
        assert call.fx is not None and call.fx.kwargs["eps"] == TRUTH[truth[_nodes(call)]]["eps"]


def test_no_lone_calls_are_left_where_the_group_norms_are(tmp_path: Path) -> None:
    calls = open_index(stripped_file(EXPORT, tmp_path)).provenance.calls
    targets = sorted(c.target for c in calls)
    assert targets == sorted(c.target for c in open_index(EXPORT).provenance.calls)
    assert "aten::instance_norm" not in targets and "aten::view" not in targets
