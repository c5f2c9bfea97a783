"""The diff matches a call's Constant tensors by what they hold and where they are read, not by their position:
an export whose calls emit the same Constant nodes in another order and under other names computes the same thing
(onnxruntime says so, bit for bit) and is reported ``equal``; before, tiny_noopt's SDPA read
``48 -> 48 nodes: +15 (Constant x15) -15 (Constant x15)``. A changed Constant value is still named.

The files are crafted from real exports (the zoo's unoptimised ones, which keep their Constant nodes): inside each
aten call, its Constant nodes are permuted (each then placed before its first reader) and all are renamed."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from inspector.core.diff import diff_files
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from tests.test_zoo_fold import ZOO, feeds, run

ort = pytest.importorskip("onnxruntime")
FX_NODE = "pkg.torch.onnx.fx_node"
NOOPT = ["tiny_noopt", "bert_noopt", "llama_gqa_noopt", "t5_noopt"]


def _fx(node: onnx.NodeProto) -> str | None:
    return next((p.value for p in node.metadata_props if p.key == FX_NODE), None)


def shuffled_constants(name: str, seed: int = 1) -> onnx.ModelProto:
    """The export with every call's Constant nodes gathered at the call's first node, in a random order (the graph
    stays topologically sorted: a Constant reads nothing), and renamed ``k0``, ``k1``, ... in their new order."""
    model = onnx.load(str(ZOO / f"{name}.onnx"))
    groups: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    first: dict[str, int] = {}
    for i, node in enumerate(model.graph.node):
        fx = _fx(node)
        if fx:
            first.setdefault(fx, i)
            if node.op_type == "Constant":
                groups[fx].append(node)
    rng = random.Random(seed)
    order: list[onnx.NodeProto] = []
    for i, node in enumerate(model.graph.node):
        fx = _fx(node)
        if fx and first[fx] == i:
            consts = groups[fx][:]
            rng.shuffle(consts)
            order += consts
        if not (fx and node.op_type == "Constant"):
            order.append(node)
    names = {n.output[0]: f"k{i}" for i, n in enumerate(order) if n.op_type == "Constant"}
    for node in order:
        node.input[:] = [names.get(x, x) for x in node.input]
        node.output[:] = [names.get(x, x) for x in node.output]
    del model.graph.node[:]
    model.graph.node.extend(order)
    return model


def _constant_order(model: onnx.ModelProto) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = defaultdict(list)
    for node in model.graph.node:
        fx = _fx(node)
        if node.op_type == "Constant" and fx:
            out[fx].append(node.attribute[0].SerializeToString())
    return out


@pytest.mark.parametrize("name", NOOPT)
def test_constants_in_another_order_are_the_same_export(name: str, tmp_path: Path) -> None:
    original = onnx.load(str(ZOO / f"{name}.onnx"))
    shuffled = shuffled_constants(name)
    onnx.checker.check_model(shuffled)
    # the premise: the same Constant tensors per call, in another order for some calls, computing the same outputs
    before, after = _constant_order(original), _constant_order(shuffled)
    assert before.keys() == after.keys()
    assert all(sorted(before[k]) == sorted(after[k]) for k in before)
    assert any(before[k] != after[k] for k in before)
    inputs = feeds(name)
    for want, got in zip(run(original, inputs), run(shuffled, inputs), strict=True):
        np.testing.assert_array_equal(want, got)
    path = tmp_path / f"{name}_shuffled.onnx"
    onnx.save(shuffled, str(path))
    result = diff_files(ZOO / f"{name}.onnx", path)
    assert result.changes == [] and result.equal
    # and across the fold: B folded computes what A computes, its functions holding B's order of Constants
    fb, _ = fold_model(open_index(path))
    onnx.save(fb, str(tmp_path / "b_folded.onnx"))
    folded = diff_files(ZOO / f"{name}.onnx", tmp_path / "b_folded.onnx")
    assert folded.equivalent and not folded.equal
    assert [c.kind for c in folded.changes] == ["folded"]


def test_a_changed_constant_is_still_named(tmp_path: Path) -> None:
    """One Constant of the first shuffled SDPA call changed (tiny_noopt's mask fill, float32's lowest value, becomes
    ``-1e9``): only that value change is reported, in aten::scaled_dot_product_attention, at that call."""
    shuffled = shuffled_constants("tiny_noopt")
    lowest = np.finfo(np.float32).min
    changed: list[str] = []
    for node in shuffled.graph.node:
        attr = node.attribute[0] if node.op_type == "Constant" else None
        if attr is not None and attr.name == "value" and "scaled_dot_product_attention" in (_fx(node) or ""):
            value = numpy_helper.to_array(attr.t)
            if value.dtype == np.float32 and value.size == 1 and value.item() == lowest:
                attr.t.CopyFrom(numpy_helper.from_array(np.full_like(value, -1e9)))
                changed.append(_fx(node) or "")
                break
        if changed:
            break
    assert len(changed) == 1 and changed[0].startswith("%scaled_dot_product_attention :")
    path = tmp_path / "tiny_changed.onnx"
    onnx.save(shuffled, str(path))
    result = diff_files(ZOO / "tiny_noopt.onnx", path)
    assert [(c.kind, c.family, c.where) for c in result.changes] == [
        ("value_changed", "aten::scaled_dot_product_attention", "scaled_dot_product_attention")]
    (old, new), = [(np.float32(np.asarray(c.old).item()), np.float32(np.asarray(c.new).item())) for c in result.changes]
    assert (old, new) == (lowest, np.float32(-1e9))
