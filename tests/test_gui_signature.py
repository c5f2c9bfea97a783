"""The signature panel and the details panel on zoo exports (torch 2.13): evidence and place of each link,
shape-specialised values, the torchlib function that lowered a call, TorchScript per-call values, the values left
out as ONNX defaults, and the aten signature of a folded function call."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QUrl

from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import ModelIndex, open_index
from inspector.gui.analysis import Analyses, Selection
from inspector.gui.details import describe
from inspector.gui.main_window import MainWindow
from inspector.gui.signature_panel import LEFT_OUT_LINK, SignaturePanel

ZOO = Path(__file__).resolve().parent / "zoo"


def _truth(name: str) -> dict:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


def _panel(qtbot, index: ModelIndex, obj: object) -> tuple[SignaturePanel, Selection, str]:
    sel = Analyses(index).selection(obj)  # type: ignore[arg-type]
    assert sel is not None
    panel = SignaturePanel()
    qtbot.addWidget(panel)
    panel.show_selection(sel)
    return panel, sel, panel.view.toPlainText()


def _first_call(index: ModelIndex, name: str):
    fam = index.family("aten_call", "aten", name)
    assert fam is not None
    return fam.overloads[0].aten_calls[0]


def _table(text: str) -> list[str]:
    """The specialised-values table as its cells, one per line."""
    return text.split("Specialised values\n")[1].split("\n\n")[0].splitlines()


def test_sdpa_of_llama_gqa_shows_the_scale_with_its_evidence_and_the_shape_specialised_reshapes(qtbot):
    index = open_index(ZOO / "llama_gqa.onnx")
    panel, _sel, text = _panel(qtbot, index, _first_call(index, "scaled_dot_product_attention"))
    head_dim = _truth("llama_gqa")["config"]["hidden_size"] // _truth("llama_gqa")["config"]["num_attention_heads"]
    assert head_dim == 8  # so torch's default scale is 8 ** -0.5, split as its square root over query and key
    assert ("aten::scaled_dot_product_attention → torchlib aten_scaled_dot_product_attention, trace_only "
            "(function_libs/torch_lib/ops/nn.py:1806, onnxscript 0.7.2)") in text
    assert ("The optimizer's rewriter changed these nodes (rule ReshapeReshape), so their values are not attributed "
            "to torchlib's code.") in text
    assert _table(text) == [
        "where", "value", "in the family",
        "val_206/shape (Reshape)", "[4, 8, 8]", "no sibling to compare",
        "evidence: shape-specialised: [4, 8, 8] = (-1, S, E) of key expand_2 [1, 2, 2, 8, 8] (-1 resolved)",
        "val_194 (Reshape)", "[1, 4, 8, 8]", "no sibling to compare",
        "evidence: shape-specialised: [1, 4, 8, 8] = key's leading dims merged, then (E, S), of key expand_2 "
        "[1, 2, 2, 8, 8]",
        "val_210 (Mul)", "0.59460354", "no sibling to compare",
        "evidence: scale=0.35355339 at Mul on query/key: constant val_210 is sqrt(scale), applied to both query "
        "and key",
        "val_214 (Where)", "0.0", "no sibling to compare", "evidence: none",  # (a float's zero: the Where's fill)
        "Transpose.perm", "[0, 2, 1]", "no sibling to compare", "evidence: none",
    ]
    scale = next(s for s in panel.specialised() if s.links)
    assert abs(float(scale.literal.value) ** 2 - head_dim ** -0.5) < 1e-6
    html = panel.view.toHtml().replace(" ", "")
    assert "background-color:#d5a6bd" in html  # the shape-specialised reshapes are mauve
    assert "Left out: 2 attributes equal to their ONNX default (neither varying nor linked). Show them" in text


def test_explicit_sdpa_scale_is_linked_and_put_there_by_trace_only_torchlib(qtbot):
    truth = _truth("pair_scale_b")
    assert (truth["pair"]["hyperparameter"], truth["pair"]["value"]) == ("scale", 0.3)
    index = open_index(ZOO / "pair_scale_b.onnx")
    _p, _sel, text = _panel(qtbot, index, _first_call(index, "scaled_dot_product_attention"))
    assert "scale=0.3)" in text.replace(", enable_gqa=False (default)", "")  # bound in the aten signature
    rows = _table(text)
    k = rows.index("val_57 (Mul)")  # both attention layers use scale=0.3: the same value in the family
    assert rows[k + 1: k + 4] == [
        "0.5477226", "same in family",
        "evidence: scale=0.3 at Mul on query/key: constant val_57 is sqrt(scale), applied to both query and key"]
    assert abs(0.54772258 ** 2 - 0.3) < 1e-7
    assert "Put there at export time by torchlib aten_scaled_dot_product_attention (trace_only Python)." in text


def test_default_scale_that_varies_says_it_is_shape_specialised_once(qtbot):
    index = open_index(ZOO / "pair_scale_a.onnx")
    _p, _sel, text = _panel(qtbot, index, _first_call(index, "scaled_dot_product_attention"))
    rows = _table(text)
    k = rows.index("val_64 (Mul)")
    assert rows[k + 1: k + 4] == [
        "[0.59460354]", "varies",
        "evidence: shape-specialised: scale=None at Mul on query/key: default scale: constant val_64 is "
        "sqrt(1/sqrt(E)), applied to both query and key, for head dim E=8 (the last dim of query [1,4,8,8])"]
    assert text.count("for head dim E=8") == 1


def test_torchscript_function_lists_each_call_sites_value_and_marks_the_one_that_differs(qtbot):
    index = open_index(ZOO / "ts_functions.onnx")
    fam = index.family("function", "__main__", "Block")
    assert fam is not None
    second = index.functions.calls[fam.overloads[0].function][1]
    panel, sel, text = _panel(qtbot, index, second)
    assert sel.call == second.where and sel.signature is None and sel.target is None  # TorchScript: no aten
    rows = _table(text)
    assert rows[3:7] == ["LayerNormalization.epsilon", "@inferred::LayerNormalization_epsilon", "varies between calls",
                         "evidence: each call passes its own value (3 calls, below)"]
    per_call = text.split("Per call site the values each call passes to the function's attributes\n")[1]
    eps = [float(np.float32(i["eps"])) for i in next(
        f for f in _truth("ts_functions")["module_functions"] if f["name"] == "Block")["instances"]]
    assert eps == [float(np.float32(1e-5)), float(np.float32(1e-6)), float(np.float32(1e-5))]
    assert per_call.splitlines()[:8] == ["call", "@inferred::LayerNormalization_epsilon (LayerNormalization.epsilon)",
                                         "main//blocks.0/Block", "1e-05",
                                         "main//blocks.1/Block", "1e-06",
                                         "main//blocks.2/Block", "1e-05"]
    html = panel.view.toHtml()
    assert html.count("#f6b26b") == 2  # the legend, and the one call whose eps differs from the first call's
    # the selected call stands out (bold) in the per-call table and in the list of calls, and no other does
    assert html.count('<span style=" font-weight:700;">main//blocks.1/Block</span>') == 2
    assert html.count("font-weight:700;\">main//") == 2
    details = describe(index, second)
    assert "Attributes this call passes" in details and "inferred::LayerNormalization_epsilon" in details
    assert "1e-06" in details  # what this (second) instance passes


def test_left_out_values_show_on_one_click(qtbot):
    index = open_index(ZOO / "convnet.onnx")
    panel, _sel, text = _panel(qtbot, index, _first_call(index, "max_pool2d"))
    assert "MaxPool.storage_order" not in text.split("Specialised values")[1]
    assert [s.literal.name for s in _sel.analysis.specialised] == ["dilations", "ceil_mode", "pads", "strides",
                                                             "kernel_shape"]
    panel.view.anchorClicked.emit(QUrl(LEFT_OUT_LINK))
    text = panel.view.toPlainText()
    assert "Hide them\nwhere\nvalue\nMaxPool.storage_order\n0\nMaxPool.auto_pad\n'NOTSET'" in text
    panel.view.anchorClicked.emit(QUrl(LEFT_OUT_LINK))
    assert "MaxPool.storage_order" not in panel.view.toPlainText()


def test_folded_call_shows_the_aten_signature_with_its_values_and_torchlib(qtbot, tmp_path: Path):
    truth = _truth("pair_transpose_b")
    assert (truth["pair"]["hyperparameter"], truth["pair"]["value"]) == ("transpose", [1, 3])
    model, _report = fold_model(open_index(ZOO / "pair_transpose_b.onnx"))
    onnx.save(model, tmp_path / "folded.onnx")
    index = open_index(tmp_path / "folded.onnx")
    fam = index.family("function", "pkg.torch.aten", "transpose")
    assert fam is not None and fam.label == "aten::transpose"
    site = index.functions.calls[fam.overloads[0].function][0]
    _p, sel, text = _panel(qtbot, index, site)
    assert sel.signature is not None and sel.target == "aten::transpose.int"
    assert "aten::transpose.int(self=%view, dim0=1, dim1=3) -> Tensor(a)" in text
    assert ("aten::transpose.int → torchlib aten_transpose, trace_only (function_libs/torch_lib/ops/core.py:10114, "
            "onnxscript 0.7.2)") in text
    assert "Transpose<perm = [0, 3, 2, 1]>" in text
    overview = describe(index, fam.overloads[0])
    assert "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -&gt; Tensor(a)" in overview
    assert "aten_transpose, trace_only" in overview
    call = describe(index, site)
    assert "aten::transpose.int(self&#61;%view, dim0&#61;1, dim1&#61;3) -&gt; Tensor(a)" in call


def test_window_shows_torchlib_and_evidence_for_a_selected_call(window: MainWindow, qtbot):
    with qtbot.waitSignal(window.center.view_shown, timeout=30000):
        window.open_path(ZOO / "pair_transpose_a.onnx")
    window.filter_box.set_now("transpose")
    proxy = window.family_filter
    call = proxy.index(0, 0, proxy.index(0, 0, proxy.index(0, 0)))
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(call)
    text = window.signature.view.toPlainText()
    assert "aten::transpose.int → torchlib aten_transpose, trace_only" in text
    # the place (Transpose.perm) is the row's where: said once
    assert ("Transpose.perm\nunreviewed\n[0, 2, 1, 3]\nno sibling to compare\n"
            "evidence: dim0=1: perm swaps dims 1 and 2") in text
    assert "Put there at export time by torchlib aten_transpose (trace_only Python)." in text
    assert "torchlib\naten::transpose.int → aten_transpose, trace_only" in window.details.toPlainText()


def test_hostile_call_sites_and_values_are_shown_as_text(qtbot, tmp_path: Path):
    """A hand-made function whose attribute is bound per call: node names and string values holding markup."""
    from onnx import helper

    body = helper.make_node("Gelu", ["x"], ["y"])
    body.attribute.add().CopyFrom(helper.make_attribute("approximate", ""))  # replaced by a reference below
    body.attribute[0].ClearField("s")
    body.attribute[0].ref_attr_name = "mode"
    fn = helper.make_function("m", "F", ["x"], ["y"], [body], [helper.make_opsetid("", 20)], ["mode"])
    calls = [helper.make_node("F", ["a"], [f"b{k}"], name=f"<img src=x onerror=alert({k})>", domain="m",
                              mode=mode) for k, mode in enumerate(["<b>tanh</b>", "none"])]
    graph = helper.make_graph(calls, "g", [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(f"b{k}", onnx.TensorProto.FLOAT, [2]) for k in range(2)])
    model = helper.make_model(graph, functions=[fn], opset_imports=[helper.make_opsetid("", 20),
                                                                     helper.make_opsetid("m", 1)])
    onnx.save(model, tmp_path / "hostile.onnx")
    index = open_index(tmp_path / "hostile.onnx")
    fam = index.family("function", "m", "F")
    assert fam is not None
    site = index.functions.calls[fam.overloads[0].function][0]
    panel, _sel, text = _panel(qtbot, index, site)
    assert "main/<img src=x onerror=alert(0)>\n'<b>tanh</b>'" in text  # shown literally, one row per call
    assert "<img" not in panel.view.toHtml() and "<b>tanh" not in panel.view.toHtml()
    details = describe(index, site)
    assert "&lt;img src&#61;x onerror&#61;alert(0)&gt;" in details and "<img" not in details


def _visual_lines(panel: SignaturePanel) -> list[str]:
    """Every line of the panel's text as laid out on screen (table cells included), stripped."""
    doc = panel.view.document()
    out = []
    block = doc.begin()
    while block.isValid():
        layout, text = block.layout(), block.text()
        for k in range(layout.lineCount()):
            line = layout.lineAt(k)
            cut = text[line.textStart(): line.textStart() + line.textLength()]
            out.append(cut.replace("\xa0", " ").strip("\u2028 "))
        block = block.next()
    return out


@pytest.mark.parametrize(("model", "target", "values"), [
    # the mask fill value of bert's attention (a float32's lowest), read whole in a squeezed table
    ("bert", "scaled_dot_product_attention", [["-3.4028235e+38"], ["[-1, 8, 16]"], ["[1, 2, 16, 8]"]]),
    # a long nested list: broken only after an item's comma, never inside a number
    ("bert", "index", [["[[[[[0, 0], [0, 1],", "[0, 2], [0, 3], [0,", "4], [0, 5], [0, 6],", "[0, 7]]]]]"]]),
])
def test_values_in_a_narrow_panel_wrap_only_between_list_items(qtbot, model: str, target: str,
                                                               values: list[list[str]]):
    index = open_index(ZOO / f"{model}.onnx")
    panel, _sel, _text = _panel(qtbot, index, _first_call(index, target))
    panel.resize(347, 600)  # its width in a 1024 px window
    panel.show()
    qtbot.waitExposed(panel)
    lines = _visual_lines(panel)
    for value in values:
        k = lines.index(value[0])
        assert lines[k: k + len(value)] == value


def test_an_ambiguous_recognised_call_shows_each_candidates_lowering_and_schema(qtbot, tmp_path: Path):
    """mixer's patch embedding with its metadata stripped and its values renamed as another tool might (no name tells:
    ``recognise_names``): a Conv conv2d and convolution share. The panel binds no schema (a guess) and shows, for each
    candidate, the torchlib function that lowers it and its schema."""
    import onnx

    from tests.stripping import renamed_outputs, stripped_model

    onnx.save(renamed_outputs(stripped_model(ZOO / "mixer.onnx")), str(tmp_path / "mixer.onnx"))
    index = open_index(tmp_path / "mixer.onnx")
    # (a batch norm the optimizer fused into a convolution is a Conv too, but of weights the fusion made: the model's
    # own parameters, which stripping leaves marked so, rule it out)
    conv = next(c for c in index.provenance.calls if c.candidates == ("aten::conv2d", "aten::convolution"))
    assert conv.ruled_out == ("aten::_native_batch_norm_legit_no_training",)
    _p, sel, text = _panel(qtbot, index, conv)
    assert sel.signature is not None and sel.signature.schema is None
    assert ("aten::conv2d → torchlib aten_conv2d, trace_only\naten::convolution → torchlib aten_convolution, "
            "trace_only") in text
    assert "aten::_native_batch_norm_legit_no_training → torchlib" not in text
    assert "Also fits aten::_native_batch_norm_legit_no_training: ruled out by the names of its values" in text
    assert "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1]" in text
    assert "no torchlib function in the catalogue" not in text
