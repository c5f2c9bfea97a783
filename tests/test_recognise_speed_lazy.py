"""A recognised call makes its FX name and text when read (``recognise_call.RecognisedCall``), and says what a call made
with every field said: ``recognised_<k>`` for the k-th call in graph order, an FX text that the FX parser reads back to
that name and target, the main graph's scope, no rule names, an empty name-scopes text (a second index made like the
first reads it: ``scan_like``); and ``dataclasses.replace`` gives a call equal to it, or holding what it was given.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import onnx

from inspector.core.model.fx import parse_fx_node
from inspector.core.model.graph import GraphMaps
from inspector.core.model.keys import MAIN
from inspector.core.model.recognise import recognised_calls
from inspector.core.model.recognise_call import RecognisedCall
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from strip_metadata import strip


def test_a_recognised_call_reads_as_a_call_made_with_every_field() -> None:
    model = onnx.load(str(ROOT / "tests" / "zoo" / "gpt2.onnx"), load_external_data=False)
    strip(model)
    calls = recognised_calls(model, [], GraphMaps(model.graph, flat=True))
    assert len(calls) > 50
    for k, call in enumerate(calls):
        # named as its output's name says torch named it (``recognise_names``), else by its number
        out = [v for p in call.node_paths for v in model.graph.node[p[0]].output]
        assert type(call) is RecognisedCall and (call.name in out or call.name == f"recognised_{k}")
        assert call.fx_text.startswith(f"%{call.name} : [num_users=1] = call_function[target={call.raw_target}]"
                                       "(args = (), kwargs = {")
        fx = parse_fx_node(call.fx_text)
        assert fx is not None and fx.name == call.name and fx.target == call.raw_target
        # (the rewriter's rules only where a fused template made it: gpt2's views of views, its Conv1Ds' Gemms without
        # their bias of zeros, ``Template.rules``)
        assert call.scope == MAIN and call.scopes_text == ""
        fused = {"aten::view#1": ("ReshapeReshape",), "aten::addmm#1": ("RemoveOptionalBiasFromGemm",)}
        assert call.rule_names == next((fused[n] for n in call.recognised if n in fused), ())
        assert call.first_node is model.graph.node[call.node_paths[0][0]]
    one = next(c for c in calls if c.fx is not None and c.fx.kwargs)  # (one with arguments given back)
    assert replace(one) == one and replace(one).fx_text == one.fx_text and replace(one).fx == one.fx
    other = replace(one, name="renamed", fx_text="%renamed : text")
    assert (other.name, other.fx_text, other.target, other.node_paths) == ("renamed", "%renamed : text", one.target,
                                                                           one.node_paths)
    assert other.first_node is one.first_node and other != one


def test_a_one_node_call_makes_its_paths_when_read_and_a_longer_one_holds_them() -> None:
    """Paths equal at every read, in graph order, each node one call's; a one-node call's a list a reader may keep or
    change without changing the call's."""
    model = onnx.load(str(ROOT / "tests" / "zoo" / "llama_gqa.onnx"), load_external_data=False)
    strip(model)
    calls = recognised_calls(model, [], GraphMaps(model.graph, flat=True))
    ones = [c for c in calls if len(c.node_paths) == 1]
    longer = [c for c in calls if len(c.node_paths) > 1]
    assert len(ones) > 50 and len(longer) > 5
    taken = sorted(p[0] for c in calls for p in c.node_paths)
    assert len(taken) == len(set(taken))  # (a node is one call's)
    for call in ones:
        paths = call.node_paths
        assert paths == call.node_paths and isinstance(paths, list)
        assert len(paths[0]) == 1 and call.first_node is model.graph.node[paths[0][0]]
        paths.append((0,))
        assert len(call.node_paths) == 1
    for call in longer:
        assert call.node_paths == call.node_paths and [p[0] for p in call.node_paths] == sorted(
            p[0] for p in call.node_paths) and all(len(p) == 1 for p in call.node_paths)
        assert call.first_node is model.graph.node[call.node_paths[0][0]]
