"""A selective scan recognised by body template, against torch: ``tests/evidence/scan_steps.onnx``
(``scripts/evidence_cases.py``'s ``ScanSteps``: Mamba's slow path, a softplus time step and one ``stack`` of the six
positions' states), stripped of its metadata.

Both calls went unrecognised on a stripped Mamba. ``stack``'s template, from a one-op export of two tensors, was two
Unsqueezes and a Concat of two; a model stacks any number (``list_template``: one node per tensor, alike, and a last
node reading each one's output). ``softplus`` at its default ``beta`` loses its Mul and Div by 1 to the optimizer,
and that body (Softplus, Greater, Where) was left out of the catalogue with the bodies only a default makes that are
chains of lone calls (``gen_templates.chained``), though no overload lowers to a lone Softplus. And ``nn.ELU()``, every
number at its default, is one Elu, which no one-op export made.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from inspector.core.aten.templates import list_template, load_templates, template_named
from inspector.core.model.index import open_index
from inspector.core.model.signature import call_signature
from tests.conftest import ROOT
from tests.stripping import stripped_file

EXPORT = ROOT / "tests" / "evidence" / "scan_steps.onnx"
TRUTH = json.loads((ROOT / "tests" / "evidence" / "scan_steps.truth.json").read_text(encoding="utf-8"))


def _by_target(path: Path) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in open_index(path).provenance.calls:
        out.setdefault(c.target, []).append(c)
    return out


def test_the_stack_of_six_states_is_one_call_with_its_tensors_and_dim(tmp_path: Path) -> None:
    truth = TRUTH["stack"]
    (original,) = _by_target(EXPORT)["aten::stack"]
    (call,) = _by_target(stripped_file(EXPORT, tmp_path))["aten::stack"]
    assert call.recognised == (f"aten::stack#0[{truth['tensors']}]", f"aten::stack#1[{truth['tensors']}]")
    assert call.node_paths == original.node_paths and len(call.node_paths) == truth["tensors"] + 1
    bound = {b.parameter.name: b.value for b in call_signature(call).bound}
    assert bound["dim"] == truth["dim"]
    # each stacked tensor bound to the value the metadata's call reads, in order
    assert [str(t) for t in bound["tensors"]] == [str(t) for t in original.fx.args[0]]


def test_softplus_at_its_default_beta_is_recognised_with_its_threshold(tmp_path: Path) -> None:
    truth = TRUTH["softplus"]
    (original,) = _by_target(EXPORT)["aten::softplus"]
    (call,) = _by_target(stripped_file(EXPORT, tmp_path))["aten::softplus"]
    assert call.recognised == ("aten::softplus#1",)
    assert call.node_paths == original.node_paths
    nodes = onnx.load(EXPORT).graph.node
    assert [nodes[p[0]].op_type for p in call.node_paths] == ["Softplus", "Greater", "Where"]
    bound = {b.parameter.name: b.value for b in call_signature(call).bound}
    assert bound["threshold"] == truth["threshold"] and bound["beta"] == truth["beta"]


def test_elu_at_its_defaults_is_one_elu_recognised_with_its_alpha(tmp_path: Path) -> None:
    """``nn.ELU()``: every number at its default at once is one Elu; the one-op exports had each default alone, each
    body leaving the Mul by the other (``evidence_cases.plan``'s ``#defaults``)."""
    truth = TRUTH["elu"]
    (original,) = _by_target(EXPORT)["aten::elu"]
    (call,) = _by_target(stripped_file(EXPORT, tmp_path))["aten::elu"]
    (name,) = call.recognised
    template = template_named(name)
    assert template is not None and [n.op_type for n in template.nodes] == ["Elu"]
    assert call.node_paths == original.node_paths
    assert onnx.load(EXPORT).graph.node[call.node_paths[0][0]].op_type == "Elu" and len(call.node_paths) == 1
    bound = {b.parameter.name: b.value for b in call_signature(call).bound}
    assert bound["alpha"] == truth["alpha"]


def test_every_call_of_the_stripped_export_is_the_metadatas(tmp_path: Path) -> None:
    def calls(path: Path) -> list[tuple[str, tuple]]:
        return sorted((c.target, tuple(c.node_paths)) for c in open_index(path).provenance.calls)

    assert calls(stripped_file(EXPORT, tmp_path)) == calls(EXPORT)


def test_a_stack_template_at_another_length_is_one_node_per_tensor() -> None:
    stacks = [t for t in load_templates() if t.target == "aten::stack"]
    assert stacks and all(list_template(t) for t in stacks)
    shared = template_named("aten::stack#0[8]")
    assert shared is not None and [n.op_type for n in shared.nodes] == ["Unsqueeze"] * 8 + ["Concat"]
    assert len(shared.constants) == 1 and shared.tensors == ("tensors",) * 8
    assert [r.a for n in shared.nodes[:8] for r in n.inputs if r.kind == "x"] == list(range(8))
    own = template_named("aten::stack#1[3]")  # (each Unsqueeze its own axes: copied for each tensor)
    assert own is not None and len(own.constants) == 3
    assert [r.a for n in own.nodes[:3] for r in n.inputs if r.kind == "c"] == [0, 1, 2]
    assert template_named("aten::softplus#1[3]") is None


def test_a_stack_whose_unsqueezes_differ_gives_no_dim(tmp_path: Path) -> None:
    """One position's Unsqueeze along another axis (a crafted file: torch writes one ``dim`` into every node): no
    body of stack's whose nodes share their axes, and the one whose nodes each read their own gives no ``dim``, where
    its places read two values, rather than the first one's."""
    model = onnx.load(stripped_file(EXPORT, tmp_path))
    (stack,) = _by_target(stripped_file(EXPORT, tmp_path))["aten::stack"]
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([2], dtype=np.int64), "other_axes"))
    model.graph.node[stack.node_paths[0][0]].input[1] = "other_axes"
    path = tmp_path / "odd.onnx"
    onnx.save(model, path)
    (odd,) = _by_target(path)["aten::stack"]
    assert odd.recognised == ("aten::stack#1[6]",)
    bound = {b.parameter.name: b.value for b in call_signature(odd).bound}
    assert bound["dim"] is None and "dim" not in odd.fx.kwargs  # (unknown, not the default 0)


@pytest.mark.parametrize("length", [1, 3, 12])
def test_stacks_of_any_length_in_a_crafted_graph(length: int) -> None:
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [2, 3]) for k in range(length)]
    axes = onnx.numpy_helper.from_array(np.array([1], dtype=np.int64), "val_axes")
    # (values made inside the call named as the exporter names them: ``val_<n>``, not as lone calls' outputs)
    nodes = [helper.make_node("Unsqueeze", [f"x{k}", "val_axes"], [f"val_{k}"]) for k in range(length)]
    nodes += [helper.make_node("Concat", [f"val_{k}" for k in range(length)], ["stack"], axis=1),
              helper.make_node("Relu", ["stack"], ["out"])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                              initializer=[axes])
    model = helper.make_model(graph, producer_name="pytorch", ir_version=10,
                              opset_imports=[helper.make_opsetid("", 18)])
    from inspector.core.model.graph import GraphMaps
    from inspector.core.model.recognise import onnx_opset, recognise

    found = recognise(model.graph, GraphMaps(model.graph, flat=True), set(), load_templates(), onnx_opset(model))
    stacks = [r for r in found if r.candidates == ("aten::stack",)]
    assert len(stacks) == 1 and stacks[0].nodes == tuple(range(length + 1))
    assert dict(stacks[0].arguments)["dim"] == 1
