"""fold over the zoo: every dynamo export folds into a model that checks, runs bit for bit like the original,
binds every call's inputs as torch bound the aten call's arguments, and diffs `equivalent` against the original.

No torch: the truth files (tests/zoo/README.md) give the inputs' shapes and dtypes and, per FX node, the arguments
torch bound to each schema parameter. Which FX node an ONNX value comes from is read here with plain onnx (the
`pkg.torch.onnx.fx_node` text of its producer, or a parameter's `original_node_name`), not with inspector code.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from inspector.cli import main
from inspector.core.diff import diff_files
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.fx import TensorRef
from inspector.core.model.index import open_index
from inspector.core.model.signature import function_call_signature

ort = pytest.importorskip("onnxruntime")

ZOO = Path(__file__).resolve().parent / "zoo"
NAMES = sorted(p.name[: -len(".truth.json")] for p in ZOO.glob("*.truth.json"))
FX_NODE = "pkg.torch.onnx.fx_node"
ORIGINAL_NODE_NAME = "pkg.torch.onnx.original_node_name"
FX_HEAD = re.compile(r"%(\S+) : .*?call_function\[target=torch\.ops\.(\w+)\.(\w+)\.(\w+)\]")


@cache
def truth(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ZOO / f"{name}.truth.json").read_text())
    return data


DYNAMO = [n for n in NAMES if truth(n)["kind"] in ("dynamo", "dynamo-noopt")]
TORCHSCRIPT = [n for n in NAMES if truth(n)["kind"].startswith("torchscript")]


@cache
def folded(name: str) -> onnx.ModelProto:
    """The fold as the command makes it: in the index's own protobuf (``consume``)."""
    model, _report = fold_model(open_index(ZOO / f"{name}.onnx"), consume=True)
    return model


@pytest.fixture(scope="module")
def folded_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("zoo_fold")


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def feeds(name: str) -> dict[str, np.ndarray]:
    """Seeded random inputs shaped and typed as the truth file says (integers in [0, high))."""
    rng = np.random.default_rng(0)
    out = {}
    for spec in truth(name)["inputs"]:
        dtype = np.dtype(spec["dtype"])
        if spec.get("high"):
            out[spec["name"]] = rng.integers(0, spec["high"], size=spec["shape"]).astype(dtype)
        else:
            out[spec["name"]] = rng.standard_normal(spec["shape"]).astype(dtype)
    return out


def run(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    return list(session.run(None, {k: v for k, v in inputs.items() if k in names}))


def fx_of(node: onnx.NodeProto) -> tuple[str, str] | None:
    """(FX node name, aten target ``aten::op.overload``) from a node's fx_node text."""
    for p in node.metadata_props:
        if p.key == FX_NODE:
            m = FX_HEAD.match(p.value)
            if m:
                overload = "" if m.group(4) == "default" else f".{m.group(4)}"
                return m.group(1), f"{m.group(2)}::{m.group(3)}{overload}"
    return None


# ------------------------------------------------------------------------------------------------
# every dynamo export folds, checks, runs bit for bit
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DYNAMO)
def test_fold_checks_and_runs_bit_identical(name: str):
    """The fold passes the full checker (shape inference included: gpt2's layer_norm output was declared rank 3
    and inferred rank 1 when its inputs were bound in the wrong order) and computes exactly what the export
    computes under onnxruntime with graph optimisations off."""
    model = folded(name)
    onnx.checker.check_model(model, full_check=True)
    assert model.functions and len(model.graph.node) <= truth(name)["onnx"]["main_graph_nodes"]
    original = onnx.load(str(ZOO / f"{name}.onnx"))
    inputs = feeds(name)
    want, got = run(original, inputs), run(model, inputs)
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert w.dtype == g.dtype and w.shape == g.shape
        np.testing.assert_array_equal(w, g)


@pytest.mark.parametrize("name", DYNAMO)
def test_fold_command_checks_its_own_output(name: str, folded_dir: Path, capsys):
    out = folded_dir / f"{name}.cmd.onnx"
    assert main(["fold", str(ZOO / f"{name}.onnx"), "-o", str(out), "--check"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out


@pytest.mark.parametrize("name", DYNAMO)
def test_fold_of_a_copy_is_the_same_model_and_leaves_the_index_alone(name: str):
    """Without ``consume`` the fold works on a copy: the index's model is not changed (it can be folded again), and
    the folded model is byte for byte the one the command makes in place."""
    index = open_index(ZOO / f"{name}.onnx")
    before = index.proto.SerializeToString()
    model, report = fold_model(index)
    assert index.proto.SerializeToString() == before
    assert model.SerializeToString() == folded(name).SerializeToString()
    assert fold_model(index)[1] == report


@pytest.mark.parametrize("name", DYNAMO)
def test_every_call_calls_a_function_of_its_own_target(name: str):
    """Functions are keyed by target and body: every call's function is defined, and its doc string is the
    schema of the call's own target (t5_noopt: `scalar_tensor` called a function never defined, because it shared
    one with `_to_copy`; 2 of 3 `where.ScalarOther` calls called `where:self`)."""
    model = folded(name)
    functions = {(f.domain, f.name, f.overload): f for f in model.functions}
    calls = [n for n in model.graph.node if n.domain == "pkg.torch.aten"]
    assert calls
    for node in calls:
        f = functions.get((node.domain, node.op_type, node.overload))
        assert f is not None, f"{node.name}: {node.op_type}:{node.overload} is not defined"
        fx = fx_of(node)
        assert fx is not None
        assert f.doc_string.startswith(fx[1] + "("), (node.name, fx[1], f.doc_string[:60])
        assert f.name == fx[1].split("::")[1].split(".")[0]
    assert len({(f.domain, f.name, f.overload) for f in model.functions}) == len(model.functions)


@pytest.mark.parametrize("name", DYNAMO)
def test_inputs_are_bound_as_torch_bound_the_arguments(name: str):
    """Every input position of a function plays one role: at all its calls, the value passed there is the value
    torch bound to one and the same aten parameter, and that parameter is the input's name when the input is
    named after one. Evidence, read with plain onnx: the value is the output of an ONNX node whose fx_node names
    FX node M, or a parameter whose original_node_name is M; torch bound the parameter to M, and M is itself some
    ONNX value (ViT/BERT/Whisper passed weights as activations and Llama swapped `mul`'s operands when the order
    depended on names)."""
    model = folded(name)
    functions = {(f.domain, f.name, f.overload): f for f in model.functions}
    fx_nodes = {f["name"]: f for f in truth(name)["fx_nodes"] if f["graph"] == ""}
    producer_fx: dict[str, str] = {}
    for node in model.graph.node:
        fx = fx_of(node)
        if fx is not None:
            for o in node.output:
                producer_fx[o] = fx[0]
    for v in (*model.graph.input, *model.graph.value_info):
        for p in v.metadata_props:
            if p.key == ORIGINAL_NODE_NAME:
                producer_fx[v.name] = p.value
    present = set(producer_fx.values())  # FX nodes that are some ONNX value
    roles: dict[tuple[tuple[str, str, str], int], set[str]] = {}
    for node in model.graph.node:
        if node.domain != "pkg.torch.aten":
            continue
        fx = fx_of(node)
        assert fx is not None
        tensor_params = {p: a["node"] for p, a in fx_nodes[fx[0]]["args"].items()
                         if isinstance(a, dict) and "node" in a and a["node"] in present}
        key = (node.domain, node.op_type, node.overload)
        f = functions[key]
        for k, (formal, actual) in enumerate(zip(f.input, node.input, strict=True)):
            source = producer_fx.get(actual)
            params = {p for p, m in tensor_params.items() if m == source}
            if formal in tensor_params and source is not None:
                assert tensor_params[formal] == source, (node.name, formal, actual, tensor_params)
            if len(params) == 1:
                roles.setdefault((key, k), set()).update(params)
    assert roles
    mixed = {f"{key[1]}:{key[2]} input {k}": sorted(ps) for (key, k), ps in roles.items() if len(ps) > 1}
    assert mixed == {}, "positions that receive different aten arguments at different calls"


def same_value(ours: Any, torch_value: Any) -> bool:
    """Our bound value against torch's: floats as float32 (ONNX float attributes), the rest exactly."""
    if isinstance(torch_value, list) and isinstance(ours, list):
        return len(ours) == len(torch_value) and all(same_value(a, b) for a, b in zip(ours, torch_value))
    if isinstance(torch_value, float) and isinstance(ours, (int, float)) and not isinstance(ours, bool):
        return bool(np.float32(ours) == np.float32(torch_value))
    if isinstance(torch_value, str):
        return str(ours) == torch_value
    return bool(ours == torch_value and type(ours) is type(torch_value))


@pytest.mark.parametrize("name", DYNAMO)
def test_folded_calls_show_the_aten_signature_torch_bound(name: str):
    """Selecting a folded call shows the aten signature as for a flat export: read from the function (its doc
    string and declared defaults) and the call's attributes, every non-tensor argument equals what torch bound
    (defaults included), and tensor arguments are the values the call passes."""
    model = folded(name)
    functions = {(f.domain, f.name, f.overload): f for f in model.functions}
    fx_nodes = {f["name"]: f for f in truth(name)["fx_nodes"] if f["graph"] == ""}
    compared = 0
    for node in model.graph.node:
        if node.domain != "pkg.torch.aten":
            continue
        fx = fx_of(node)
        assert fx is not None
        sig = function_call_signature(functions[(node.domain, node.op_type, node.overload)], node)
        assert sig is not None and sig.schema is not None and sig.schema.target == fx[1]
        args = fx_nodes[fx[0]]["args"]
        for b in sig.bound:
            want = args.get(b.parameter.name)
            if isinstance(b.value, TensorRef):
                assert b.value.name in node.input
                continue
            if isinstance(want, dict) or (isinstance(want, list) and any(isinstance(v, dict) for v in want)):
                continue  # torch bound a tensor or symbolic size here: a function input, checked above
            if b.parameter.name not in args:
                continue
            assert b.provided and same_value(b.value, want), (node.name, b.parameter.name, b.value, want)
            compared += 1
    assert compared > 0 or name == "cond"


# ------------------------------------------------------------------------------------------------
# diff: the model and its fold are equivalent; a renamed copy is equal
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DYNAMO)
def test_diff_of_model_and_fold_is_equivalent(name: str, folded_dir: Path, capsys):
    """One consistent explanation: the fold is the only change, every body is identical (torch.cond: the
    initializers read only inside If branches keep their metadata, so nothing else differs)."""
    path = save(folded(name), folded_dir / f"{name}.folded.onnx")
    d = diff_files(ZOO / f"{name}.onnx", path)
    assert [(c.kind, c.detail) for c in d.changes if c.kind != "folded"] == []
    assert d.equivalent and not d.equal and [c.kind for c in d.changes] == ["folded"]
    assert d.fold is not None and d.fold.identical == d.fold.calls and d.fold.other_changes == 0
    assert d.fold.explanation.endswith("bodies identical")
    assert main(["diff", str(ZOO / f"{name}.onnx"), str(path)]) == 1
    out = capsys.readouterr().out
    assert "result   equivalent" in out and "bodies identical" in out and "not equivalent" not in out


def test_explanation_agrees_with_a_verdict_of_not_equivalent(folded_dir: Path):
    """A fold whose weights were then edited: every body is identical, but the model is not equivalent, and the
    explanation says so instead of 'bodies identical'."""
    model = folded("gpt2")
    edited = onnx.ModelProto()
    edited.CopyFrom(model)
    big = max(edited.graph.initializer, key=lambda t: len(t.raw_data))
    array = numpy_helper.to_array(big).copy()
    array.flat[0] += 1.0
    big.CopyFrom(numpy_helper.from_array(array, big.name))
    d = diff_files(ZOO / "gpt2.onnx", save(edited, folded_dir / "gpt2.edited.onnx"))
    assert not d.equivalent and d.fold is not None and d.fold.identical == d.fold.calls
    assert "bodies identical" not in d.fold.explanation
    assert d.fold.explanation.endswith("1 change besides the fold, so not equivalent (listed below)")
    (change,) = [c for c in d.changes if c.kind == "folded"]
    assert change.detail == d.fold.explanation


def renamed(model: onnx.ModelProto) -> onnx.ModelProto:
    """Every value and node name replaced consistently (graph inputs, initializers, subgraphs included)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    names: dict[str, str] = {}

    def new(name: str) -> str:
        if not name:
            return name
        if name not in names:
            names[name] = f"r{len(names)}"
        return names[name]

    stack = [out.graph]
    node_count = 0
    while stack:
        g = stack.pop()
        for v in (*g.input, *g.output, *g.value_info):
            v.name = new(v.name)
        for t in g.initializer:
            t.name = new(t.name)
        for node in g.node:
            node_count += 1
            node.name = f"n{node_count}"
            for k, x in enumerate(node.input):
                node.input[k] = new(x)
            for k, x in enumerate(node.output):
                node.output[k] = new(x)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    stack.append(attr.g)
                stack.extend(attr.graphs)
    return out


@pytest.mark.parametrize("name", DYNAMO)
def test_renamed_copy_diffs_equal(name: str, folded_dir: Path):
    original = onnx.load(str(ZOO / f"{name}.onnx"))
    copy = renamed(original)
    assert {v.name for v in copy.graph.input}.isdisjoint(v.name for v in original.graph.input)
    d = diff_files(ZOO / f"{name}.onnx", save(copy, folded_dir / f"{name}.renamed.onnx"))
    assert d.equal, [c.detail for c in d.changes]


# ------------------------------------------------------------------------------------------------
# TorchScript exports are refused
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TORCHSCRIPT)
def test_torchscript_exports_are_refused_with_one_line(name: str, folded_dir: Path, capsys):
    out = folded_dir / f"{name}.folded.onnx"
    assert main(["fold", str(ZOO / f"{name}.onnx"), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no aten calls to fold" in err and "Traceback" not in err
    if truth(name)["onnx"]["functions"]:
        assert f"it has {truth(name)['onnx']['functions']} local functions already" in err
    assert not out.exists()


@pytest.mark.parametrize("name", DYNAMO)
def test_overloads_are_named_by_what_differs(name: str):
    """Overload names are ONNX identifiers (the text parser takes nothing else at call sites); a target with one
    body keeps its aten overload name; `view` overloads named by a Reshape shape name the size torch bound at
    every call of that overload (`-1` written `m1`; the optimizer may have resolved torch's -1 to the size)."""
    model = folded(name)
    by_target: dict[str, set[str]] = {}
    fx_nodes = {f["name"]: f for f in truth(name)["fx_nodes"] if f["graph"] == ""}
    for node in model.graph.node:
        if node.domain != "pkg.torch.aten":
            continue
        assert re.fullmatch(r"[A-Za-z_]\w*", node.overload), node.overload
        fx = fx_of(node)
        assert fx is not None
        by_target.setdefault(fx[1], set()).add(node.overload)
        shape = re.fullmatch(r"reshape_(m?\d+(?:xm?\d+)*)", node.overload)
        if fx[1] == "aten::view" and shape:
            size = fx_nodes[fx[0]]["args"]["size"]
            dims = [int(d.replace("m", "-")) for d in shape.group(1).split("x")]
            assert len(dims) == len(size), (node.name, size)
            assert all(d == v or v == -1 for d, v in zip(dims, size)), (node.name, size)  # -1 may be resolved
    for target, overloads in by_target.items():
        if len(overloads) == 1:
            aten_overload = target.partition(".")[2] or "default"
            assert overloads == {aten_overload}, target


@pytest.mark.parametrize("name", DYNAMO)
def test_folded_model_reads_as_its_aten_families(name: str, folded_dir: Path):
    """A folded model is read as the seed intended: each function family that stands for an aten op *is* that
    aten family (labelled `aten::op`, one row per op; flat `aten_call` rows only for calls fold left flat), each
    overload carries its aten target, and the aten targets count the calls torch made (rule A)."""
    from inspector.core.summary import summary_dict

    _model, report = fold_model(open_index(ZOO / f"{name}.onnx"))
    index = open_index(save(folded(name), folded_dir / f"{name}.summary.onnx"))
    data = summary_dict(index, specialisation=False)
    folded_labels = [f["label"] for f in data["families"] if f["kind"] == "function"]
    assert folded_labels and all(label.startswith("aten::") for label in folded_labels)
    assert len(set(folded_labels)) == len(folded_labels)
    # the only aten_call rows left are the calls fold left flat (cond: the calls inside the If branches)
    flat_calls = {o["target"]: o["calls"] for f in data["families"] if f["kind"] == "aten_call" for o in f["overloads"]}
    left: dict[str, int] = {}
    for _fx, target, _reason in report.left_flat:
        left[target] = left.get(target, 0) + 1
    assert flat_calls == left
    for fam in data["families"]:
        if fam["kind"] == "function":
            assert all(o["target"] and o["target"].startswith(fam["label"]) for o in fam["overloads"])
    emitted: dict[str, int] = {}
    for f in truth(name)["fx_nodes"]:
        if f["onnx_nodes"] > 0:
            emitted[f["target"]] = emitted.get(f["target"], 0) + 1
    assert {a["target"]: a["calls"] for a in data["aten_targets"]} == emitted


# ------------------------------------------------------------------------------------------------
# torch.cond: calls inside the If branches fold there too (inside_subgraphs; off by default, see fold_model)
# ------------------------------------------------------------------------------------------------


def test_cond_folds_inside_its_if_branches():
    """With inside_subgraphs, every aten call of the cond export is folded, the branch ones inside their branch:
    the result passes the full checker and runs bit for bit like the export; each branch holds exactly the calls
    torch's branch graph made (then_branch = true_graph_0, else_branch = false_graph_0, by the truth file), each
    calls a function of its own target, and every input named after an aten parameter receives the value torch
    bound to it (read with plain onnx: the producer's fx_node, or a parameter's original_node_name)."""
    index = open_index(ZOO / "cond.onnx")
    model, report = fold_model(index, inside_subgraphs=True)
    t = truth("cond")
    emitting = [f for f in t["fx_nodes"] if f["onnx_nodes"] > 0]
    assert report.calls_folded == sum(f["target"].startswith("aten::") for f in emitting) == 11
    assert [(fx, reason) for fx, _target, reason in report.left_flat] == [("cond", "not an aten op")]
    assert fold_model(index)[1].calls_folded == 4  # the default leaves the branch calls flat
    in_place, _report = fold_model(open_index(ZOO / "cond.onnx"), inside_subgraphs=True, consume=True)
    assert in_place.SerializeToString() == model.SerializeToString()
    onnx.checker.check_model(model, full_check=True)
    inputs = feeds("cond")
    for w, g in zip(run(onnx.load(str(ZOO / "cond.onnx")), inputs), run(model, inputs), strict=True):
        assert w.dtype == g.dtype and w.shape == g.shape
        np.testing.assert_array_equal(w, g)

    functions = {(f.domain, f.name, f.overload): f for f in model.functions}
    (holder,) = [n for n in model.graph.node if n.op_type == "If"]
    branches = {a.name: a.g for a in holder.attribute if a.type == onnx.AttributeProto.GRAPH}
    producer_fx: dict[str, str] = {}
    for g in (model.graph, *branches.values()):
        for node in g.node:
            fx = fx_of(node)
            if fx is not None:
                producer_fx.update((o, fx[0]) for o in node.output)
    for v in (*model.graph.input, *model.graph.value_info):
        producer_fx.update((v.name, p.value) for p in v.metadata_props if p.key == ORIGINAL_NODE_NAME)
    bound = 0
    for attr, fx_graph in (("then_branch", "true_graph_0"), ("else_branch", "false_graph_0")):
        nodes = branches[attr].node
        assert all(n.domain == "pkg.torch.aten" for n in nodes)
        want = sorted((f["name"], f["target"]) for f in emitting if f["graph"] == fx_graph)
        made = [fx_of(n) for n in nodes]
        assert sorted(fx for fx in made if fx is not None) == want
        args = {f["name"]: f["args"] for f in emitting if f["graph"] == fx_graph}
        for node in nodes:
            fx = fx_of(node)
            assert fx is not None
            f = functions[(node.domain, node.op_type, node.overload)]
            assert f.doc_string.startswith(fx[1] + "(")
            for formal, actual in zip(f.input, node.input, strict=True):
                torch_arg = args[fx[0]].get(formal)
                if isinstance(torch_arg, dict) and "node" in torch_arg:
                    assert producer_fx.get(actual) == torch_arg["node"], (node.name, formal, actual)
                    bound += 1
    assert bound == 13  # linear 3 + relu 1 + mul 1 | layer_norm 3 + linear 3 + tanh 1 + sub 1
