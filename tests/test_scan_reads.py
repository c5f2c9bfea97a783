"""The main graph's nodes as the index's scan reads them (``scan.MainReads``), which the graph maps and the group keys
take over instead of reaching each node again, are what reading the nodes gives: the same inputs, outputs, read
counts and group keys (and so the same bodies) on every export of the zoo and every fixture. A caller asks for them
(``open_index(maps=True)``: the commands that specialise or fold)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.core.bodies.bodykey import group_keys, group_shapes
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import open_index
from tests.conftest import FIXTURES, ZOO
from tests.stripping import stripped_file, zoo_dynamo

_MODELS = sorted(ZOO.glob("*.onnx")) + sorted(FIXTURES.glob("*.onnx"))


@pytest.mark.parametrize("path", _MODELS, ids=lambda p: p.name)
def test_the_scans_reads_are_the_nodes_own(path: Path):
    assert open_index(path)._read is None  # (by default the scan reads no more: an in-process caller's collector)
    index = open_index(path, maps=True)
    maps = index.graph_maps()
    graph = index.proto.graph
    assert maps.fields is not None and len(maps.fields) == len(graph.node)  # taken over from the scan
    plain = GraphMaps(graph, flat=index.flat_main)  # read from the nodes
    assert plain.fields is None
    assert maps.inputs == plain.inputs and maps.outputs == plain.outputs and maps.read_count == plain.read_count
    for node, (domain, op, overload, blob) in zip(graph.node, maps.fields, strict=True):
        assert (domain, op, overload) == (node.domain, node.op_type, node.overload)
        assert blob == (None if op == "Constant" else tuple(a.SerializeToString() for a in node.attribute))
    calls = index.provenance.calls
    assert group_keys(calls, maps) == group_keys(calls, plain)
    assert group_shapes(calls, maps) == group_shapes(calls, plain)


@pytest.mark.parametrize("path", zoo_dynamo(), ids=lambda p: p.name)
def test_a_stripped_export_is_recognised_alike_from_the_scans_reads(path: Path, tmp_path: Path):
    """Without metadata, the nodes the matcher keys (``ScanResult.bare``) come from the same reads: the same calls,
    with the same templates and nodes, either way."""
    stripped = stripped_file(path, tmp_path)
    read, plain = open_index(stripped, maps=True), open_index(stripped)
    assert read._maps is not None and read._maps.fields is not None and plain._maps is not None
    assert plain._maps.fields is None
    found = [(c.target, c.recognised, c.candidates, c.node_paths) for c in read.provenance.calls]
    assert found == [(c.target, c.recognised, c.candidates, c.node_paths) for c in plain.provenance.calls]
    assert read.provenance.recognised == plain.provenance.recognised > 0


@pytest.mark.parametrize("path", _MODELS, ids=lambda p: p.name)
def test_the_values_alone_are_the_nodes_own_and_maps_take_them(path: Path):
    """``build_index(node_io=True)`` (the diff's first side): each node's inputs and outputs alone, no fields; the
    graph maps take them over and read the fields a key needs from the nodes."""
    from inspector.core.model.index import build_index
    from inspector.core.model.loader import load_model

    index = build_index(load_model(path), modules=False, node_io=True)
    graph = index.proto.graph
    io = index.node_io()
    again = index.node_io()
    assert io is not None and again is not None and again[0] is io[0]  # (the same lists: made once, by the scan)
    assert io == ([list(n.input) for n in graph.node], [list(n.output) for n in graph.node])
    maps = index.graph_maps()
    assert maps.fields is None and maps.inputs is io[0] and maps.outputs is io[1]  # (taken over, not read again)
    plain = GraphMaps(graph, flat=index.flat_main)
    assert maps.read_count == plain.read_count
    calls = index.provenance.calls
    assert group_keys(calls, maps) == group_keys(calls, plain)


def test_a_diff_reads_the_first_sides_values_from_its_scan_and_finds_the_same_changes(tmp_path: Path):
    """The pair of cuts takes the first side's producers and readers from what its scan read (``ModelIndex.node_io``):
    the same changes as a diff that reads them from the nodes, on the zoo's pairs of exports that differ in a value."""
    from inspector.core.diff.run import diff_files, diff_models
    from inspector.core.model.index import build_index
    from inspector.core.model.loader import load_model

    for a, b in (("pair_heads_a", "pair_heads_b"), ("pair_scale_a", "pair_scale_b"), ("gpt2", "gpt2_dynamic")):
        pa, pb = ZOO / f"{a}.onnx", ZOO / f"{b}.onnx"
        read = diff_files(pa, pb)
        ia = build_index(load_model(pa), modules=False)
        assert ia._read is None  # (nothing read for the pair: it reads the nodes)
        plain = diff_models(ia, build_index(load_model(pb), modules=False, like=ia))
        assert [c.to_json() for c in read.changes] == [c.to_json() for c in plain.changes] and read.changes
