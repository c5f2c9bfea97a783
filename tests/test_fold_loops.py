"""fold of a call whose body loops: ``tests/evidence/bags.onnx`` (``scripts/evidence_cases.py``'s ``Bags``: an
``EmbeddingBag`` as recommenders pool their sparse features, then a dense layer). torchlib's ``embedding_bag`` loops
over the bags (a ``Loop`` whose body holds ``If`` branches), so the call's nodes include nodes of that loop body,
and it stayed flat ("nodes inside a subgraph"). The Loop moves into the call's function with its body; the folded
model passes the full checker and gives torch's export's outputs bit for bit in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from inspector.core.model.walk import iter_nodes
from tests.conftest import ROOT

ort = pytest.importorskip("onnxruntime")

BAGS = ROOT / "tests" / "evidence" / "bags.onnx"


def _run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)


def test_the_embedding_bag_folds_with_its_loop():
    index = open_index(BAGS)
    (bag,) = [c for c in index.provenance.calls if c.target.startswith("aten::embedding_bag")]
    assert any(len(p) > 1 for p in bag.node_paths)  # (nodes of the loop body are the call's)
    folded, report = fold_model(index)
    onnx.checker.check_model(folded, full_check=True)
    assert bag.name not in {name for name, _target, _why in report.left_flat}
    (function,) = [f for f in folded.functions if f.name == bag.name]
    assert [n.op_type for n in function.node if n.op_type in ("Loop", "If")] == ["Loop"]
    loops = [n for n in index.proto.graph.node if n.op_type == "Loop"]
    assert len(loops) == 1 and not [n for n in folded.graph.node if n.op_type == "Loop"]
    # the loop's body whole, its branches with it
    (moved,) = [n for n in function.node if n.op_type == "Loop"]
    assert [n.op_type for _p, n, _d in iter_nodes([moved])] == [n.op_type for _p, n, _d in iter_nodes(loops)]
    for offsets in ([0, 3, 7], [0, 0, 10], [0, 5, 5]):  # (an empty bag too)
        feeds = {"ids": np.array([1, 5, 3, 7, 2, 9, 4, 0, 11, 19], dtype=np.int64),
                 "offsets": np.array(offsets, dtype=np.int64)}
        for a, b in zip(_run(index.proto, feeds), _run(folded, feeds), strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_loop_holding_another_calls_node_stays_flat(tmp_path):
    """A node of the loop body that another call's metadata claims (crafted: the dense layer's FX text on one) would
    be moved into the bag's function with the loop: the bag stays flat, and says why."""
    model = onnx.load(str(BAGS))
    (loop,) = [n for n in model.graph.node if n.op_type == "Loop"]
    (dense,) = [n for n in model.graph.node if n.op_type == "Gemm" or n.op_type == "MatMul"][:1]
    text = next(p.value for p in dense.metadata_props if p.key == "pkg.torch.onnx.fx_node")
    body = next(a.g for a in loop.attribute if a.name == "body")
    next(p for p in body.node[0].metadata_props if p.key == "pkg.torch.onnx.fx_node").value = text
    path = tmp_path / "bags.onnx"
    onnx.save(model, str(path))
    index = open_index(path)
    (bag,) = [c for c in index.provenance.calls if c.target.startswith("aten::embedding_bag")]
    folded, report = fold_model(index)
    onnx.checker.check_model(folded, full_check=True)
    assert (bag.name, bag.target, "nodes inside a subgraph") in report.left_flat
    assert [n for n in folded.graph.node if n.op_type == "Loop"]
