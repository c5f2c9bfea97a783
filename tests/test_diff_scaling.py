"""The diff's work is linear in the size of the models, on each of its paths: a flat export against itself with a
few values changed (units, aten matching, node comparison, wiring), the same against a renamed copy (no
whole-node equality to shortcut), and a large graph of plain nodes against a small one (neighbourhood hashes,
node matching, a change per removed node).

Work is counted, not timed (as in ``tests/test_scaling.py``): the Python function calls ``diff_models`` makes on
the 8x model over those on the 1x model, the same on every machine. A pass that compares every unit with every
other, or looks names up in lists, makes the ratio grow with the size and this test fail.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.diff import diff_models
from inspector.core.model.index import ModelIndex, open_index
from tests.builders import count_calls, renamed_copy
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from replicate import externalise, replicate

LLAMA = ROOT / "tests" / "zoo" / "llama_gqa.onnx"
SMALL, FACTOR = 3, 8
LIMIT = 8.5  # 8x the size may cost at most this many times the work (fixed costs keep linear passes below 8)




def _save(model: onnx.ModelProto, path: Path) -> ModelIndex:
    onnx.save(model, str(path))
    return open_index(path)


def _llama(tmp: Path, copies: int, perturb: int = 0, renamed: bool = False) -> ModelIndex:
    model = replicate(onnx.load(str(LLAMA), load_external_data=False), copies, perturb)
    if renamed:
        model = renamed_copy(model)
    out = tmp / f"llama_{copies}_{perturb}_{renamed}.onnx"
    externalise(model, out, location=f"llama_{copies}.weights.bin")  # the pair shares its weights
    return _save(model, out)


def _chain(tmp: Path, n: int) -> ModelIndex:
    """A chain of ``n`` plain nodes (no metadata, no functions), with a side branch every 50 nodes."""
    nodes = []
    for i in range(n):
        nodes.append(helper.make_node("Relu" if i % 3 else "Sigmoid", [f"v{i}"], [f"v{i + 1}"], name=f"n{i}"))
        if i % 50 == 49:
            nodes.append(helper.make_node("Identity", [f"v{i}"], [f"side{i}"], name=f"s{i}"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, [4])])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp / f"chain_{n}.onnx")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, tuple[ModelIndex, ModelIndex]]]:
    """(A, B) per path and size; size 1 only warms shared caches (schema catalogue, imports)."""
    tmp = tmp_path_factory.mktemp("diff_scaling")
    out: dict[str, dict[int, tuple[ModelIndex, ModelIndex]]] = {"values": {}, "renamed": {}, "plain": {}}
    small_chain = _chain(tmp, 10)
    for size in (1, SMALL, SMALL * FACTOR):
        a = _llama(tmp, size)
        out["values"][size] = (a, _llama(tmp, size, perturb=2))
        out["renamed"][size] = (a, _llama(tmp, size, renamed=True))
        out["plain"][size] = (_chain(tmp, 250 * size), small_chain)
    return out


@pytest.mark.parametrize("path", ["values", "renamed", "plain"])
def test_diff_work_is_linear(pairs: dict[str, dict[int, tuple[ModelIndex, ModelIndex]]], path: str):
    by_size = pairs[path]
    count_calls(lambda: diff_models(*by_size[1]))
    small = count_calls(lambda: diff_models(*by_size[SMALL]))
    large = count_calls(lambda: diff_models(*by_size[SMALL * FACTOR]))
    ratio = large / small
    print(f"{path}: {small} -> {large} calls, {ratio:.2f}x")
    assert ratio <= LIMIT, f"{path}: {FACTOR}x the size cost {ratio:.1f}x the work ({small} -> {large} calls)"


def test_the_paths_find_what_they_should(pairs: dict[str, dict[int, tuple[ModelIndex, ModelIndex]]]):
    """The pairs exercise what their names say (so the ratios above measure those paths)."""
    values = diff_models(*pairs["values"][SMALL])
    assert [c.kind for c in values.changes] == ["value_changed"]  # the perturbed epsilon, at 2 sites
    assert len(values.changes[0].sites) == 2 and values.changes[0].family == "aten::add"
    a, b = pairs["renamed"][SMALL]
    assert all(x != y for x, y in zip(a.proto.graph.node, b.proto.graph.node))  # no node is equal as a whole
    assert diff_models(a, b).equal
    plain = diff_models(*pairs["plain"][SMALL])
    assert plain.matched["nodes"].matched == 10
    assert plain.counts()["node_removed"] == plain.matched["nodes"].only_a > 0
