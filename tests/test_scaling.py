"""Every pass over calls is linear: the work of summary, report, diff, search and fold on an 8x replica of a
real export is at most ~8x the work on the 1x replica.

Work is counted, not timed: the number of Python function calls (``sys.setprofile`` "call" and "c_call"
events) made by one operation, so the figure is the same on every machine. The replicas are built in this
process from the zoo's dynamo Llama by ``benchmarks/replicate.py`` (its first decoder layer copied 8 and 64
times, each copy a distinct set of aten calls in its own ``model.layers.K``). A list-membership test over a
family's calls (``m in members``, a dataclass ``__eq__`` per element) makes the ratio grow with the size, and
this test fail.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest

from inspector.core.bodies.body import group_body
from inspector.core.bodies.bodykey import group_key
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.diff.run import diff_models
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.search import SearchIndex
from inspector.core.summary import summary_dict
from inspector.report.build import build_report
from inspector.report.render import render_text
from tests.builders import count_calls, count_lines
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from replicate import externalise, replicate

LLAMA = ROOT / "tests" / "zoo" / "llama_gqa.onnx"
SMALL, FACTOR = 8, 8
# 8x the layers may cost at most this many times the work (fixed costs make linear passes come out below 8)
LIMIT = 8.5


def _build(tmp: Path, copies: int, perturb: int = 0) -> ModelIndex:
    model = replicate(onnx.load(str(LLAMA), load_external_data=False), copies, perturb)
    out = tmp / f"llama_{copies}_{perturb}.onnx"
    externalise(model, out, location=f"llama_{copies}.weights.bin")  # A and B share their weights
    onnx.save(model, str(out))
    return open_index(out)




@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[ModelIndex, ModelIndex]]:
    """Index pairs (A, B with a few values changed) by number of copies; 2 copies only warm shared caches."""
    tmp = tmp_path_factory.mktemp("replicas")
    return {n: (_build(tmp, n), _build(tmp, n, perturb=2)) for n in (2, SMALL, SMALL * FACTOR)}


OPERATIONS: dict[str, Callable[[ModelIndex, ModelIndex], object]] = {
    "summary": lambda a, _b: summary_dict(a, specialisation=True),
    "report": lambda a, _b: render_text(build_report(a, graphs=False), "html"),
    "diff": lambda a, b: diff_models(a, b),
    # as diff_files makes it: B indexed with A's index at hand (core.model.scan_like), its cut taking over from A's
    "diff, B indexed like A": lambda a, b: diff_models(a, open_index(b.path, False, like=a)),
    "search": lambda a, _b: [SearchIndex(a).search(q) for q in ("transpose", "layers.3.mlp", "node_MatMul")],
    "fold": lambda a, _b: fold_model(a),
}


def test_replicas_are_distinct_calls_of_distinct_modules(replicas: dict[int, tuple[ModelIndex, ModelIndex]]) -> None:
    small, big = replicas[SMALL][0], replicas[SMALL * FACTOR][0]
    per_layer = (len(big.provenance.calls) - len(small.provenance.calls)) // (SMALL * (FACTOR - 1))
    assert len(big.provenance.calls) == len(small.provenance.calls) + per_layer * SMALL * (FACTOR - 1)
    names = [c.name for c in big.provenance.calls]
    assert len(set(names)) == len(names)
    model = big.provenance.module_root.children["model"]
    assert [p for p in model.children if p.startswith("model.layers.")] == \
        [f"model.layers.{k}" for k in range(SMALL * FACTOR)]
    assert {c.module_path.split(".")[2] for c in big.provenance.calls if c.module_path.startswith("model.layers.")} \
        == {str(k) for k in range(SMALL * FACTOR)}
    onnx.checker.check_model(str(big.path))


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_work_grows_linearly_with_the_model(op: str, replicas: dict[int, tuple[ModelIndex, ModelIndex]]) -> None:
    fn = OPERATIONS[op]
    a1, b1 = replicas[SMALL]
    a8, b8 = replicas[SMALL * FACTOR]
    fn(*replicas[2])  # warm what all models share (schema catalogue, templates) on a third model
    small, big = count_calls(lambda: fn(a1, b1)), count_calls(lambda: fn(a8, b8))
    assert big <= LIMIT * small, f"{op}: {big:,} calls on {FACTOR}x the layers, {small:,} on 1x ({big / small:.1f}x)"


ZOO_AND_FIXTURES = [*sorted((ROOT / "tests" / "zoo").glob("*.onnx")),
                    *sorted((ROOT / "tests" / "fixtures").glob("*.onnx"))]


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_calls_with_equal_group_keys_have_equal_bodies(path: Path) -> None:
    """The specialiser builds one body per group key; that is only sound if equal keys mean equal fingerprints."""
    index = open_index(path)
    maps = GraphMaps(index.proto.graph)
    by_key: dict[object, set[str]] = {}
    fingerprints: set[str] = set()
    for call in index.provenance.calls:
        key = group_key(call, maps)
        if key is None:
            continue
        fp = fingerprint(group_body(call, maps)).full
        by_key.setdefault(key, set()).add(fp)
        fingerprints.add(fp)
    assert all(len(fps) == 1 for fps in by_key.values())
    assert len(by_key) <= 2 * len(fingerprints) + 2  # strict, but not so strict that nothing is shared


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_the_main_graph_maps_skip_looking_for_subgraphs_only_where_there_are_none(path: Path) -> None:
    """``ModelIndex.graph_maps`` does not look at nodes for subgraphs when the op histogram says none can hold one;
    what it records must be what looking at every node finds."""
    index = open_index(path)
    looked = GraphMaps(index.proto.graph)
    maps = index.graph_maps()
    assert maps.captured == looked.captured
    assert (maps.inputs, maps.outputs, maps.read_count) == (looked.inputs, looked.outputs, looked.read_count)
    if any(n.op_type in ("If", "Loop", "Scan") for n in index.proto.graph.node):
        assert not index.flat_main and maps.captured


@pytest.mark.parametrize("name", ["llama_gqa", "gpt2", "bert", "t5"])
def test_each_initializer_is_looked_at_once_however_many_calls_read_it(name: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether an initializer is small enough to be a baked-in value is decided once per tensor, not per call."""
    from inspector.core.model import graph

    index = open_index(ROOT / "tests" / "zoo" / f"{name}.onnx")
    looked: list[str] = []
    real = graph.is_small_constant
    monkeypatch.setattr(graph, "is_small_constant", lambda t: (looked.append(t.name), real(t))[1])
    summary_dict(index)
    graph = index.proto.graph
    assert sorted(looked) == sorted({t.name for t in graph.initializer})
    assert index.graph_maps().small_constants == {t.name for t in graph.initializer if real(t)}
    reads = sum(1 for n in graph.node for x in n.input if x in index.graph_maps().initializers)
    assert reads > len(looked)  # calls read initializers more often than there are initializers


def _renamed_calls(index: ModelIndex, tmp: Path) -> Path:
    """A copy of ``index``'s model where 2 nodes in 5 carry renamed FX nodes: a second model of a diff with many
    nodes unequal to the first's (each a call that was and one that now is), but not so many that it gets a scan of
    its own."""
    model = onnx.load(str(index.path), load_external_data=False)
    for i, node in enumerate(model.graph.node):
        if i % 5 >= 2:
            continue
        for p in node.metadata_props:
            if p.key == "pkg.torch.onnx.fx_node" and p.value.startswith("%"):
                p.value = "%x_" + p.value[1:]
    out = tmp / f"{index.path.stem}_renamed.onnx"
    onnx.save(model, str(out))
    return out


def test_an_index_made_like_another_grows_linearly_with_the_nodes_that_differ(
        replicas: dict[int, tuple[ModelIndex, ModelIndex]], tmp_path: Path) -> None:
    """``open_index(B, like=A)`` reads again only the nodes that differ from A's; with many of them, its work must
    still be linear (a pass over the differing nodes per call they touch is not: it ran 6 s on a 30k-node replica
    whose own scan takes 0.2 s). Lines are counted, not calls: that pass was a generator expression's filter."""
    a1, a8 = replicas[SMALL][0], replicas[SMALL * FACTOR][0]
    b1, b8 = _renamed_calls(a1, tmp_path), _renamed_calls(a8, tmp_path)
    like = open_index(b8, False, like=a8)
    assert like.followed is a8 and like.unequal is not None and len(like.unequal) > len(like.proto.graph.node) // 3
    open_index(_renamed_calls(replicas[2][0], tmp_path), False, like=replicas[2][0])  # warm shared caches
    small = count_lines(lambda: open_index(b1, False, like=a1))
    big = count_lines(lambda: open_index(b8, False, like=a8))
    assert big <= LIMIT * small, f"{big:,} lines on {FACTOR}x the layers, {small:,} on 1x ({big / small:.1f}x)"
