"""An LSTM, a GRU and a grid_sample recognised by body template, against torch: ``tests/evidence/sequences.onnx``
(``scripts/evidence_cases.py``'s ``Sequences``: ``nn.LSTM`` and ``nn.GRU``, one layer each, batch first, then a
``grid_sample`` of nearest points with a border, a batch norm between), stripped of its metadata.

None of the three had a template: their one-op exports failed with the tables' arguments (a params list that fits no
layer layout, a grid of eight in its last dimension), so a stripped LSTM read as lone transposes and views. The
recipes give them arguments that fit (``evidence_recipes``), and the generator learned grid_sampler's modes as tables
once each node's attributes are aligned by name (``evidence_learn._by_name``).
"""

from __future__ import annotations

import json
from pathlib import Path

from inspector.core.model.index import open_index
from inspector.core.model.signature import call_signature
from tests.conftest import ROOT
from tests.stripping import stripped_file

EXPORT = ROOT / "tests" / "evidence" / "sequences.onnx"
TRUTH = json.loads((ROOT / "tests" / "evidence" / "sequences.truth.json").read_text(encoding="utf-8"))


def _calls(path: Path) -> dict[str, object]:
    return {c.target: c for c in open_index(path).provenance.calls}


def test_each_call_of_the_stripped_export_is_the_metadatas_with_its_nodes(tmp_path: Path) -> None:
    original = _calls(EXPORT)
    assert {t["target"] for t in TRUTH.values()} <= set(original)
    recognised = {tuple(c.node_paths): c for c in open_index(stripped_file(EXPORT, tmp_path)).provenance.calls}
    assert sorted(recognised) == sorted(tuple(c.node_paths) for c in original.values())
    for target, call in original.items():
        found = recognised[tuple(call.node_paths)]
        assert found.recognised and target in (found.candidates or (found.target,)), target
    # the LSTM's and the GRU's bodies as a model holds them, its weights folded into constants; an LSTM into a GRU,
    # both batch first, whose Transposes between them the optimizer cancelled: the LSTM's body ends before its
    # Transpose back to batch first
    for target in ("aten::lstm.input", "aten::gru.input"):
        assert recognised[tuple(original[target].node_paths)].target == target


def test_a_lone_batch_norm_is_one_of_the_overloads_that_make_it(tmp_path: Path) -> None:
    """``nn.BatchNorm1d`` in eval, with no convolution to fuse into: a lone BatchNormalization, which the one-op
    exports never made (they returned the batch norm's statistics too). Two overloads lower to it alike: both are
    candidates, the truth among them, and no single guess."""
    (truth,) = [t for t in TRUTH.values() if t["target"] == "aten::_native_batch_norm_legit_no_training"]
    original = _calls(EXPORT)["aten::_native_batch_norm_legit_no_training"]
    (call,) = [c for c in open_index(stripped_file(EXPORT, tmp_path)).provenance.calls
               if c.node_paths == original.node_paths]
    assert truth["target"] in call.candidates and len(call.candidates) > 1
    assert call.target.startswith("recognised::")


def test_grid_samplers_modes_come_back_as_torch_called_it(tmp_path: Path) -> None:
    truth = TRUTH["grid_sampler"]
    call = _calls(stripped_file(EXPORT, tmp_path))["aten::grid_sampler"]
    bound = {b.parameter.name: b.value for b in call_signature(call).bound}
    for name in ("interpolation_mode", "padding_mode", "align_corners"):
        assert bound[name] == truth[name], name


def test_the_stripped_export_folds_its_recognised_lstm_and_gru_bit_for_bit(tmp_path: Path) -> None:
    """fold of the stripped export: the LSTM and the GRU become calls of their own functions, the batch norm that
    fits two overloads stays flat and says so, and the folded model passes the full checker and gives the stripped
    model's outputs bit for bit in onnxruntime."""
    import numpy as np
    import onnx
    import pytest

    from inspector.core.fold.aten_fold import fold_model

    ort = pytest.importorskip("onnxruntime")
    index = open_index(stripped_file(EXPORT, tmp_path))
    folded, report = fold_model(index)
    onnx.checker.check_model(folded, full_check=True)
    assert {(f.name, f.overload) for f in folded.functions} >= {("lstm", "input"), ("gru", "input")}
    assert [why for _n, _t, why in report.left_flat] == [
        "fits several overloads: aten::_native_batch_norm_legit_functional, aten::_native_batch_norm_legit_no_training"]
    assert not any(n.op_type in ("LSTM", "GRU") for n in folded.graph.node)
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((2, 4, 4)).astype(np.float32),
             "grid": (rng.random((1, 3, 3, 2)) * 2 - 1).astype(np.float32)}
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    runs = [ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
            for m in (onnx.load(stripped_file(EXPORT, tmp_path)), folded)]
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_bidirectional_lstm_is_one_call_with_its_nodes(tmp_path: Path) -> None:
    """``tests/evidence/bi_tagger.onnx`` (``BiTagger``: a bidirectional LSTM, batch first, then a linear layer over both
    directions' states). The module exports held one direction, whose LSTM node's ``direction`` was a fixed literal:
    the stripped BiLSTM read as three lone transposes and a view."""
    export = ROOT / "tests" / "evidence" / "bi_tagger.onnx"
    (original,) = [c for c in open_index(export).provenance.calls if c.target == "aten::lstm.input"]
    assert original.fx is not None and original.fx.args[7] is True  # (bidirectional, as torch called it)
    calls = open_index(stripped_file(export, tmp_path)).provenance.calls
    assert sorted((c.target, tuple(c.node_paths)) for c in calls) == sorted(
        (c.target, tuple(c.node_paths)) for c in open_index(export).provenance.calls)
    assert all(c.recognised for c in calls)
