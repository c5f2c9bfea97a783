"""What makes template matching fast (``core.model.recognise``) changes nothing it finds: the index of template groups
by their last node's key and what makes each operand (``Matcher._groups``), the templates one of whose nodes the graph
lacks, and the one-node verdict found once per node signature (``recognise_nodes``) give exactly the calls that trying
every template at every node gives, on every stripped dynamo export of the zoo. And the work is linear in the
catalogue too: templates that are tried and never fit cost what they add, not a pass over the graph each.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

from inspector.core.aten.templates import SMALL_TENSOR, Slot, Template, canonical_tensor, load_templates
from inspector.core.model.graph import GraphMaps
from inspector.core.model.recognise import Matcher, onnx_opset
from inspector.core.model.recognise_constants import GraphConstants
from inspector.core.model.recognise_nodes import NodeSignatures, node_keys
from tests.builders import count_calls
from tests.conftest import ROOT
from tests.stripping import strip, stripped_model, zoo_dynamo

ZOO = ROOT / "tests" / "zoo"


class Forgetful(dict[Any, Any]):
    """A cache that keeps nothing."""

    def __setitem__(self, key: object, value: object) -> None:
        pass


class EveryTemplate(Matcher):
    """The matcher with no index and no cache: every group of templates is tried at every node (larger ones first,
    as the index orders them; the multi-node ones in the first pass, none dropped by the nodes feeding the last one),
    every node's one-node match is made anew, and every call's arguments read back anew (no verdict kept)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._verdicts = Forgetful()

    def _groups(self, g: int, single: bool = False) -> list[list[Template]]:
        groups = [group for by_key in self.by_sink.values() for group in by_key if single or len(group[0].nodes) > 1]
        return sorted(groups, key=lambda group: (-len(group[0].nodes), group[0].name))

    def _alike(self, sid: int) -> bool:
        return False

    def _feeders(self, g: int, groups: list[list[Template]]) -> list[list[Template]]:
        return groups


def _stripped(path: Path) -> onnx.ModelProto:
    return stripped_model(path)


def _found(matcher: Matcher) -> list[tuple[object, ...]]:
    return [(r.nodes, r.templates, r.candidates, r.arguments) for r in matcher.run()]


@pytest.mark.parametrize("path", zoo_dynamo(), ids=lambda p: p.stem)
def test_the_index_and_the_signatures_find_what_every_template_at_every_node_finds(path: Path) -> None:
    model = _stripped(path)
    graph, templates = model.graph, load_templates()
    opset = onnx_opset(model)  # (the attributes left out at their defaults filled in, as the index matches)
    assert opset is not None
    fast = _found(Matcher(graph, GraphMaps(graph), set(), templates, opset))
    slow = _found(EveryTemplate(graph, GraphMaps(graph), set(), templates, opset))
    assert fast == slow
    assert fast, path.stem  # (every dynamo export of the zoo has calls the templates find)


def test_nodes_of_one_signature_share_key_attributes_and_constants() -> None:
    """Nodes of one signature have one op type and attributes, absent operands and constant operands at the same
    places, constants equal as the matcher compares them, and repeated operands alike: the stripped Llama export's
    137 nodes are 46 signatures (its two decoder layers alike), the first node of each standing for it."""
    model = _stripped(ZOO / "llama_gqa.onnx")
    graph = model.graph
    maps = GraphMaps(graph)
    keys, kinds, full = node_keys(graph, maps)
    signatures = NodeSignatures(maps, kinds, full, GraphConstants(graph, maps, set(), keys))
    assert len(signatures.of) == len(graph.node)
    by_signature: dict[int, list[int]] = {}
    for g, sid in enumerate(signatures.of):
        by_signature.setdefault(sid, []).append(g)
    for sid, members in by_signature.items():
        assert signatures.first[sid] == members[0]
        first = graph.node[members[0]]
        for g in members[1:]:
            node = graph.node[g]
            assert (node.op_type, list(node.attribute)) == (first.op_type, list(first.attribute))
            assert len(node.input) == len(first.input) and len(node.output) == len(first.output)
            for a, b in zip(node.input, first.input):
                assert (a == "") == (b == "")
                assert (a in maps.initializers) == (b in maps.initializers)
                if a in maps.initializers:  # compared as the matcher compares them (a weight by type and shape)
                    assert canonical_tensor(maps.initializers[a]) == canonical_tensor(maps.initializers[b])
                    if maps.initializers[a].data_location != onnx.TensorProto.EXTERNAL \
                            and math.prod(maps.initializers[a].dims) <= SMALL_TENSOR:
                        assert onnx.numpy_helper.to_array(maps.initializers[a]).tolist() \
                            == onnx.numpy_helper.to_array(maps.initializers[b]).tolist()
            assert (len(set(node.input)) == len(node.input)) == (len(set(first.input)) == len(first.input))
    assert (len(graph.node), len(by_signature)) == (137, 46)


def _never_fitting(templates: tuple[Template, ...]) -> list[Template]:
    """Each multi-node template again, with a fixed literal that no export holds: tried where the original is,
    failing deep in the body (a fixed attribute of the node before the last given another value, else a float
    constant of that node fixed to one)."""
    out = []
    for t in templates:
        if len(t.nodes) < 2:
            continue
        nodes, constants = list(t.nodes), list(t.constants)
        n = nodes[-2]
        fixed = [(name, slot) for name, slot in n.attributes if not slot.masked]
        consts = [r.a for r in n.inputs if r.kind == "c"]
        if fixed:
            nodes[-2] = dataclasses.replace(n, attributes=tuple(
                (name, Slot(value=["never", slot.value]) if not slot.masked else slot) for name, slot in n.attributes))
        elif consts:
            constants[consts[0]] = Slot(value={"t": 1, "s": [], "v": [-1234.5]})
        else:
            continue
        out.append(dataclasses.replace(t, name=t.name.replace("#", "#never"), nodes=tuple(nodes),
                                       constants=tuple(constants)))
    return out


class Counting(Matcher):
    """The matcher, counting its tries of a template at a node."""

    tries = 0

    def _match(self, t: Template, anchor: int, least: int = 2, reuse: bool = False) -> Any:
        Counting.tries += 1
        return super()._match(t, anchor, least, reuse)


def test_templates_that_never_fit_cost_what_they_add() -> None:
    """Matching the stripped 8x Llama replica (``benchmarks/replicate.py``, 64 layers) with the catalogue and with
    each multi-node template again, changed so that it is tried where the original is and never fits: the same
    calls, more tries, and at most 1.5x the Python calls (counted, not timed: a pass over the graph per template
    would be ~100x)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from replicate import replicate

    model = replicate(onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False), 64)
    strip(model)
    graph = model.graph
    templates = load_templates()
    bigger = templates + tuple(_never_fitting(templates))
    found: dict[int, list[tuple[int, ...]]] = {}
    tries: dict[int, int] = {}

    def run(catalogue: tuple[Template, ...]) -> None:
        Counting.tries = 0
        found[len(catalogue)] = [r.nodes for r in Counting(graph, GraphMaps(graph), set(), catalogue).run()]
        tries[len(catalogue)] = Counting.tries

    run(templates)  # (the catalogue's own preparation, once per catalogue, is not what is compared)
    run(bigger)
    once, more = count_calls(lambda: run(templates)), count_calls(lambda: run(bigger))
    print(f"\nmatching the stripped 8x replica: {once:,} calls and {tries[len(templates)]:,} tries with "
          f"{len(templates)} templates, {more:,} calls and {tries[len(bigger)]:,} tries with {len(bigger)} "
          f"({more / once:.2f}x)")
    assert found[len(templates)] == found[len(bigger)] and found[len(bigger)]
    assert tries[len(bigger)] > tries[len(templates)]
    assert more <= 1.5 * once, f"{more:,} calls with the never-fitting templates, {once:,} without"
