"""``summary`` text on zoo exports (torch 2.13): the torchlib function of each aten target, each link's place,
shape-specialised values, what trace_only code put there, TorchScript per-call values, ONNX defaults left out."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from inspector.cli import main
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index

ZOO = Path(__file__).resolve().parent / "zoo"


def _truth(name: str) -> dict:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


def _summary(path: Path, capsys) -> list[str]:
    assert main(["summary", str(path)]) == 0
    return capsys.readouterr().out.splitlines()


def _section(lines: list[str], head: str) -> list[str]:
    """The lines of one target or family: from the line starting with ``head`` to the next one at its indent."""
    start = next(k for k, line in enumerate(lines) if line.startswith(head))
    indent = len(head) - len(head.lstrip())
    end = next((k for k in range(start + 1, len(lines))
                if len(lines[k]) - len(lines[k].lstrip()) <= indent), len(lines))
    return lines[start:end]


def test_transpose_target_names_torchlib_the_link_place_and_the_trace_only_origin(capsys):
    truth = _truth("pair_transpose_b")
    assert (truth["pair"]["hyperparameter"], truth["pair"]["value"]) == ("transpose", [1, 3])
    lines = _summary(ZOO / "pair_transpose_b.onnx", capsys)
    assert [line.rstrip() for line in _section(lines, "  aten::transpose.int")][1:] == [
        "      torchlib aten_transpose, trace_only (function_libs/torch_lib/ops/core.py:10114)",
        "        Transpose.perm = [0, 3, 2, 1]   (from dim0=1, dim1=3 at Transpose.perm)",
        "        values put there at export time by torchlib aten_transpose (trace_only)",
    ]


def test_sdpa_default_scale_and_reshapes_are_shape_specialised(capsys):
    """pair_scale_a: two attention layers with 4 and 2 heads over d=32 (head dims 8 and 16), default scale."""
    truth = _truth("pair_scale_a")
    sdpa_args = [n["args"] for n in truth["fx_nodes"] if n["target"] == "aten::scaled_dot_product_attention"]
    assert [a["scale"] for a in sdpa_args] == [None, None] and truth["pair"]["value"] is None
    lines = _summary(ZOO / "pair_scale_a.onnx", capsys)
    sdpa = _section(lines, "  aten::scaled_dot_product_attention")
    assert sdpa[1:3] == ["      torchlib aten_scaled_dot_product_attention, trace_only "
                         "(function_libs/torch_lib/ops/nn.py:1806)", "      2 distinct bodies"]
    scale = [line for line in sdpa if "from scale=None" in line]
    assert scale == [
        "          const val_64 = [0.59460354]   (varies: 2 values in the family; from scale=None at Mul on query/key; "
        "shape-specialised: default scale: constant val_64 is sqrt(1/sqrt(E)), applied to both query and key, for "
        "head dim E=8 (the last dim of query [1,4,8,8]))",
        "          const val_142 = [0.5]   (varies: 2 values in the family; from scale=None at Mul on query/key; "
        "shape-specialised: default scale: constant val_142 is sqrt(1/sqrt(E)), applied to both query and key, for "
        "head dim E=16 (the last dim of query [1,2,8,16]))",
    ]
    # each under its own body (one call each), so that a reader sees which values go together; what varies is counted
    # there, each body showing its own (listed on each line, Swin's 16 view bodies repeated 11 sizes on each)
    heads = [k for k, line in enumerate(sdpa) if line.startswith("        body of ")]
    emitted = [n["onnx_nodes"] for n in truth["fx_nodes"] if n["target"] == "aten::scaled_dot_product_attention"]
    assert [sdpa[k] for k in heads] == [f"        body of 1 call ({n} nodes):" for n in emitted]  # (torch's count)
    assert heads[0] < sdpa.index(scale[0]) < heads[1] < sdpa.index(scale[1])
    assert [round(e ** -0.25, 8) for e in (8, 16)] == [0.59460356, 0.5]  # torch's default scale, as sqrt per side
    assert ("          const val_59 = [-1, 8, 8]   (varies: 2 values in the family; shape-specialised: [-1, 8, 8] = "
            "(-1, S, E) of key transpose_1 [1, 4, 8, 8])") in sdpa
    assert sdpa[-1] == ("        values put there at export time by torchlib aten_scaled_dot_product_attention "
                        "(trace_only)")


def test_layer_norm_lists_what_it_left_out(capsys):
    lines = _summary(ZOO / "pair_eps_b.onnx", capsys)
    (args, *_rest) = [n["args"] for n in _truth("pair_eps_b")["fx_nodes"] if n["target"] == "aten::layer_norm"]
    assert (args["eps"], args["normalized_shape"]) == (1e-6, [32])
    assert _section(lines, "  aten::layer_norm")[1:] == [
        "      torchlib aten_layer_norm, trace_only (function_libs/torch_lib/ops/core.py:5716)",
        "        LayerNormalization.epsilon = 1e-06   (from eps=1e-06 at LayerNormalization.epsilon)",
        "        LayerNormalization.axis = -1   (from normalized_shape=[32] at LayerNormalization.axis)",
        "        values put there at export time by torchlib aten_layer_norm (trace_only)",
        "        1 attribute equal to the ONNX default left out",
    ]


def test_torchscript_functions_list_each_call_sites_value(capsys):
    lines = _summary(ZOO / "ts_functions.onnx", capsys)
    block = next(f for f in _truth("ts_functions")["module_functions"] if f["name"] == "Block")
    assert [i["eps"] for i in block["instances"]] == [1e-5, 1e-6, 1e-5]
    assert _section(lines, "  __main__.Block")[1:] == [
        "    (default)                    3 calls",
        "        LayerNormalization.epsilon = @inferred::LayerNormalization_epsilon (parametric, varies between calls)",
        # (each value as the float32 ONNX holds, in numpy's shortest text of it: 1e-05, not 9.9999997e-06)
        *[f"            main//{i['path']}/Block  {np.float32(i['eps'])!s}" for i in block["instances"]],
        "        2 attributes equal to the ONNX default left out",
    ]


def test_folded_family_names_its_torchlib_function(tmp_path: Path, capsys):
    model, _report = fold_model(open_index(ZOO / "pair_transpose_a.onnx"))
    onnx.save(model, tmp_path / "folded.onnx")
    lines = _summary(tmp_path / "folded.onnx", capsys)
    assert _section(lines, "  aten::transpose  ")[1:3] == [
        "    int                          4 calls",
        "        torchlib aten_transpose, trace_only (function_libs/torch_lib/ops/core.py:10114)",
    ]


def test_hostile_call_sites_stay_one_line_each(tmp_path: Path, capsys):
    body = helper.make_node("Gelu", ["x"], ["y"])
    attr = body.attribute.add()
    attr.name, attr.type, attr.ref_attr_name = "approximate", onnx.AttributeProto.STRING, "mode"
    fn = helper.make_function("m", "F", ["x"], ["y"], [body], [helper.make_opsetid("", 20)], ["mode"])
    calls = [helper.make_node("F", ["a"], [f"b{k}"], name=f"n{k}\x1b[31m\nfake line", domain="m", mode=mode)
             for k, mode in enumerate(["tanh\r\n", "none"])]
    graph = helper.make_graph(calls, "g", [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(f"b{k}", onnx.TensorProto.FLOAT, [2]) for k in range(2)])
    onnx.save(helper.make_model(graph, functions=[fn], opset_imports=[helper.make_opsetid("", 20),
                                                                      helper.make_opsetid("m", 1)]),
              tmp_path / "hostile.onnx")
    lines = _summary(tmp_path / "hostile.onnx", capsys)
    assert _section(lines, "  m.F")[2:] == [
        "        Gelu.approximate = @mode (parametric, varies between calls)",
        "            main/n0\\x1b[31m\\x0afake line  tanh\\x0d\\x0a",
        "            main/n1\\x1b[31m\\x0afake line  none",
    ]


def _calls_of(model: onnx.ModelProto, target: str) -> int:
    """How many FX nodes of ``target`` torch wrote in the model's fx_node metadata (the truth, not our grouping)."""
    texts = {p.value for n in model.graph.node for p in n.metadata_props if p.key == "pkg.torch.onnx.fx_node"}
    return sum(f"target=torch.ops.{target}](" in t for t in texts)


def test_counts_of_one_read_in_the_singular_and_columns_stay_aligned(capsys):
    # "1 calls      1 nodes" before; a count of one now reads "1 call       1 node", in the same columns
    path = ZOO / "t5_noopt.onnx"
    model = onnx.load(str(path), load_external_data=False)
    assert _calls_of(model, "aten.abs.default") == 1 and _calls_of(model, "aten.add.Tensor") == 29
    lines = _summary(path, capsys)
    abs_row, add_row = _section(lines, "  aten::abs")[0], _section(lines, "  aten::add.Tensor")[0]
    assert abs_row.split()[1:] == ["1", "call", "1", "node"]
    assert add_row.split()[1:3] == ["29", "calls"]
    assert abs_row.index(" call") == add_row.index(" calls") and len(abs_row) + 1 == len(add_row)
    assert not any(line != line.rstrip() for line in lines)
    assert main(["diff", str(ZOO / "t5.onnx"), str(path)]) == 1
    diff = capsys.readouterr().out
    assert "aten::abs: 1 overload (default), 1 call\n" in diff and " 1 calls" not in diff


def test_fold_says_one_call_left_flat_in_the_singular(tmp_path: Path, capsys):
    # llama_gqa_noopt keeps one call flat: torch's metadata names one prims (not aten) call, convert_element_type
    model = onnx.load(str(ZOO / "llama_gqa_noopt.onnx"), load_external_data=False)
    texts = {p.value for n in model.graph.node for p in n.metadata_props if p.key == "pkg.torch.onnx.fx_node"}
    assert sum("target=torch.ops.prims." in t for t in texts) == 1
    assert main(["fold", str(ZOO / "llama_gqa_noopt.onnx"), "-o", str(tmp_path / "f.onnx")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "left flat: 1 call" in lines and not any(" 1 calls" in line for line in lines)


def test_a_diff_reads_counts_of_one_in_the_singular_and_an_added_call_by_its_target(capsys):
    # llama_gqa against its unoptimised export: one graph input and one output (the model's), RMSNorm's eps Add of
    # two nodes became one, and two _unsafe_view calls of B have no counterpart in A. The diff read "1 inputs,
    # 1 outputs", "2 -> 1 nodes", "call added  aten::_unsafe_view calls added", and a removed constant ended in a space
    model = onnx.load(str(ZOO / "llama_gqa_noopt.onnx"), load_external_data=False)
    assert (len(model.graph.input), len(model.graph.output)) == (1, 1)
    assert main(["diff", str(ZOO / "llama_gqa.onnx"), str(ZOO / "llama_gqa_noopt.onnx")]) == 1
    lines = capsys.readouterr().out.splitlines()
    matched = next(line for line in lines if line.startswith("matched  "))
    assert matched.endswith(", 1 input, 1 output") and matched.startswith("matched  110 aten calls (+58 -0), ")
    assert "  body changed       2 -> 1 node: -1 (constant FLOAT[])" in lines
    assert not any("-> 1 nodes" in line for line in lines)
    at = lines.index("  call added         aten::_unsafe_view")
    assert lines[at + 1].split() == ["at", "2", "sites:", "_unsafe_view,", "_unsafe_view_2"]
    assert not any("calls added" in line or line != line.rstrip() for line in lines)


def test_an_argument_that_is_another_fx_node_reads_as_the_signature_writes_it(capsys):
    # gpt2_dynamic's first view passes size=[-1, sym_size_int_19] (torch: the second entry is the FX node): the
    # summary read "from size=[-1, {'node': 'sym_size_int_19'}]", a signature "size=[-1, %sym_size_int_19]"
    view = next(n for n in _truth("gpt2_dynamic")["fx_nodes"] if n["name"] == "view")
    assert view["args"]["size"] == [-1, {"node": "sym_size_int_19"}]
    lines = _summary(ZOO / "gpt2_dynamic.onnx", capsys)
    assert any("(from size=[-1, %sym_size_int_19] at Reshape[1])" in line for line in lines)
    assert not any("{'node'" in line or '{"node"' in line for line in lines)


def test_each_body_says_how_many_nodes_it_has(capsys):
    """Whisper's linear calls with a bias lower to MatMul and Add, those without (k_proj) to a MatMul: two bodies
    that read alike ("nothing specialised") until each says its size, which torch's count of each call's nodes
    gives."""
    calls = [n for n in _truth("whisper")["fx_nodes"] if n["target"] == "aten::linear" and n["graph"] == ""]
    sizes = Counter(n["onnx_nodes"] for n in calls)
    assert sizes == {2: 13, 1: 4}
    lines = _summary(ZOO / "whisper.onnx", capsys)
    assert _section(lines, "  aten::linear ")[2:] == [
        "      2 distinct bodies",
        "        body of 13 calls (2 nodes): nothing specialised",
        "        body of 4 calls (1 node): nothing specialised",
    ]


def test_a_body_the_optimizers_rewriter_made_says_so_and_not_that_torchlib_baked_its_values(capsys):
    """The convnet's batch norms are Conv nodes the rewriter's ``FuseBatchNormIntoConv`` made of each convolution and
    its batch norm (torch's truth: the conv2d calls have no ONNX node of their own), and they carry the batch norm's
    fx metadata: their kernels, strides and pads are the convolution's. The summary listed them under the batch norm
    as if torchlib's lowering had made them; it now says the rewriter did, as the report and the app do, with the
    rule names the file holds (JSON: ``rewritten_by`` of each body)."""
    import jsonschema

    from tests.conftest import ROOT

    truth = {n["name"]: n for n in _truth("convnet")["fx_nodes"]}
    assert all(not n.get("onnx_nodes") for n in truth.values() if n["target"] == "aten::conv2d")
    model = onnx.load(str(ZOO / "convnet.onnx"), load_external_data=False)
    rules = {p.value for n in model.graph.node for p in n.metadata_props
             if p.key == "pkg.onnxscript.rewriter.rule_name"}
    # (the rewriter writes the rules it applied to a node one after the other: this one's first rule twice, said once)
    assert rules == {"RemoveOptionalBiasFromConv, FuseBatchNormIntoConv, RemoveOptionalBiasFromConv"}
    applied = ["RemoveOptionalBiasFromConv", "FuseBatchNormIntoConv"]
    lines = _section(_summary(ZOO / "convnet.onnx", capsys), "  aten::_native_batch_norm_legit_no_training")
    assert f"        rewritten by the optimizer ({', '.join(applied)}): its values are not torchlib's" in lines
    assert not any("values put there at export time" in line for line in lines)
    assert main(["summary", str(ZOO / "convnet.onnx"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, json.loads((ROOT / "resources" / "summary.schema.json").read_text()))
    bodies = {f["label"]: [b for ov in f["overloads"] for b in ov["bodies"]] for f in data["families"]}
    norm = bodies.pop("aten::_native_batch_norm_legit_no_training")
    assert norm and all(b["rewritten_by"] == applied for b in norm)
    assert all("rewritten_by" not in b for bs in bodies.values() for b in bs)
