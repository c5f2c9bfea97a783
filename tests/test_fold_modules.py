"""fold --modules: nn.Module instances of the zoo's dynamo exports become local function calls, one function per
distinct body, checked against torch's own module list (tests/zoo/*.truth.json) and run bit for bit in onnxruntime."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from inspector.api import diff, fold
from inspector.cli import main
from inspector.core.fold.modules import MODULE_DOMAIN, fold_modules
from inspector.core.model.index import open_index
from inspector.core.summary import summary_dict
from inspector.core.util.errors import InspectorError

ort = pytest.importorskip("onnxruntime")

ZOO = Path(__file__).parent / "zoo"

# per dynamo export of the zoo: its layer class and its attention class (short names, as a user types them)
CLASSES = {
    "gpt2": ("GPT2Block", "GPT2Attention"),
    "gpt2_dynamic": ("GPT2Block", "GPT2Attention"),
    "bert": ("BertLayer", "BertSelfAttention"),
    "bert_noopt": ("BertLayer", "BertSelfAttention"),
    "vit": ("ViTLayer", "ViTAttention"),
    "llama_gqa": ("LlamaDecoderLayer", "LlamaAttention"),
    "llama_gqa_noopt": ("LlamaDecoderLayer", "LlamaAttention"),
    "t5": ("T5Block", "T5Attention"),
    "t5_noopt": ("T5Block", "T5Attention"),
    "whisper": ("Whisper*Layer", "WhisperAttention"),
    "tiny_noopt": ("Block", "Attention"),
    "pair_heads_a": ("Block", "Attention"),
    "pair_heads_b": ("Block", "Attention"),
    "mixer": ("MixerBlock", None),
    "convnet": ("ResBlock", None),
}
CASES = [(m, c) for m, pair in CLASSES.items() for c in pair if c is not None]


def _truth(model: str) -> dict:
    return json.loads((ZOO / f"{model}.truth.json").read_text())


def _expected_bodies(model: str, pattern: str, per_layer_values: bool = True) -> tuple[int, int, int]:
    """(instances, distinct bodies, classes) of a class pattern from torch's module list: the instances are the
    modules of that class that emitted ONNX nodes; two are alike when they sit at the same place of their stack
    (the path with layer numbers masked: an encoder's layer is not a decoder's, self-attention is not
    cross-attention), hold the same submodules, and share the hyperparameters the export's config sets per layer
    (tiny_noopt's heads, eps), unless ``per_layer_values`` is off (``--hoist`` makes those call-site values)."""
    truth = _truth(model)
    classes: dict[str, str] = truth["module_classes"]
    emitted = {p for n in truth["fx_nodes"] if n.get("onnx_nodes", 0) > 0 for p in n.get("module_stack", [])}
    regex = re.compile("^" + re.escape(pattern).replace(r"\*", ".*") + "$")
    paths = sorted(p for p in emitted if regex.match(classes.get(p, "").rsplit(".", 1)[-1]))
    config = truth["config"]

    def kind(path: str) -> tuple:
        place = re.sub(r"\.\d+(?=\.|$)", ".*", path)
        inside = tuple(sorted((q[len(path):], classes[q]) for q in classes if q.startswith(path + ".")))
        number = int(m.group(1)) if (m := re.search(r"\.(\d+)$", path)) else 0
        per_layer = tuple(config[k][number] for k in ("heads", "eps") if isinstance(config.get(k), list)
                          and (k != "eps" or classes[path].endswith("Block")) and per_layer_values)
        return place, inside, per_layer

    return len(paths), len({kind(p) for p in paths}), len({classes[p] for p in paths})


def _feeds(model: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds = {}
    for spec in _truth(model)["inputs"]:
        shape = spec["shape"]
        if "int" in spec["dtype"]:
            feeds[spec["name"]] = rng.integers(0, spec.get("high", 2), size=shape).astype(np.int64)
        else:
            feeds[spec["name"]] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def _run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize(("model", "cls"), CASES, ids=[f"{m}-{c}" for m, c in CASES])
def test_module_fold_is_valid_runs_bit_for_bit_and_has_one_function_per_distinct_body(model: str, cls: str):
    index = open_index(ZOO / f"{model}.onnx")
    original = onnx.load(ZOO / f"{model}.onnx")
    folded, report = fold_modules(index, cls)
    onnx.checker.check_model(folded, full_check=True)
    instances, bodies, families = _expected_bodies(model, cls)
    assert instances >= 1
    assert report.instances_folded == instances and not report.left_flat
    assert len(report.functions) == len(folded.functions) == bodies
    assert {k.domain for k in report.functions} == {MODULE_DOMAIN}
    calls = [n for n in folded.graph.node if n.domain == MODULE_DOMAIN]
    assert len(calls) == instances
    assert report.families == families  # one family per class, overloads by body
    # weights stay initializers of the main graph, passed to the calls
    assert {t.name for t in folded.graph.initializer} >= {t.name for t in original.graph.initializer
                                                           if t.name in {x for c in calls for x in c.input}}
    feeds = _feeds(model)
    for a, b in zip(_run(original, feeds), _run(folded, feeds), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    shown = diff(ZOO / f"{model}.onnx", folded)  # the module calls inlined again, node for node the input
    assert shown.equivalent and not shown.equal
    assert [c.kind for c in shown.diff.changes] == ["folded"]
    assert shown.diff.changes[0].new["calls"] == instances and shown.diff.changes[0].new["differ"] == []


def _nested(model: str) -> bool:
    """Whether, in torch's module list, the attention modules sit inside the layer modules."""
    layer, attention = CLASSES[model]
    classes = _truth(model)["module_classes"]
    short = {p: c.rsplit(".", 1)[-1] for p, c in classes.items()}
    layers = [p for p, c in short.items() if re.fullmatch(layer.replace("*", ".*"), c)]
    return any(c == attention and any(p.startswith(q + ".") for q in layers) for p, c in short.items())


@pytest.mark.parametrize("model", [m for m, (_l, a) in CLASSES.items() if a is not None and _nested(m)])
def test_nested_patterns_give_nested_functions(model: str, tmp_path: Path):
    layer, attention = CLASSES[model]
    assert attention is not None
    folded, report = fold_modules(open_index(ZOO / f"{model}.onnx"), f"{layer},{attention}")
    onnx.checker.check_model(folded, full_check=True)
    n_layers, layer_bodies, _ = _expected_bodies(model, layer)
    n_attn, attn_bodies, _ = _expected_bodies(model, attention)
    assert report.instances_folded == n_layers + n_attn and not report.left_flat
    path = tmp_path / "nested.onnx"
    onnx.save(folded, path)
    families = {f.name: f for f in open_index(path).functions.families.values()}
    inner = next(name for name in families if name.startswith(attention.split("*")[0]) and "Attention" in name)
    assert len(families[inner].members) == attn_bodies  # one family, one member per distinct attention body
    # the attention sits inside the layer: its calls are in the layers' bodies, none in the main graph
    members = {k.name for k in families[inner].members}
    assert not any(n.op_type in members for n in folded.graph.node)
    inside = [n for f in folded.functions if f.name not in members for n in f.node if n.op_type in members]
    assert len({n.op_type for n in inside}) == attn_bodies
    # an inner family with several bodies is named as TorchScript names variants (Name, Name.1), no overload:
    # onnxruntime 1.32 resolves calls inside function bodies without their overload (the test below)
    assert all(not n.overload for n in inside)
    assert len(folded.functions) >= layer_bodies + attn_bodies
    feeds = _feeds(model)
    for a, b in zip(_run(onnx.load(ZOO / f"{model}.onnx"), feeds), _run(folded, feeds), strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    shown = diff(ZOO / f"{model}.onnx", folded)
    assert shown.equivalent and shown.diff.changes[0].new["calls"] == n_layers + n_attn


def test_onnxruntime_ignores_the_overload_of_a_call_inside_a_function_body():
    """Why nested families are named as variants. Main graph: ``f:a(x)`` then ``f:b``; f:a calls g (Relu) and
    f:b calls g:neg (Neg). The checker accepts it and the result should be -relu(x). onnxruntime 1.32 resolves
    the inner call g:neg as g, the overload "" (Relu): relu(relu(x)). Without a g of overload "", the model does not
    load. When this test fails, onnxruntime has been fixed and the variant naming can go."""
    def fn(name: str, overload: str, node: onnx.NodeProto, nested: bool) -> onnx.FunctionProto:
        f = onnx.FunctionProto()
        f.domain, f.name, f.overload = "loc", name, overload
        f.input.append("x")
        f.output.append("y")
        f.node.append(node)
        f.opset_import.extend([helper.make_opsetid("", 20)] + ([helper.make_opsetid("loc", 1)] if nested else []))
        return f

    def call(op: str, overload: str, x: str, y: str) -> onnx.NodeProto:
        node = helper.make_node(op, [x], [y], domain="loc")
        node.overload = overload
        return node

    def model(g_plain: str) -> onnx.ModelProto:
        functions = [fn("g", g_plain, helper.make_node("Relu", ["x"], ["y"]), False),
                     fn("g", "neg", helper.make_node("Neg", ["x"], ["y"]), False),
                     fn("f", "a", call("g", g_plain, "x", "y"), True), fn("f", "b", call("g", "neg", "x", "y"), True)]
        graph = helper.make_graph([call("f", "a", "x", "t"), call("f", "b", "t", "z")], "m",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                  [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("loc", 1)],
                              functions=functions, ir_version=10)
        onnx.checker.check_model(m, full_check=True)
        return m

    x = np.array([-1.0, 2.0], dtype=np.float32)
    [z] = _run(model(""), {"x": x})
    assert z.tolist() == [0.0, 2.0]  # relu(relu(x)); the model means -relu(x) = [0, -2]
    with pytest.raises(Exception, match=r"loc:g\(-1\) is not a registered function/op"):
        _run(model("relu"), {"x": x})


def test_overloads_are_named_by_what_differs():
    """tiny_noopt: Block eps 1e-5/1e-6/1e-5 (torch config), so two Block bodies named by their LayerNorm eps."""
    folded, report = fold_modules(open_index(ZOO / "tiny_noopt.onnx"), "Block")
    eps = _truth("tiny_noopt")["config"]["eps"]
    assert sorted(k.overload for k in report.functions) == ["epsilon_1em05", "epsilon_1em06"]
    calls = [n for n in folded.graph.node if n.domain == MODULE_DOMAIN]
    assert [n.overload for n in calls] == ["epsilon_1em05" if e == 1e-5 else "epsilon_1em06" for e in eps]
    assert [n.name for n in calls] == ["blocks.0", "blocks.1", "blocks.2"]


def test_bodies_that_differ_in_the_modules_they_call_are_named_by_them():
    """t5: only the decoder's block holds a T5LayerCrossAttention (torch's module list); folded with its layers,
    the two T5Block bodies differ only in the functions they call, and their overloads say which."""
    classes = _truth("t5")["module_classes"]
    holders = sorted(p.rsplit(".layer.", 1)[0] for p, c in classes.items() if c.endswith(".T5LayerCrossAttention"))
    folded, _report = fold_modules(open_index(ZOO / "t5.onnx"), "T5Block,T5Layer*Attention,T5LayerFF")
    blocks = {n.name: n.overload for n in folded.graph.node if n.op_type == "T5Block"}
    assert sorted(p for p, ov in blocks.items() if ov == "with_T5LayerCrossAttention") == holders
    assert sorted(ov for p, ov in blocks.items() if p not in holders) == ["without_T5LayerCrossAttention"]


def test_blocks_that_call_different_attention_variants_are_named_by_them():
    """t5, blocks and attentions folded: the encoder's self-attention, the decoder's self-attention and its
    cross-attention (torch's module list: EncDecAttention only in the decoder) are three T5Attention bodies, so
    three variants; each block's overload names the variants it calls."""
    classes = _truth("t5")["module_classes"]
    cross = sorted(p.rsplit(".layer.", 1)[0] for p, c in classes.items() if p.endswith(".EncDecAttention"))
    folded, report = fold_modules(open_index(ZOO / "t5.onnx"), "T5Block,T5Attention")
    assert sorted(str(k) for k in report.functions if k.name.startswith("T5Attention")) == [
        "pkg.torch.module.T5Attention", "pkg.torch.module.T5Attention.1", "pkg.torch.module.T5Attention.2"]
    blocks = {n.name: n.overload for n in folded.graph.node if n.op_type == "T5Block"}
    assert sorted(p for p, ov in blocks.items() if ov == "with_T5Attention_1_T5Attention_2") == cross
    assert {ov for p, ov in blocks.items() if p not in cross} == {"with_T5Attention"}
    for f in folded.functions:
        if f.name == "T5Block":
            called = sorted(n.op_type for n in f.node if n.domain == MODULE_DOMAIN)
            assert called == (["T5Attention.1", "T5Attention.2"] if f.overload.endswith("_2") else ["T5Attention"])


def test_module_path_patterns_select_instances():
    folded, report = fold_modules(open_index(ZOO / "gpt2.onnx"), "transformer.h.1")
    assert report.instances_folded == 1
    assert [n.name for n in folded.graph.node if n.domain == MODULE_DOMAIN] == ["transformer.h.1"]


LAYERED = [(m, pair[0]) for m, pair in CLASSES.items()]


@pytest.mark.parametrize(("model", "cls"), LAYERED, ids=[f"{m}-{c}" for m, c in LAYERED])
def test_diff_names_the_module_call_in_which_one_changed_literal_sits(model: str, cls: str, tmp_path: Path):
    """One literal changed in the last layer of the flat export, then folded: the diff of the export and that fold
    is not equivalent, and its one change besides the fold is that literal, named with the layer's module call."""
    _, report = fold_modules(open_index(ZOO / f"{model}.onnx"), cls)
    proto = onnx.load(ZOO / f"{model}.onnx")
    classes = _truth(model)["module_classes"]
    regex = re.compile("^" + re.escape(cls).replace(r"\*", ".*") + "$")
    last = sorted((p for p, c in classes.items() if regex.match(c.rsplit(".", 1)[-1])), key=_natural)[-1]
    changed = None
    for node in proto.graph.node:
        scopes = next((p.value for p in node.metadata_props if p.key == "pkg.torch.onnx.name_scopes"), "")
        attr = next((a for a in node.attribute if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.FLOAT)),
                    None)
        if f"'{last}'" in scopes and attr is not None:
            if attr.type == onnx.AttributeProto.INT:
                attr.i += 1
            else:
                attr.f *= 2
            changed = node
            break
    assert changed is not None and report.instances_folded >= 2
    path = tmp_path / "changed.onnx"
    onnx.save(proto, path)
    folded, _ = fold_modules(open_index(path), cls)
    shown = diff(ZOO / f"{model}.onnx", folded)
    assert not shown.equivalent
    [fold_change, *others] = shown.diff.changes
    assert fold_change.kind == "folded" and fold_change.new["differ"] == [last]
    assert fold_change.new["calls"] - fold_change.new["identical"] == 1
    short = classes[last].rsplit(".", 1)[-1]
    assert len(others) == 1 and f"[module call {last} (pkg.torch.module.{short}" in others[0].detail
    assert f"1 of {report.instances_folded} module calls differ ({last})" in shown.text
    # the same change seen from the other side: the flat file with the change against the fold without it
    back = diff(path, fold_modules(open_index(ZOO / f"{model}.onnx"), cls)[0])
    assert not back.equivalent and back.diff.changes[0].new["differ"] == [last]


def _natural(path: str) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def test_a_diff_of_two_module_folds_compares_their_functions(tmp_path: Path):
    """Both sides folded: nothing is inlined, the functions are compared as functions (equal here)."""
    folded, _ = fold_modules(open_index(ZOO / "gpt2.onnx"), "GPT2Block")
    again, _ = fold_modules(open_index(ZOO / "gpt2.onnx"), "GPT2Block")
    shown = diff(folded, again)
    assert shown.equal and shown.diff.fold is None


def test_command_folds_and_refuses_in_one_line(tmp_path: Path, capsys):
    out = tmp_path / "out.onnx"
    assert main(["fold", str(ZOO / "llama_gqa.onnx"), "--modules", "LlamaDecoderLayer", "-o", str(out),
                 "--check"]) == 0
    text = capsys.readouterr().out
    assert "folded 2 module instances into 1 function (1 family): LlamaDecoderLayer" in text
    assert out.exists()
    assert main(["fold", str(ZOO / "llama_gqa.onnx"), "--modules", "NoSuchLayer", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--modules NoSuchLayer: no module class or path matches it" in err and len(err.splitlines()) == 1
    assert main(["fold", str(ZOO / "ts_functions.onnx"), "--modules", "Block", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no pkg.torch.onnx.fx_node metadata" in err and len(err.splitlines()) == 1


def _meta(scopes: list[str], classes: list[str], fx: str) -> dict[str, str]:
    return {"pkg.torch.onnx.name_scopes": repr(scopes), "pkg.torch.onnx.class_hierarchy": repr(classes),
            "pkg.torch.onnx.fx_node": f"%{fx} : [num_users=1] = call_function[target=torch.ops.aten.relu.default]"
                                      f"(args = (%x,), kwargs = {{}})"}


def _crafted(tmp_path: Path, metas: list[dict[str, str]], wiring: list[tuple[str, str]]) -> Path:
    nodes = []
    for (src, dst), meta in zip(wiring, metas, strict=True):
        node = helper.make_node("Relu", [src], [dst])
        for k, v in meta.items():
            node.metadata_props.add(key=k, value=v)
        nodes.append(node)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(wiring[-1][1], TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    path = tmp_path / "crafted.onnx"
    onnx.save(model, path)
    return path


def test_an_instance_on_a_cycle_stays_flat_and_is_listed(tmp_path: Path):
    """m.0's first node feeds a node outside it, which feeds m.0's second node: one call would read its own output."""
    inside = ["", "m.0"]
    path = _crafted(tmp_path, [
        _meta([*inside, "a"], ["Top", "Layer", "Relu"], "a"),
        _meta(["", "b"], ["Top", "Relu"], "b"),
        _meta([*inside, "c"], ["Top", "Layer", "Relu"], "c"),
        _meta(["", "m.1", "d"], ["Top", "Layer", "Relu"], "d"),
    ], [("x", "a"), ("a", "b"), ("b", "c"), ("c", "d")])
    folded, report = fold_modules(open_index(path), "Layer")
    onnx.checker.check_model(folded, full_check=True)
    assert report.left_flat == [("m.0", "Layer", report.left_flat[0][2])] and "cycle" in report.left_flat[0][2]
    assert report.instances_folded == 1
    assert [n.op_type for n in folded.graph.node] == ["Relu", "Relu", "Relu", "Layer"]


def test_two_instances_whose_calls_would_read_each_other_leave_one_flat(tmp_path: Path):
    """m.0 = {a, d} and m.1 = {b, c}, with a -> b and c -> d: each is convex, but the two calls would each read
    what the other makes. One stays flat (listed), the other is folded, and the graph stays acyclic."""
    path = _crafted(tmp_path, [
        _meta(["", "m.0", "a"], ["Top", "Layer", "Relu"], "a"),
        _meta(["", "m.1", "b"], ["Top", "Layer", "Relu"], "b"),
        _meta(["", "m.1", "c"], ["Top", "Layer", "Relu"], "c"),
        _meta(["", "m.0", "d"], ["Top", "Layer", "Relu"], "d"),
    ], [("x", "a"), ("a", "b"), ("x", "c"), ("c", "d")])
    model = onnx.load(path)
    model.graph.output.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, [2]))
    onnx.save(model, path)
    folded, report = fold_modules(open_index(path), "Layer")
    onnx.checker.check_model(folded, full_check=True)
    assert report.instances_folded == 1 and len(report.left_flat) == 1
    assert "cycle" in report.left_flat[0][2]
    feeds = {"x": np.array([-1.0, 2.0], dtype=np.float32)}
    for a, b in zip(_run(model, feeds), _run(folded, feeds), strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("if_is_mine", [False, True])
def test_an_instance_reaching_into_an_if_branch_stays_flat_unless_the_if_is_its_own(tmp_path: Path, if_is_mine: bool):
    """m.0's nodes sit in the main graph and inside the then-branch of an If. When the If is not m.0's, a function
    call cannot hold part of a branch: m.0 stays flat and is listed, m.1 beside it is folded. When the If is m.0's
    too, m.0 is folded with the whole If (its branch reads the function's input ``x`` from the outer scope)."""
    def node(op: str, ins: list[str], out: str, scopes: list[str] | None) -> onnx.NodeProto:
        n = helper.make_node(op, ins, [out])
        if scopes is not None:
            for k, v in _meta([*scopes, out], ["Top", "Layer", "Relu"][: len(scopes) + 1], out).items():
                n.metadata_props.add(key=k, value=v)
        return n

    t = helper.make_tensor_value_info
    then = helper.make_graph([node("Add", ["a", "x"], "t1", ["", "m.0"])], "then", [],
                             [t("t1", TensorProto.FLOAT, [2])])
    other = helper.make_graph([node("Neg", ["a"], "t2", None)], "else", [], [t("t2", TensorProto.FLOAT, [2])])
    branch = helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=other)
    if if_is_mine:
        for k, v in _meta(["", "m.0", "y"], ["Top", "Layer", "Relu"], "y").items():
            branch.metadata_props.add(key=k, value=v)
    graph = helper.make_graph([node("Relu", ["x"], "a", ["", "m.0"]), branch, node("Relu", ["y"], "z", ["", "m.1"])],
                              "g", [t("x", TensorProto.FLOAT, [2]), t("flag", TensorProto.BOOL, [])],
                              [t("z", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    path = tmp_path / "branch.onnx"
    onnx.save(model, path)
    folded, report = fold_modules(open_index(path), "Layer")
    onnx.checker.check_model(folded, full_check=True)
    if if_is_mine:
        assert not report.left_flat and report.instances_folded == 2
        assert [(n.op_type, n.name) for n in folded.graph.node] == [("Layer", "m.0"), ("Layer", "m.1")]
    else:
        assert [(p, c) for p, c, _r in report.left_flat] == [("m.0", "Layer")]
        assert "If/Loop body" in report.left_flat[0][2]
        assert [n.op_type for n in folded.graph.node] == ["Relu", "If", "Layer"]
    for flag in (True, False):
        feeds = {"x": np.array([-1.0, 2.0], dtype=np.float32), "flag": np.array(flag)}
        for a, b in zip(_run(model, feeds), _run(folded, feeds), strict=True):
            assert a.tobytes() == b.tobytes()


def test_inconsistent_module_metadata_is_refused_naming_what_is_missing(tmp_path: Path, capsys):
    path = _crafted(tmp_path, [
        _meta(["", "m.0", "a"], ["Top"], "a"),  # class_hierarchy shorter than name_scopes: m.0 has no class
        _meta(["", "m.1", "b"], ["Top", "Layer", "Relu"], "b"),
    ], [("x", "a"), ("a", "b")])
    with pytest.raises(InspectorError, match=r"module m\.0 has no class in pkg\.torch\.onnx\.class_hierarchy"):
        fold_modules(open_index(path), "Layer")
    assert main(["fold", str(path), "--modules", "Layer", "-o", str(tmp_path / "o.onnx")]) == 2
    assert "has no class" in capsys.readouterr().err


@pytest.mark.parametrize(("model", "cls"), CASES, ids=[f"{m}-{c}" for m, c in CASES])
def test_hoist_makes_values_that_differ_call_site_attributes(model: str, cls: str):
    original = onnx.load(ZOO / f"{model}.onnx")
    folded, report = fold_modules(open_index(ZOO / f"{model}.onnx"), cls, hoist=True)
    onnx.checker.check_model(folded, full_check=True)
    instances, bodies, families = _expected_bodies(model, cls, per_layer_values=False)
    assert report.instances_folded == instances and report.families == families
    assert len(folded.functions) == bodies
    feeds = _feeds(model)
    for a, b in zip(_run(original, feeds), _run(folded, feeds), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    assert diff(ZOO / f"{model}.onnx", folded).equivalent  # call-site values bound again when inlined


def test_hoisted_eps_and_heads_are_shown_per_call_site(tmp_path: Path):
    """tiny_noopt: torch's config gives Block eps 1e-5/1e-6/1e-5 and Attention heads 2/4/2. Hoisted, each class
    is one function; the eps is a parametric LayerNormalization attribute whose call-site values are the config's,
    and a head count reaches the attention's Reshape shapes as a call-site value too."""
    config = _truth("tiny_noopt")["config"]
    folded, report = fold_modules(open_index(ZOO / "tiny_noopt.onnx"), "Block,Attention", hoist=True)
    assert sorted(str(k) for k in report.functions) == ["pkg.torch.module.Attention", "pkg.torch.module.Block"]
    path = tmp_path / "hoisted.onnx"
    onnx.save(folded, path)
    summary = summary_dict(open_index(path))
    block = next(f for f in summary["families"] if f["name"] == "Block")
    [eps] = [s for s in block["overloads"][0]["specialised"] if s["kind"] == "parametric"]
    assert eps["op_type"] == "LayerNormalization" and eps["attribute"] == "epsilon"
    assert [c["call"] for c in eps["call_sites"]] == ["main/blocks.0", "main/blocks.1", "main/blocks.2"]
    assert [np.float32(c["value"]) for c in eps["call_sites"]] == [np.float32(e) for e in config["eps"]]
    attention = next(f for f in summary["families"] if f["name"] == "Attention")
    passed = [[c["value"] for c in s["call_sites"]] for s in attention["overloads"][0]["specialised"]
              if s["kind"] == "parametric"]
    assert [[h] for h in config["heads"]] in passed  # the head count, per call site
    assert [[config["d"] // h] for h in config["heads"]] in passed  # and the head size


def test_the_python_api_takes_the_same_options(tmp_path: Path):
    proto = onnx.load(ZOO / "tiny_noopt.onnx")
    before = proto.SerializeToString()
    report = fold(proto, tmp_path / "api.onnx", modules="Block,Attention", hoist=True)
    command, _ = fold_modules(open_index(ZOO / "tiny_noopt.onnx"), ["Block", "Attention"], hoist=True)
    assert (tmp_path / "api.onnx").read_bytes() == command.SerializeToString()
    assert report.instances_folded == 6 and proto.SerializeToString() == before  # the caller's model is untouched
    with pytest.raises(InspectorError, match="hoist needs --modules"):
        fold(proto, tmp_path / "x.onnx", hoist=True)


def test_model_strings_in_the_listing_are_escaped(tmp_path: Path, capsys):
    """A class name is model text: an escape sequence in it is shown escaped, never sent to the terminal."""
    evil = "Layer\x1b[2J"
    path = _crafted(tmp_path, [
        _meta(["", "m.0", "a"], ["Top", evil, "Relu"], "a"),
        _meta(["", "b"], ["Top", "Relu"], "b"),
        _meta(["", "m.0", "c"], ["Top", evil, "Relu"], "c"),
    ], [("x", "a"), ("a", "b"), ("b", "c")])
    assert main(["fold", str(path), "--modules", "Layer*", "-o", str(tmp_path / "o.onnx")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "m.0 (Layer\\x1b[2J): folding would form a cycle" in out
    assert main(["fold", str(path), "--modules", "Nope", "-o", str(tmp_path / "o.onnx")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "Layer\\x1b[2J" in err


@pytest.mark.parametrize("modules", [None, "LlamaDecoderLayer"])
def test_check_finds_external_weights_beside_the_written_model(tmp_path: Path, capsys, modules: str | None):
    """A large export keeps its weights in a file beside it: --check checks the folded model where it is written
    (the checker resolves the weights' locations from the model's folder), and writes nothing when it fails."""
    model = onnx.load(ZOO / "llama_gqa.onnx")
    onnx.save(model, tmp_path / "ext.onnx", save_as_external_data=True, location="ext.onnx.data")  # >= 1 KiB
    stored = onnx.load(tmp_path / "ext.onnx", load_external_data=False).graph.initializer
    assert sum(t.data_location == onnx.TensorProto.EXTERNAL for t in stored) > 10
    out = tmp_path / "folded.onnx"
    argv = ["fold", str(tmp_path / "ext.onnx"), "-o", str(out), "--check",
            *(["--modules", modules] if modules else [])]
    assert main(argv) == 0, capsys.readouterr().err
    onnx.checker.check_model(str(out), full_check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ext.onnx", "ext.onnx.data", "folded.onnx"]
    feeds = _feeds("llama_gqa")
    for a, b in zip(_run(onnx.load(ZOO / "llama_gqa.onnx"), feeds), _run(onnx.load(out), feeds), strict=True):
        assert a.tobytes() == b.tobytes()
    # a weights file that is not where the model says: refused in one line, nothing written
    (tmp_path / "ext.onnx.data").rename(tmp_path / "moved.data")
    out.unlink()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "does not pass the checker" in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ext.onnx", "moved.data"]


def test_a_module_fold_of_an_aten_fold_diffs_as_equivalent_to_both(tmp_path: Path):
    """--modules over an aten fold: module functions whose bodies call aten functions. Against the flat export the
    diff names both folds; against the aten fold, the module fold alone; equivalent both times."""
    assert main(["fold", str(ZOO / "gpt2.onnx"), "-o", str(tmp_path / "aten.onnx")]) == 0
    assert main(["fold", str(tmp_path / "aten.onnx"), "--modules", "GPT2Block,GPT2Attention",
                 "-o", str(tmp_path / "both.onnx")]) == 0
    flat = diff(ZOO / "gpt2.onnx", tmp_path / "both.onnx")
    assert flat.equivalent and [c.kind for c in flat.diff.changes] == ["folded", "folded"]
    assert {c.new.get("unit", "aten") for c in flat.diff.changes} == {"module", "aten"}
    aten = diff(tmp_path / "aten.onnx", tmp_path / "both.onnx")
    assert aten.equivalent and [c.new.get("unit") for c in aten.diff.changes] == ["module"]


@pytest.mark.parametrize("shape", ["recursive", "exponential"])
def test_diff_leaves_module_functions_that_recurse_or_explode_as_functions(tmp_path: Path, shape: str):
    """Hostile module functions (bodies with fx metadata): one that calls itself, and 22 that each call the next
    twice (2**22 nodes inlined). The diff does not inline them; it compares them as functions, at once."""
    def body_node(out: str) -> onnx.NodeProto:
        node = helper.make_node("Relu", ["x"], [out])
        for k, v in _meta(["", "m.0", out], ["Top", "Layer", "Relu"], out).items():
            node.metadata_props.add(key=k, value=v)
        return node

    def call(name: str, x: str, y: str) -> onnx.NodeProto:
        return helper.make_node(name, [x], [y], domain=MODULE_DOMAIN)

    depth = 1 if shape == "recursive" else 22
    functions = []
    for k in range(depth):
        callee = "f0" if shape == "recursive" else f"f{k + 1}"
        nodes = [body_node("a")] + ([call(callee, "a", "b"), call(callee, "b", "y")] if k + 1 < depth or
                                    shape == "recursive" else [helper.make_node("Neg", ["a"], ["y"])])
        functions.append(helper.make_function(MODULE_DOMAIN, f"f{k}", ["x"], ["y"], nodes,
                                              [helper.make_opsetid("", 20), helper.make_opsetid(MODULE_DOMAIN, 1)]))
    graph = helper.make_graph([call("f0", "x", "z")], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, functions=functions, opset_imports=[helper.make_opsetid("", 20),
                                                                         helper.make_opsetid(MODULE_DOMAIN, 1)])
    onnx.save(model, tmp_path / "hostile.onnx")
    flat = _crafted(tmp_path, [_meta(["", "m.0", "a"], ["Top", "Layer", "Relu"], "a")], [("x", "z")])
    shown = diff(flat, tmp_path / "hostile.onnx")
    assert not shown.equivalent and shown.diff.fold is None
    assert "family added" in shown.text and f"{MODULE_DOMAIN}.f0" in shown.text
