"""Overload against overload: two members of one family side by side, on zoo exports, with what differs checked
against the arguments torch bound (the truth files), and the identical-calls list checked against torch's module
paths and arguments."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QItemSelectionModel, QPersistentModelIndex, Qt

from inspector.core.model.calls import AtenCall
from inspector.core.model.index import open_index
from inspector.core.model.keys import FunctionKey
from inspector.gui.analysis import Analyses
from inspector.gui.overload_compare import FamilyCompare, OverloadCompareWindow, compare_members
from inspector.gui.pairing import CHANGED
from tests.conftest import FIXTURES, torch_module

ZOO = Path(__file__).resolve().parent / "zoo"


def _truth(name: str) -> dict[str, dict[str, Any]]:
    """FX nodes of the main graph by name, from the truth file torch wrote."""
    t = json.loads((ZOO / f"{name}.truth.json").read_text())
    return {n["name"]: n for n in t["fx_nodes"] if n["graph"] == ""}


def _plain_args(node: dict[str, Any]) -> dict[str, Any]:
    """The non-tensor arguments torch bound (tensors are ``{"node": …}``)."""
    return {k: v for k, v in (node["args"] or {}).items() if k != "(defaults)" and not isinstance(v, dict)}


def _parsed(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # a symbol such as torch.float32


def _call(index, name: str) -> AtenCall:
    return next(c for c in index.provenance.calls if c.name == name)


@pytest.mark.parametrize(("model", "a", "b", "values"), [
    # eps=1e-5 vs 1e-6: the LayerNormalization's epsilon, linked to eps (1e-5 as the float32 ONNX stores)
    ("tiny_noopt", "layer_norm", "layer_norm_1", [("eps (LayerNormalization.epsilon)", 1e-05, 1e-06)]),
    # view(1, 8, 2, 16) vs view(1, 8, 4, 8): two Constant nodes of the shape, both linked to size
    ("tiny_noopt", "view", "view_4", [("size (Constant.value_ints)", 2, 4),
                                      ("size (Constant.value_ints)", 16, 8)]),
    # transpose(1, 2) vs transpose(2, 3): the one perm, linked to both dims
    ("t5_noopt", "transpose", "transpose_3", [("dim0, dim1 (Transpose.perm)", [0, 2, 1, 3], [0, 1, 3, 2])]),
    # to int64 vs to float32: Cast.to 7 vs 1 (ONNX's INT64 and FLOAT)
    ("t5_noopt", "_to_copy", "_to_copy_1", [("dtype (Cast.to)", 7, 1)]),
])
def test_two_calls_of_a_family_differ_in_the_arguments_torch_bound(model, a, b, values):
    index = open_index(ZOO / f"{model}.onnx")
    truth = _truth(model)
    c = compare_members(Analyses(index), _call(index, a), _call(index, b))
    ta, tb = _plain_args(truth[a]), _plain_args(truth[b])
    differing = {p: (ta[p], tb[p]) for p in ta if ta[p] != tb.get(p)}
    assert differing  # the truth has the two calls differ
    got = {r.label: (_parsed(r.a), _parsed(r.b)) for r in c.rows if r.kind == "argument"}
    assert got == differing
    assert [(r.label, _parsed(r.a), _parsed(r.b)) for r in c.rows if r.kind == "value"] == values
    assert not [r for r in c.rows if r.kind == "node"]  # one template: nothing only on one side
    # the lit boxes are the nodes holding those values, one for one on both sides
    assert len(c.pairing.marks_a) == len(c.pairing.marks_b) == len({sa[0] for sa, _sb in c.pairing.changed})
    for ida, (colour, _note) in c.pairing.marks_a.items():
        assert colour == CHANGED and c.pairing.marks_b[c.pairing.pairs[ida]][0] == CHANGED


DYNAMO = sorted(p.name[:-len(".truth.json")] for p in ZOO.glob("*.truth.json")
                if json.loads(p.read_text())["kind"].startswith("dynamo"))


@pytest.mark.parametrize("model", DYNAMO)
def test_identical_calls_are_torch_calls_of_one_module_path_and_equal_linked_arguments(model):
    """For every aten call: the identical calls listed name the module torch recorded for each FX node, are calls
    of one aten op, and all bound the same value to every argument their body's values are linked to."""
    index = open_index(ZOO / f"{model}.onnx")
    truth = _truth(model)
    graphs: dict[str, set[str]] = {}
    for n in json.loads((ZOO / f"{model}.truth.json").read_text())["fx_nodes"]:
        graphs.setdefault(n["name"], set()).add(n["graph"])
    ambiguous = {name for name, gs in graphs.items() if len(gs) > 1}
    analyses = Analyses(index)
    lists = 0
    for call in index.provenance.calls:
        sel = analyses.selection(call)
        if sel is None or call.name not in truth:
            continue
        names = [c.rsplit(" › ", 1) for c in sel.calls]
        assert [call.module_path or "root", call.name] in names
        linked = {x.parameter for s in sel.analysis.specialised for x in s.links}
        mine = _plain_args(truth[call.name])
        for module, name in names:
            if name in ambiguous:  # cond: names repeat across the branches' FX graphs (linear_1 is in all three)
                continue
            assert (torch_module(truth[name]["module"]) or "root") == module
            # one aten op; overloads may share a body (t5_noopt: where.self and where.ScalarOther)
            assert truth[name]["target"].split(".")[0] == truth[call.name]["target"].split(".")[0]
            other = _plain_args(truth[name])
            assert {p: other.get(p) for p in linked} == {p: mine.get(p) for p in linked}, (call.name, name)
        lists += len(names) > 1
    assert lists > 0


def test_layer_norm_calls_of_tiny_noopt_list_their_identical_calls():
    index = open_index(ZOO / "tiny_noopt.onnx")
    c = compare_members(Analyses(index), _call(index, "layer_norm"), _call(index, "layer_norm_1"))
    truth = _truth("tiny_noopt")
    assert truth["layer_norm"]["args"]["eps"] == truth["layer_norm_2"]["args"]["eps"] == 1e-05
    assert c.a.calls == ("blocks.0.norm › layer_norm", "blocks.2.norm › layer_norm_2")
    assert c.b.calls == ("blocks.1.norm › layer_norm_1",)


def test_two_function_overloads_and_what_cannot_be_compared():
    index = open_index(FIXTURES / "overloads.onnx")
    analyses = Analyses(index)
    c = compare_members(analyses, FunctionKey("local", "tr", "perm_0231"), FunctionKey("local", "tr", "perm_0213"))
    assert [(r.kind, r.label, r.a, r.b) for r in c.rows] == [
        ("value", "Transpose.perm", "[0, 2, 3, 1]", "[0, 2, 1, 3]")]
    assert c.pairing.marks_a == c.pairing.marks_b == {
        "n:0": (CHANGED, "Transpose.perm: [0, 2, 3, 1] -> [0, 2, 1, 3]")}
    assert c.a.calls == ("main/tr_b",) and c.b.calls == ("main/tr_a", "main/tr_d")
    with pytest.raises(ValueError, match="not of one family"):
        compare_members(analyses, FunctionKey("local", "tr", "perm_0231"), FunctionKey("local", "sm", "axis_1"))
    fam = next(f for f in index.families if f.name == "tr")
    with pytest.raises(ValueError, match="not a whole family"):
        compare_members(analyses, fam, FunctionKey("local", "tr", "perm_0213"))


def _select_rows(window, *objects) -> None:
    rows = []
    for obj in objects:
        assert window.select_in_tree(obj)
        rows.append(QPersistentModelIndex(window.family_view.currentIndex()))
    model = window.family_view.selectionModel()
    for row in rows:
        model.select(row, QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows)


def _opened(qtbot, window) -> OverloadCompareWindow:
    fc = window.findChild(FamilyCompare)
    assert fc is not None and fc.windows
    ow = fc.windows[-1]
    qtbot.addWidget(ow)
    qtbot.waitUntil(lambda: ow.ready, timeout=60000)
    return ow


def test_ctrl_d_on_two_selected_calls_shows_them_side_by_side_lit_and_in_step(qtbot, window):
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(ZOO / "tiny_noopt.onnx")
    index = window.index
    ln0, ln1 = _call(index, "layer_norm"), _call(index, "layer_norm_1")
    _select_rows(window, ln0, ln1)
    window.family_view.setFocus()
    qtbot.keyClick(window.family_view, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    ow = _opened(qtbot, window)
    assert ow.twin.side_a.current_scope() is ln0
    assert ow.twin.side_b.current_scope() is ln1
    rows = [tuple(ow.rows.topLevelItem(i).text(k) for k in range(3)) for i in range(ow.rows.topLevelItemCount())]
    assert rows == [("argument eps", "1e-05", "1e-06"),
                    ("eps (LayerNormalization.epsilon)", "1e-05", "1e-06")]
    # the LayerNormalization box is lit on both sides, and a click on one selects the other
    graph = index.proto.graph
    n0 = next(p[0] for p in ln0.node_paths if graph.node[p[0]].op_type == "LayerNormalization")
    n1 = next(p[0] for p in ln1.node_paths if graph.node[p[0]].op_type == "LayerNormalization")
    ga, gb = ow.twin.side_a.graph, ow.twin.side_b.graph
    assert {i for i, it in ga.items_by_id.items() if it.mark} == {f"n:{n0}"}
    assert {i for i, it in gb.items_by_id.items() if it.mark} == {f"n:{n1}"}
    assert ga.items_by_id[f"n:{n0}"].mark == CHANGED
    ga.select(f"n:{n0}")
    assert gb.selected().id == f"n:{n1}"
    assert graph.node[n1].name in ow.twin.b.info.toPlainText()
    gb.select("const:blocks.1.norm.weight")  # the weights (small: drawn as constants) pair up too
    assert ga.selected().id == "const:blocks.0.norm.weight"
    # the info panels: each side's signature and body, the differing argument and value lit
    html_a, html_b = ow.twin.a.info.toHtml(), ow.twin.b.info.toHtml()
    text_a = ow.twin.a.info.toPlainText()
    assert "aten::layer_norm(" in text_a and "eps=1e-05" in text_a and "epsilon = 1e-05" in text_a
    assert "Identical calls (2)" in text_a and "blocks.2.norm › layer_norm_2" in text_a
    for html, value in ((html_a, "1e-05"), (html_a, "1e-05"), (html_b, "1e-06")):
        assert _lit(html, value), value
    assert "normalized_shape=[32]" in text_a  # equal on both sides: not lit; only eps and epsilon are
    assert html_a.count("background-color:#e69138") == html_b.count("background-color:#e69138") == 2


def _lit(html: str, value: str) -> bool:
    """Whether ``value`` is shown in a span with the changed colour (Qt's rich text, as the panel holds it)."""
    return f">{value}<" in html and "background-color:#e69138" in html.split(f">{value}<")[0].rsplit("<span", 1)[-1]


def test_compare_with_lists_the_siblings_and_a_family_row_is_refused(qtbot, window):
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(FIXTURES / "overloads.onnx")
    fc = window.findChild(FamilyCompare)
    key = FunctionKey("local", "tr", "perm_0231")
    others = fc.siblings(key)
    assert [label for label, _o in others] == ["local.tr:perm_0213", "call main/tr_a", "call main/tr_d",
                                               "local.tr:perm_1023", "call main/tr_c"]
    ow = fc.compare(key, others[0][1])
    assert ow is not None
    qtbot.addWidget(ow)
    qtbot.waitUntil(lambda: ow.ready, timeout=60000)
    assert ow.twin.side_a.graph.items_by_id["n:0"].mark == CHANGED
    assert ow.header.text().startswith("local.tr — A: local.tr:perm_0231   B: local.tr:perm_0213")
    fam = next(f for f in window.index.families if f.name == "tr")
    _select_rows(window, fam, FunctionKey("local", "tr", "perm_0213"))
    assert fc.compare_selected() is None
    assert "Cannot compare: pick two overloads or two calls" in window.statusBar().currentMessage()


def test_two_sdpa_calls_with_different_head_counts_differ_only_in_shape_specialised_values():
    """pair_scale_a's two attention layers have 4 and 2 heads: torch bound the same SDPA arguments (scale None), so
    no argument differs, but the bodies bake the head split (from the view before each call: [b, s, heads, d])
    and the default scale, applied to q and k each as sqrt(1/sqrt(d))."""
    index = open_index(ZOO / "pair_scale_a.onnx")
    truth = _truth("pair_scale_a")
    c = compare_members(Analyses(index), _call(index, "scaled_dot_product_attention"),
                        _call(index, "scaled_dot_product_attention_1"))
    assert _plain_args(truth["scaled_dot_product_attention"]) == _plain_args(truth["scaled_dot_product_attention_1"])
    assert not [r for r in c.rows if r.kind != "value"]
    (b, s, h0, d0), (_b, _s, h1, d1) = truth["view"]["args"]["size"], truth["view_4"]["args"]["size"]
    rows = [(r.label, _parsed(r.a), _parsed(r.b)) for r in c.rows]
    assert rows[:2] == [("Reshape.shape", [-1, s, d0], [-1, s, d1]), ("Reshape.shape", [b, h0, d0, s], [b, h1, d1, s])]
    assert rows[2][0] == "scale (Mul.B)"
    assert rows[2][1] == pytest.approx((1 / d0 ** 0.5) ** 0.5) and rows[2][2] == pytest.approx((1 / d1 ** 0.5) ** 0.5)
    assert len(rows) == 3


def test_torchscript_call_sites_passing_different_values_are_not_called_identical(qtbot, window):
    """ts_functions: each Block instance passes its own eps (torch: 1e-5, 1e-6, 1e-5) to the one Block function, so
    its three call sites share a body but are not identical calls."""
    t = json.loads((ZOO / "ts_functions.truth.json").read_text())
    block = next(f for f in t["module_functions"] if f["name"] == "Block")
    assert len({i["eps"] for i in block["instances"]}) == 2
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(ZOO / "ts_functions.onnx")
    fam = next(f for f in window.index.families if f.name == "Block")
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        assert window.select_in_tree(fam.overloads[0])
    text = window.signature.view.toPlainText()
    assert f"Calls ({block['calls']}) same body; the values they pass differ" in text
    assert "Identical calls" not in text


def test_two_torchscript_call_sites_differ_in_what_each_instance_passes():
    """ts_functions: the Block and Attention functions are generic; each call site passes its instance's eps, or
    its reshape shape [1, seq, heads, d/heads] (torch: heads 2, 4, 2), lit where the body refers to it."""
    t = json.loads((ZOO / "ts_functions.truth.json").read_text())
    instances = {f["name"]: f["instances"] for f in t["module_functions"]}
    index = open_index(ZOO / "ts_functions.onnx")
    analyses = Analyses(index)
    block = next(k for k in index.functions.functions if k.name == "Block")
    s0, s1 = index.functions.calls[block][:2]
    c = compare_members(analyses, s0, s1)
    (row,) = c.rows
    assert (row.kind, row.label) == ("passed", "inferred::LayerNormalization_epsilon")
    assert _parsed(row.a) == pytest.approx(instances["Block"][0]["eps"], rel=1e-6)
    assert _parsed(row.b) == pytest.approx(instances["Block"][1]["eps"], rel=1e-6)
    body = index.functions.functions[block]
    ln = next(i for i, n in enumerate(body.node) if n.op_type == "LayerNormalization")
    assert set(c.pairing.marks_a) == set(c.pairing.marks_b) == {f"n:{ln}"}
    attention = next(k for k in index.functions.functions if k.name == "Attention")
    a0, a1 = index.functions.calls[attention][:2]
    c = compare_members(analyses, a0, a1)
    seq, dim = t["inputs"][0]["shape"][1], t["config"]["d"]
    shapes = [[1, seq, i["heads"], dim // i["heads"]] for i in instances["Attention"][:2]]
    assert {(r.kind, _parsed(r.a).__repr__(), _parsed(r.b).__repr__()) for r in c.rows} == {
        ("passed", repr(shapes[0]), repr(shapes[1]))}
    assert len(c.rows) == 3 and len(c.pairing.marks_a) == 3  # three Constant nodes take the shape


def test_ctrl_d_reaches_the_window_from_the_filter_box(qtbot, window):
    """Qt's line edits take Ctrl+D as 'delete the next character' on Linux: the filter box leaves it to the
    window, so two rows selected and then a filter typed still compare with Ctrl+D."""
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(ZOO / "tiny_noopt.onnx")
    index = window.index
    _select_rows(window, _call(index, "view"), _call(index, "view_4"))
    box = window.filter_box
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    ow = _opened(qtbot, window)
    assert [ow.rows.topLevelItem(i).text(0) for i in range(ow.rows.topLevelItemCount())] == [
        "argument size", "size (Constant.value_ints)", "size (Constant.value_ints)"]


def test_markup_in_model_names_is_shown_as_text(qtbot, window, tmp_path: Path):
    """Model strings are untrusted: a function named with markup and a node name with markup read as text in the
    side-by-side window's header, rows and info panels."""
    import onnx

    model = onnx.load(str(FIXTURES / "overloads.onnx"))
    hostile = "<img src=x>tr"
    for f in model.functions:
        if f.name == "tr":
            f.name = hostile
            f.node[0].name = "<b>bold</b>"
    for n in model.graph.node:
        if n.op_type == "tr":
            n.op_type = hostile
    path = tmp_path / "hostile.onnx"
    onnx.save(model, str(path))
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(path)
    fc = window.findChild(FamilyCompare)
    ow = fc.compare(FunctionKey("local", hostile, "perm_0231"), FunctionKey("local", hostile, "perm_0213"))
    assert ow is not None
    qtbot.addWidget(ow)
    qtbot.waitUntil(lambda: ow.ready, timeout=60000)
    ow.twin.side_a.graph.select("n:0")
    assert f"local.{hostile}:perm_0231" in ow.header.text()
    for info in (ow.twin.a.info, ow.twin.b.info):
        assert f"local.{hostile}" in info.toPlainText()
        assert "<img" not in info.toHtml() and "<b>bold" not in info.toHtml()
    assert "<b>bold</b>" in ow.twin.a.info.toPlainText()  # the selected node's name, as text


def test_whisper_encoder_and_decoder_self_attention_differ_in_the_attn_mask_torch_passed():
    """Whisper's decoder self-attention passes a causal mask (``attn_mask=%expand_1``), its encoder none: the
    decoder's body has the Add, IsNaN and Where the encoder's has not, and the comparison names the argument
    behind them. Tensor arguments are compared by whether one is passed (their names always differ), so the
    encoder against the cross-attention (no mask either) lists no argument."""
    index = open_index(ZOO / "whisper.onnx")
    truth = _truth("whisper")
    enc, dec, cross = (_call(index, n) for n in ("scaled_dot_product_attention", "scaled_dot_product_attention_1",
                                                  "scaled_dot_product_attention_2"))
    assert truth[enc.name]["args"]["attn_mask"] is None and truth[cross.name]["args"]["attn_mask"] is None
    mask = truth[dec.name]["args"]["attn_mask"]["node"]
    analyses = Analyses(index)
    c = compare_members(analyses, enc, dec)
    args = [(r.label, r.a, r.b) for r in c.rows if r.kind == "argument"]
    assert args == [("attn_mask", "None (default)", f"%{mask}")]
    assert "attn_mask" in c.arguments
    only = next(r for r in c.rows if r.kind == "node")
    assert only.a == "-" and {"Add", "IsNaN", "Where"} <= set(only.b.replace(",", " ").split())
    assert [r for r in compare_members(analyses, enc, cross).rows if r.kind == "argument"] == []


def test_the_window_lists_and_lights_the_attn_mask_of_whisper_decoder_self_attention(qtbot, window):
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(ZOO / "whisper.onnx")
    index = window.index
    compare = window.family_compare.compare(_call(index, "scaled_dot_product_attention"),
                                            _call(index, "scaled_dot_product_attention_1"))
    assert compare is not None
    qtbot.waitUntil(lambda: compare.comparison is not None and compare.rows.topLevelItemCount() > 0, timeout=60000)
    rows = [compare.rows.topLevelItem(i) for i in range(compare.rows.topLevelItemCount())]
    assert [(r.text(0), r.text(1), r.text(2)) for r in rows if r.text(0).startswith("argument")] == [
        ("argument attn_mask", "None (default)", "%expand_1")]
    lit = f"background-color:{CHANGED};color:#000000'>%expand_1</span>"  # the argument lit in B's signature
    assert lit in compare.twin.b.summary_html
    assert "None (default)</span>" in compare.twin.a.summary_html
    compare.close()
