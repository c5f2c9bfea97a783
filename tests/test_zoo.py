"""The zoo (tests/zoo/): real torch 2.13 exports, each with a ground truth computed from torch.

No torch here: the truth files were written by scripts/gen_zoo.py. tests/zoo/README.md documents what each
truth file holds and which comparison rule applies; the rules are restated beside each test.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import numpy_helper

from inspector.cli import main
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.model.module_tree import ModuleNode
from inspector.core.summary import summary_dict
from tests.conftest import torch_module

ZOO = Path(__file__).resolve().parent / "zoo"
NAMES = sorted(p.name[: -len(".truth.json")] for p in ZOO.glob("*.truth.json"))
KINDS = ("dynamo", "dynamo-noopt", "torchscript-functions", "torchscript")
MAX_FILE = 1_000_000
MAX_TOTAL = 12_000_000

# Discrepancies between our summary and the truth that are not fixed yet: (model, test) -> reason.
KNOWN: dict[tuple[str, str], str] = {}


@cache
def truth(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ZOO / f"{name}.truth.json").read_text())
    return data


@cache
def index(name: str) -> ModelIndex:
    return open_index(ZOO / f"{name}.onnx")


@cache
def summary(name: str) -> dict[str, Any]:
    """The summary's counts (no specialisation analysis: it does not change any count)."""
    return summary_dict(index(name), specialisation=False)


def names_of(*kinds: str, test: str = "") -> list[Any]:
    """Zoo models of these kinds; a KNOWN discrepancy for (model, test) marks that case xfail(strict)."""
    out = []
    for n in NAMES:
        if truth(n)["kind"] in kinds:
            reason = KNOWN.get((n, test))
            out.append(pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=reason)) if reason else n)
    return out


DYNAMO = names_of("dynamo", "dynamo-noopt")


def emitting(t: dict[str, Any]) -> list[dict[str, Any]]:
    """FX nodes named in at least one ONNX node's fx_node metadata (`onnx_nodes`, read with plain onnx)."""
    return [f for f in t["fx_nodes"] if f["onnx_nodes"] > 0]


# ------------------------------------------------------------------------------------------------
# the zoo itself
# ------------------------------------------------------------------------------------------------


def test_zoo_is_complete_and_small():
    onnx_files = sorted(p.stem for p in ZOO.glob("*.onnx"))
    assert onnx_files == NAMES, "every export has a truth file and every truth file an export"
    assert len(NAMES) >= 16
    assert {truth(n)["kind"] for n in NAMES} == set(KINDS)
    assert sum(truth(n)["kind"] == "dynamo-noopt" for n in NAMES) >= 3
    sizes = {n: (ZOO / f"{n}.onnx").stat().st_size for n in NAMES}
    assert max(sizes.values()) < MAX_FILE, sizes
    assert sum(sizes.values()) <= MAX_TOTAL
    for n in NAMES:
        t = truth(n)
        assert t["versions"]["torch"].startswith("2.13.")
        assert t["onnx"]["bytes"] == sizes[n], f"{n}: the export changed after its truth was written"
        assert t["onnx"]["opsets"][""] == t["opset"] == 20
        if "pair" in t:
            other = truth(t["pair"]["other"])
            assert other["pair"]["other"] == n and other["pair"]["hyperparameter"] == t["pair"]["hyperparameter"]


@pytest.mark.parametrize("name", NAMES)
def test_summary_json_loads_every_model(name: str, capsys):
    """The real command on every model; facts equal what the generator saw."""
    assert main(["summary", "--json", str(ZOO / f"{name}.onnx")]) == 0
    data = json.loads(capsys.readouterr().out)
    t = truth(name)
    m = data["model"]
    assert m["node_count"] == t["onnx"]["main_graph_nodes"]
    assert m["function_count"] == t["onnx"]["functions"]
    assert m["opsets"][""] == t["opset"]
    assert [i["name"] if isinstance(i, dict) else i for i in m["inputs"]] == [
        i["name"] for i in t["inputs"] if i["name"] in t["onnx"]["graph_inputs"]]
    assert data["findings"] == []
    # the CLI and the core summary agree on the counts the other tests compare
    assert data["aten_targets"] == summary(name)["aten_targets"]


# ------------------------------------------------------------------------------------------------
# dynamo exports: aten targets and module paths against the FX graph
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DYNAMO)
def test_aten_target_counts_equal_the_fx_graph(name: str):
    """Rule A (every dynamo export): the summary's calls per target equal the number of FX nodes of that target
    that emitted at least one ONNX node, and its nodes per target the ONNX nodes those FX nodes emitted. FX
    targets come from the exporter's own ExportedProgram; `onnx_nodes` per FX node was read with plain onnx."""
    t = truth(name)
    want_calls = Counter(f["target"] for f in emitting(t))
    want_nodes: Counter[str] = Counter()
    for f in emitting(t):
        want_nodes[f["target"]] += f["onnx_nodes"]
    got = {a["target"]: a for a in summary(name)["aten_targets"]}
    assert {k: a["calls"] for k, a in got.items()} == dict(want_calls)
    assert {k: a["nodes"] for k, a in got.items()} == dict(want_nodes)
    # never more calls than the FX graph has
    full = Counter(t["fx_target_counts"])
    assert all(a["calls"] <= full[k] for k, a in got.items())


@pytest.mark.parametrize("name", names_of("dynamo-noopt"))
def test_noopt_counts_equal_the_full_fx_counts_of_lowered_targets(name: str):
    """Rule B (optimize=False): for every FX target that the exporter lowers to at least one ONNX node, the
    summary's call count equals the *full* FX count of that target (nothing is dropped without the optimizer);
    targets none of whose FX nodes emitted (aliases, getitem, sym ops ...) are absent from the summary."""
    t = truth(name)
    lowered = {f["target"] for f in emitting(t)}
    full = Counter(f["target"] for f in t["fx_nodes"])
    want = {k: full[k] for k in lowered}
    got = {a["target"]: a["calls"] for a in summary(name)["aten_targets"]}
    assert got == want


@pytest.mark.parametrize("name", names_of("dynamo"))
def test_optimised_counts_are_bounded_by_the_fx_counts(name: str):
    """Rule C (optimizer on): every target the summary lists is an FX target, with at most its FX count."""
    t = truth(name)
    full = Counter(t["fx_target_counts"])
    got = {a["target"]: a["calls"] for a in summary(name)["aten_targets"]}
    assert got, "an optimised export still has aten calls"
    assert {k: v for k, v in got.items() if v > full[k]} == {}


def module_paths(root: ModuleNode) -> set[str]:
    out: set[str] = set()
    stack = list(root.children.values())
    while stack:
        m = stack.pop()
        out.add(m.path)
        stack.extend(m.children.values())
    return out


@pytest.mark.parametrize("name", DYNAMO)
def test_module_paths_equal_nn_module_stack(name: str):
    """The module tree holds exactly the nn.Module paths (every level of nn_module_stack) of the FX nodes
    that emitted ONNX nodes, and those are module paths of the FX graph."""
    t = truth(name)
    want = {torch_module(p) for f in emitting(t) for p in f["module_stack"]} - {""}
    got = module_paths(index(name).provenance.module_root)
    assert got == want
    assert got <= set(t["module_paths"])


@pytest.mark.parametrize("name", DYNAMO)
def test_each_call_sits_in_the_module_of_its_fx_node(name: str):
    """Per aten call: the module path the summary assigns equals the innermost nn_module_stack entry."""
    t = truth(name)
    want = Counter((f["target"], torch_module(f["module"])) for f in emitting(t))
    got = Counter((c.target, c.module_path) for c in index(name).provenance.calls)
    assert got == want


# ------------------------------------------------------------------------------------------------
# TorchScript exports
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", names_of("torchscript-functions"))
def test_module_functions_have_one_family_per_class_with_its_instance_calls(name: str):
    """Each class in export_modules_as_functions is one function family (domain = the class's module, name =
    its qualname; variants name.1 ... are its overloads) whose calls equal the instances forward calls."""
    t = truth(name)
    fams = {(f["domain"], f["name"]): f for f in summary(name)["families"] if f["kind"] == "function"}
    want = {(mf["domain"], mf["name"]): mf["calls"] for mf in t["module_functions"]}
    assert {k: f["calls"] for k, f in fams.items()} == want
    for mf in t["module_functions"]:
        assert not mf["nested_in_other_function_class"]  # calls are static call sites only when not nested
        fam = fams[(mf["domain"], mf["name"])]
        assert sum(o["calls"] for o in fam["overloads"]) == mf["calls"]
        for o in fam["overloads"]:  # variants `Name`, `Name.1`, ... of the class's function
            fn = o["function"]
            assert fn["domain"] == mf["domain"]
            assert fn["name"] == mf["name"] or fn["name"].startswith(mf["name"] + ".")
    assert summary(name)["aten_targets"] == []


@pytest.mark.parametrize("name", names_of("torchscript-functions"))
def test_module_function_call_sites_carry_each_instance_hyperparameters(name: str):
    """The index's call sites of each module function, in graph order, are the instances in the order forward
    called them: each call passes that instance's eps (Block) or heads (Attention, as the reshape shape
    [1, seq, heads, d/heads]) through its `inferred::` attributes (the body reads them by ref_attr_name)."""
    t = truth(name)
    idx = index(name)
    d, seq = t["config"]["d"], t["inputs"][0]["shape"][1]
    for mf in t["module_functions"]:
        sites = sorted((c for key, cs in idx.functions.calls.items()
                        if key.domain == mf["domain"] and key.name.split(".")[0] == mf["name"] for c in cs),
                       key=lambda c: c.path)
        assert len(sites) == len(mf["instances"])
        for site, inst in zip(sites, mf["instances"]):
            node = idx.proto.graph.node[site.path[0]]
            attrs = {a.name: (numpy_helper.to_array(a.t).tolist() if a.type == onnx.AttributeProto.TENSOR
                              else onnx.helper.get_attribute_value(a)) for a in node.attribute}
            if "eps" in inst:
                assert attrs == {"inferred::LayerNormalization_epsilon": pytest.approx(inst["eps"], rel=1e-6)}
            else:
                shape = [1, seq, inst["heads"], d // inst["heads"]]
                assert attrs and all(v == shape for v in attrs.values()), (inst, attrs)


@pytest.mark.parametrize("name", names_of("torchscript", "torchscript-functions"))
def test_torchscript_op_histogram(name: str):
    """TorchScript has no torch-side grouping: the op histogram read from the file with plain onnx is the truth
    (the summary's histogram is the main graph's; the node total counts function bodies too), and nothing is
    reported as an aten call."""
    t = truth(name)
    got = {(h["domain"], h["op_type"]): h["count"] for h in summary(name)["op_histogram"]}
    want = {(h["domain"], h["op_type"]): h["count"] for h in t["op_histogram_main_from_onnx"]}
    assert got == want
    assert summary(name)["model"]["total_node_count"] == sum(h["count"] for h in t["op_histogram_all_from_onnx"])
    assert summary(name)["aten_targets"] == []
    if t["kind"] == "torchscript":
        assert [f for f in summary(name)["families"] if f["kind"] == "function"] == []


# ------------------------------------------------------------------------------------------------
# pairs
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith("_a") and "pair" in truth(n)])
def test_pairs_differ_in_one_hyperparameter_and_not_in_counts(name: str):
    """Both halves of a pair have the same FX targets with the same counts (the hyperparameter changes values,
    not structure), and the summary agrees on both."""
    t, u = truth(name), truth(truth(name)["pair"]["other"])
    assert t["pair"]["value"] != u["pair"]["value"]
    assert {k: v for k, v in t["config"].items()} != {k: v for k, v in u["config"].items()}
    assert t["fx_target_counts"] == u["fx_target_counts"]
    a = {x["target"]: x["calls"] for x in summary(name)["aten_targets"]}
    b = {x["target"]: x["calls"] for x in summary(u["name"])["aten_targets"]}
    assert a == b


# ------------------------------------------------------------------------------------------------
# values linked to aten arguments
# ------------------------------------------------------------------------------------------------


@cache
def full_summary(name: str) -> dict[str, Any]:
    return summary_dict(index(name))


def torch_arguments(t: dict[str, Any], only_emitting: bool = False) -> dict[tuple[str, str], list[Any]]:
    """(target, parameter) -> the values torch bound to that parameter (explicitly passed) in the FX nodes."""
    out: dict[tuple[str, str], list[Any]] = {}
    for f in emitting(t) if only_emitting else t["fx_nodes"]:
        for param, value in (f["args"] or {}).items():
            out.setdefault((f["target"], param), []).append(value)
    return out


def linked_arguments(name: str) -> dict[tuple[str, str], list[Any]]:
    """(target, parameter) -> the values the summary's specialised values are linked to."""
    out: dict[tuple[str, str], list[Any]] = {}
    for fam in full_summary(name)["families"]:
        for ov in fam["overloads"]:
            for s in ov.get("specialised", ()):
                for a in s["aten_arguments"]:
                    out.setdefault((ov["target"], a["parameter"]), []).append(a["value"])
    return out


@pytest.mark.parametrize("name", DYNAMO)
def test_linked_aten_arguments_are_the_values_torch_bound(name: str):
    """Every (target, parameter, value) the summary links a specialised value to is a value torch's schema
    binding gave that parameter in an FX node of that target (`fx_nodes[].args`, keyed by parameter name)."""
    want = torch_arguments(truth(name))
    got = linked_arguments(name)
    wrong = {k: [v for v in vs if v not in want.get(k, [])] for k, vs in got.items()}
    assert {k: vs for k, vs in wrong.items() if vs} == {}


@pytest.mark.parametrize("name", names_of("dynamo", "dynamo-noopt", test="bodies"))
def test_every_aten_call_has_a_body(name: str):
    """Each aten call the summary counts (counts checked above against torch) belongs to one of its overload's
    bodies, so its specialised values are analysed: the bodies' calls add up to the overload's calls."""
    missing = {ov["target"]: (ov["calls"], sum(b["calls"] for b in ov["bodies"]))
               for fam in full_summary(name)["families"] if fam["kind"] == "aten_call"
               for ov in fam["overloads"] if sum(b["calls"] for b in ov["bodies"]) != ov["calls"]}
    assert missing == {}, "target: (calls, calls in bodies)"


PAIR_ARGUMENT = {"eps": ("aten::layer_norm", "eps"), "transpose": ("aten::transpose.int", "dim1"),
                 "scale": ("aten::scaled_dot_product_attention", "scale"), "heads": ("aten::view", "size")}


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith("_a") and "pair" in truth(n)])
def test_pairs_link_the_differing_hyperparameter(name: str):
    """The aten argument a pair's hyperparameter flows into has different values in the two halves (torch
    side), and in each half the summary links exactly the values torch bound (explicitly passed ones)."""
    t = truth(name)
    key = PAIR_ARGUMENT[t["pair"]["hyperparameter"]]
    halves = [name, t["pair"]["other"]]
    torch_sets = [{json.dumps(v) for v in torch_arguments(truth(n), only_emitting=True).get(key, [])}
                  for n in halves]
    assert torch_sets[0] != torch_sets[1]
    for n, want in zip(halves, torch_sets):
        assert {json.dumps(v) for v in linked_arguments(n).get(key, [])} == want, n
