"""Reports on zoo exports (torch 2.13): the torchlib function of each body, each link's place and evidence,
shape-specialised values, what trace_only code put there, TorchScript per-call values, ONNX defaults left out;
HTML, Markdown and JSON alike, model text escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest
from onnx import helper

from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from inspector.report.build import build_report
from inspector.report.data import BodyInfo, Report
from inspector.report.html import render_html
from inspector.report.jsonreport import report_dict
from inspector.report.markdown import render_markdown
from tests.gfm import gfm, shown, tags

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "zoo"
SCHEMA = json.loads((ROOT / "resources" / "report.schema.json").read_text())


def _truth(name: str) -> dict:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    return {name: build_report(open_index(ZOO / f"{name}.onnx"), graphs=False)
            for name in ("pair_transpose_b", "ts_functions", "pair_scale_a", "llama_gqa", "convnet")}


def _body(report: Report, label: str) -> BodyInfo:
    (fam,) = [f for f in report.families if f.label == label]
    return fam.bodies[0]


def test_transpose_body_names_torchlib_the_place_and_what_put_the_perm_there(reports):
    truth = _truth("pair_transpose_b")
    assert (truth["pair"]["hyperparameter"], truth["pair"]["value"]) == ("transpose", [1, 3])
    r = reports["pair_transpose_b"]
    body = _body(r, "aten::transpose")
    assert body.title == "aten::transpose.int" and body.torchlib is not None
    assert body.torchlib.text == "aten::transpose.int → torchlib aten_transpose, trace_only"
    (perm,) = body.specialised
    assert [(a.parameter, a.value, a.place, a.rule) for a in perm.links] == [
        ("dim0", 1, "Transpose.perm", "perm swaps dims 1 and 3"),
        ("dim1", 3, "Transpose.perm", "perm swaps dims 1 and 3")]
    assert perm.baked_by == "aten_transpose" and perm.value == [0, 3, 2, 1]
    html = render_html(r)
    assert ("<p>aten::transpose.int → torchlib <code>aten_transpose</code>, trace_only <span class='muted'>"
            "(function_libs/torch_lib/ops/core.py:10114)</span></p>") in html
    # the place is the row's where (Transpose.perm): said once
    assert (f"<td class='mono'>Transpose.perm</td><td class='mono'>no sibling to compare</td><td><a href='#{body.id}"
            f"-a-dim0'>dim0</a>=1: perm swaps dims 1 and 3<br><a href='#{body.id}-a-dim1'>dim1</a>=3: perm swaps "
            "dims 1 and 3</td>") in html
    assert "<p class='muted'>Put there at export time by torchlib aten_transpose (trace_only Python).</p>" in html
    fam = next(f for f in r.families if f.label == "aten::transpose")
    assert fam.overloads[0].torchlib is not None and fam.overloads[0].torchlib.function == "aten_transpose"
    assert "<td><code>aten_transpose</code>, trace_only</td>" in html  # the family's overload table
    md = render_markdown(r)
    assert ("aten::transpose.int → torchlib aten\\_transpose, trace_only "
            "(function\\_libs/torch\\_lib/ops/core.py:10114)") in md
    assert ("| 🟦 | \\[0, 3, 2, 1\\] | Transpose.perm | no sibling to compare | dim0=1: perm swaps dims 1 and 3"
            "<br>dim1=3: perm swaps dims 1 and 3 |") in md
    assert "_Put there at export time by torchlib aten\\_transpose (trace\\_only Python)._" in md
    # as GitHub shows it: the names whole, the italic line italic
    assert "aten::transpose.int → torchlib aten_transpose, trace_only (function_libs/torch_lib/ops/core.py:10114)" \
        in shown(md)
    assert "<em>Put there at export time by torchlib aten_transpose (trace_only Python).</em>" in gfm(md)


def test_json_report_carries_the_summary_keys_and_validates(reports):
    for name, r in reports.items():
        data = json.loads(json.dumps(report_dict(r)))
        jsonschema.validate(data, SCHEMA)
        summary_like = [s for f in data["families"] for b in f["bodies"] for s in b["specialised"]]
        assert all("place" in a for s in summary_like for a in s["aten_arguments"]), name
    data = report_dict(reports["pair_scale_a"])
    sdpa = next(f for f in data["families"] if f["label"] == "aten::scaled_dot_product_attention")
    assert sdpa["overloads"][0]["torchlib"] == {"target": "aten::scaled_dot_product_attention",
                                                "function": "aten_scaled_dot_product_attention", "trace_only": True,
                                                "source": "function_libs/torch_lib/ops/nn.py:1806"}
    scale = next(s for s in sdpa["bodies"][0]["specialised"] if s["aten_arguments"])
    assert scale["category"] == "varies"
    assert scale["baked_by"] == "torchlib aten_scaled_dot_product_attention (trace_only)"
    assert scale["aten_arguments"][0]["place"] == "Mul on query/key" and scale["aten_arguments"][0]["value"] is None
    assert scale["shape_specialised"].endswith("for head dim E=8 (the last dim of query [1,4,8,8])")
    assert scale["read_by"] == "3"
    html = render_html(reports["pair_scale_a"])  # a constant: the place (an operand it reaches) is named
    assert ("shape-specialised: <a href='#f5-b0-a-scale'>scale</a>=None at <code>Mul on query/key</code>: default "
            "scale: constant val_64 is sqrt(1/sqrt(E)), applied to both query and key, for head dim E&#61;8") in html
    llama = report_dict(reports["llama_gqa"])
    sdpa = next(f for f in llama["families"] if f["label"] == "aten::scaled_dot_product_attention")["bodies"][0]
    assert sdpa["rewritten_by"] == ["ReshapeReshape"] and sdpa["lone"] is True
    assert [(s["category"], s["value"]) for s in sdpa["specialised"] if s["category"] == "shape_specialised"] == [
        ("shape_specialised", [4, 8, 8]), ("shape_specialised", [1, 4, 8, 8])]
    assert [(x["where"], x["value"]) for x in sdpa["left_out"]] == [("Reshape.allowzero", 0), ("Softmax.axis", -1)]


def test_torchscript_per_call_values_in_every_format(reports):
    block = next(f for f in _truth("ts_functions")["module_functions"] if f["name"] == "Block")
    eps = [str(np.float32(i["eps"])) for i in block["instances"]]  # (numpy's shortest text of each float32)
    assert eps == ["1e-05", "1e-06", "1e-05"]
    r = reports["ts_functions"]
    body = _body(r, "__main__.Block")
    (spec,) = body.specialised
    assert [(c.call, c.text) for c in spec.call_sites] == [(f"main//{i['path']}/Block", e)
                                                           for i, e in zip(block["instances"], eps, strict=True)]
    html = render_html(r)
    table = html.split(f"<h4 id='{body.id}-calls'>Per call site")[1].split("</table>")[0]
    rows = re.findall(r"<tr><td class='mono'>([^<]*)</td>(.*?)</tr>", table)
    assert [(call, re.sub(r"<[^>]+>", "", cells)) for call, cells in rows] == [
        ("main//blocks.0/Block", eps[0]), ("main//blocks.1/Block", eps[1]), ("main//blocks.2/Block", eps[2])]
    assert rows[1][1] == f"<td class='mono'><span class='spec varies'>{eps[1]}</span></td>"  # differs: marked
    assert "parametric: @inferred::LayerNormalization_epsilon, varies between calls" in html
    md = render_markdown(r)
    assert ("| main//blocks.0/Block | 1e-05 |\n| main//blocks.1/Block | 🟧 1e-06 |\n"
            "| main//blocks.2/Block | 1e-05 |") in md
    data = report_dict(r)
    spec_json = next(f for f in data["families"] if f["label"] == "__main__.Block")["bodies"][0]["specialised"][0]
    assert spec_json["call_sites"] == [{"call": c.call, "value": c.value} for c in spec.call_sites]
    assert spec_json["varies"] is True


def test_left_out_values_are_one_click_away(reports):
    r = reports["convnet"]
    body = _body(r, "aten::max_pool2d")
    assert [(s.where, s.value) for s in body.left_out] == [("MaxPool.storage_order", 0), ("MaxPool.auto_pad", "NOTSET")]
    html = render_html(r)
    assert ("<details class='left-out'><summary>2 attributes equal to their ONNX default left out (neither varying nor "
            "linked)</summary><table><tr><th>value</th><th>where</th></tr><tr id='" + body.id + "-l0'><td class='mono'>"
            "0</td><td class='mono'>MaxPool.storage_order</td></tr>") in html
    assert ("_Left out: 2 attributes equal to their ONNX default (neither varying nor linked): "
            "MaxPool.storage\\_order = 0, MaxPool.auto\\_pad = 'NOTSET'._") in render_markdown(r)


def test_folded_function_body_has_the_aten_signature_and_torchlib(tmp_path: Path):
    model, _report = fold_model(open_index(ZOO / "pair_transpose_b.onnx"))
    onnx.save(model, tmp_path / "folded.onnx")
    r = build_report(open_index(tmp_path / "folded.onnx"), graphs=False)
    body = _body(r, "aten::transpose")
    assert body.signature is not None
    assert body.signature.text == "aten::transpose.int(self=%view, dim0=1, dim1=3) -> Tensor(a)"
    assert body.torchlib is not None and body.torchlib.function == "aten_transpose"
    html = render_html(r)
    assert "<h4>Aten signature <small class='muted'>(this call's values bound to parameter names)</small></h4>" in html


def test_hostile_call_sites_are_escaped(tmp_path: Path):
    body = helper.make_node("Gelu", ["x"], ["y"])
    attr = body.attribute.add()
    attr.name, attr.type, attr.ref_attr_name = "approximate", onnx.AttributeProto.STRING, "mode"
    fn = helper.make_function("m", "F", ["x"], ["y"], [body], [helper.make_opsetid("", 20)], ["mode"])
    calls = [helper.make_node("F", ["a"], [f"b{k}"], name=f"<img src=x onerror=alert({k})>|@bob", domain="m",
                              mode=mode) for k, mode in enumerate(["<script>x</script>", "[a](http://e.com)"])]
    graph = helper.make_graph(calls, "g", [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(f"b{k}", onnx.TensorProto.FLOAT, [2]) for k in range(2)])
    onnx.save(helper.make_model(graph, functions=[fn], opset_imports=[helper.make_opsetid("", 20),
                                                                      helper.make_opsetid("m", 1)]),
              tmp_path / "hostile.onnx")
    r = build_report(open_index(tmp_path / "hostile.onnx"), graphs=False)
    (spec,) = _body(r, "m.F").specialised
    assert [c.value for c in spec.call_sites] == ["<script>x</script>", "[a](http://e.com)"]
    html = render_html(r)
    assert "<img" not in html and "<script>x" not in html and "http://" not in html
    assert "main/&lt;img src&#61;x onerror&#61;alert(0)&gt;|@bob" in html
    md = render_markdown(r)
    assert "<img" not in md and "<script" not in md and "@bob" not in md
    assert not tags(md) & {"a", "img", "script"}  # no link, image or script forms
    assert "| @\u2060mode (Gelu.approximate) |" in md  # no mention, the cell intact
    jsonschema.validate(json.loads(json.dumps(report_dict(r))), SCHEMA)
