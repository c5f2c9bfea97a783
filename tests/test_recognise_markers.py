"""The recognised-call marker in reports and in the app: a body whose calls were recognised by template (the zoo's
gpt2 with its torch metadata stripped, ``scripts/strip_metadata.py``) says so, with the template's name, in JSON (per
``resources/report.schema.json``), HTML, Markdown and the signature panel; an export with its metadata has no marker.
Template names come from the shipped catalogue, and are escaped like any text where they are shown."""

from __future__ import annotations

import dataclasses
import html
import json

import jsonschema
import onnx
import pytest

from inspector.core.model.index import ModelIndex, open_index
from inspector.report import build_report
from inspector.report.html import render_html
from inspector.report.jsonreport import render_json
from inspector.report.markdown import render_markdown
from tests.conftest import ROOT
from tests.stripping import renamed_outputs, stripped_file, stripped_model

ZOO = ROOT / "tests" / "zoo"
SCHEMA = json.loads((ROOT / "resources" / "report.schema.json").read_text())
MUL = "Recognised by template aten::mul.Tensor#0 (no fx metadata)"
VIEW = ("Recognised by templates aten::_unsafe_view#0, aten::view#0, aten::view#2, aten::view#3, aten::view#4 "
        "(no fx metadata); "
        "ambiguous body, candidates: aten::_unsafe_view, aten::view")


@pytest.fixture(scope="module")
def gpt2_stripped(tmp_path_factory: pytest.TempPathFactory) -> ModelIndex:
    return open_index(stripped_file(ZOO / "gpt2.onnx", tmp_path_factory.mktemp("stripped")))


@pytest.fixture(scope="module")
def gpt2_renamed(tmp_path_factory: pytest.TempPathFactory) -> ModelIndex:
    """Stripped, and its values renamed as another tool might: a lone Reshape is view or _unsafe_view, and no name
    tells which (``recognise_names``)."""
    folder = tmp_path_factory.mktemp("renamed")
    path = folder / "gpt2_renamed.onnx"
    onnx.save(renamed_outputs(stripped_model(ZOO / "gpt2.onnx")), str(path))
    return open_index(path)


def _bodies(data: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for fam in data["families"]:
        out.setdefault(fam["label"], []).extend(fam.get("bodies", []))
    return out


def test_report_marks_recognised_bodies_in_json_html_and_markdown(gpt2_renamed: ModelIndex) -> None:
    report = build_report(gpt2_renamed, graphs=False)
    data = json.loads(render_json(report))
    jsonschema.validate(data, SCHEMA)
    bodies = _bodies(data)
    muls = bodies["aten::mul"]
    # a Mul by a constant fits mul.Tensor's number form (#0), gelu's Mul of two tensors its tensor form (#1)
    assert muls and all(b["recognised"]["candidates"] == ["aten::mul.Tensor"] for b in muls)
    assert {tuple(b["recognised"]["templates"]) for b in muls} == {("aten::mul.Tensor#0",), ("aten::mul.Tensor#1",)}
    views = bodies["recognised::_unsafe_view_or_view"]
    assert views and all(b["recognised"]["candidates"] == ["aten::_unsafe_view", "aten::view"] for b in views)
    html = render_html(report)
    assert f"<p class='muted'>{MUL}</p>" in html and f"<p class='muted'>{VIEW}</p>" in html
    md = render_markdown(report)
    assert "_Recognised by template aten::mul.Tensor\\#0 (no fx metadata)_" in md  # (md_text: "#" inert)
    body = next(b for f in report.families for b in f.bodies if b.recognised)  # escaped as any text is
    body.recognised, body.candidates = ["<b>x</b>"], ["<i>a</i>", "[b](http://c)"]
    assert "Recognised by template &lt;b&gt;x&lt;/b&gt; (no fx metadata); ambiguous body, candidates: " \
           "&lt;i&gt;a&lt;/i&gt;, [b](http&#58;//c)" in render_html(report)  # (no autolink either)
    assert "<b>x</b>" not in render_html(report) and "[b](http://c)" not in render_markdown(report)


def test_report_of_an_export_with_its_metadata_has_no_marker() -> None:
    report = build_report(open_index(ZOO / "gpt2.onnx"), graphs=False)
    data = json.loads(render_json(report))
    assert not any("recognised" in b for bs in _bodies(data).values() for b in bs)
    assert "Recognised by template" not in render_html(report) and "Recognised by template" not in \
        render_markdown(report)


def test_signature_panel_names_the_template_and_escapes_it(qtbot, gpt2_stripped: ModelIndex,
                                                           gpt2_renamed: ModelIndex) -> None:
    pytest.importorskip("PySide6")
    from inspector.gui.analysis import Analyses
    from inspector.gui.signature_panel import SignaturePanel

    analyses = Analyses(gpt2_stripped)
    fam = gpt2_stripped.family("aten_call", "aten", "mul")
    assert fam is not None
    sel = analyses.selection(fam.overloads[0].aten_calls[0])
    assert sel is not None and sel.recognised == ("aten::mul.Tensor#0",)
    panel = SignaturePanel()
    qtbot.addWidget(panel)
    panel.show_selection(sel)
    assert "Recognised by template aten::mul.Tensor#0 (its nodes carry no fx metadata)" in panel.view.toPlainText()
    reshape = next(c for c in gpt2_renamed.provenance.calls if len(c.candidates) > 1
                   and "aten::view" in c.candidates)
    ambiguous = Analyses(gpt2_renamed).selection(reshape)
    assert ambiguous is not None
    panel.show_selection(ambiguous)
    assert "Ambiguous body, candidates: aten::_unsafe_view, aten::view" in panel.view.toPlainText()
    hostile = dataclasses.replace(sel, recognised=("<b>x</b>&amp;",), candidates=("<i>a</i>", "b"))
    panel.show_selection(hostile)
    text = panel.view.toPlainText()
    assert "Recognised by template <b>x</b>&amp; (its" in text and "candidates: <i>a</i>, b" in text


def test_no_marker_in_the_app_for_an_export_with_its_metadata(qtbot) -> None:
    pytest.importorskip("PySide6")
    from inspector.gui.analysis import Analyses
    from inspector.gui.signature_panel import SignaturePanel

    index = open_index(ZOO / "gpt2.onnx")
    fam = index.family("aten_call", "aten", "mul")
    assert fam is not None
    sel = Analyses(index).selection(fam.overloads[0].aten_calls[0])
    assert sel is not None and sel.recognised == ()
    panel = SignaturePanel()
    qtbot.addWidget(panel)
    panel.show_selection(sel)
    assert "Recognised by template" not in panel.view.toPlainText()


def _tooltips(index: ModelIndex) -> dict[str, list[str]]:
    """Overload row text -> the tooltips of it and its call rows, fetched as a view would."""
    from PySide6.QtCore import Qt

    from inspector.gui.family_model import FamilyModel

    model = FamilyModel(index)
    out: dict[str, list[str]] = {}
    root = model.index(-1, 0)
    for fam in [model.index(r, 0, root) for r in range(model.rowCount(root))]:
        for ov in [model.index(r, 0, fam) for r in range(model.rowCount(fam))]:
            if model.canFetchMore(ov):
                model.fetchMore(ov)
            rows = [ov] + [model.index(r, 0, ov) for r in range(model.rowCount(ov))]
            out[ov.data()] = [str(x.data(Qt.ItemDataRole.ToolTipRole)) for x in rows]
    return out


def test_family_tree_tooltips_name_the_template(qtbot, gpt2_stripped: ModelIndex) -> None:
    pytest.importorskip("PySide6")
    tips = _tooltips(gpt2_stripped)
    assert len(tips["aten::mul.Tensor"]) > 1
    # the overload row names both forms its calls fit (a Mul by a constant: #0; of two tensors: #1), each call its own
    row, *calls = tips["aten::mul.Tensor"]
    assert "recognised by templates aten::mul.Tensor#0, aten::mul.Tensor#1 (no fx metadata)" in row
    forms = [t for t in calls if "recognised by template aten::mul.Tensor#0 (no fx metadata)" in t]
    assert len(forms) == 6 and len(calls) == 8
    assert all("recognised by template aten::mul.Tensor#1 (no fx metadata)" in t for t in calls if t not in forms)
    plain = _tooltips(open_index(ZOO / "gpt2.onnx"))
    assert plain["aten::mul.Tensor"] and not any("recognised" in t for ts in plain.values() for t in ts)


def test_a_target_kept_by_its_outputs_name_says_what_else_fits(qtbot, gpt2_stripped: ModelIndex) -> None:
    """gpt2's lone Reshapes fit view and _unsafe_view; their outputs are named ``view_<n>`` as torch's exporter names a
    view's output (``recognise_names``), so each is a view (torch's truth), and every place that shows the call says
    what else its body fits and why it was ruled out: summary JSON and text, report JSON, HTML and Markdown, the
    signature panel. A hostile name is escaped as any text is."""
    from inspector.core.summary import summary_dict, summary_text
    from inspector.gui.analysis import Analyses
    from inspector.gui.signature_panel import SignaturePanel

    data = summary_dict(gpt2_stripped)
    jsonschema.validate(data, json.loads((ROOT / "resources" / "summary.schema.json").read_text()))
    view = next(a for a in data["aten_targets"] if a["target"] == "aten::view")
    assert view["recognised"]["candidates"] == ["aten::view"]
    assert view["recognised"]["ruled_out_by_name"] == ["aten::_unsafe_view"]
    assert "also fits aten::_unsafe_view: ruled out by the names of its values" in summary_text(data)
    report = build_report(gpt2_stripped, graphs=False)
    rdata = json.loads(render_json(report))
    jsonschema.validate(rdata, SCHEMA)
    views = [b for b in _bodies(rdata)["aten::view"] if "ruled_out_by_name" in b.get("recognised", {})]
    assert views and all(b["recognised"]["ruled_out_by_name"] == ["aten::_unsafe_view"] for b in views)
    said = ("(no fx metadata); also fits aten::bmm, aten::dot, aten::matmul, aten::mm, aten::mv: ruled out by the "
            "names of its values")  # (its linear of one node: a MatMul of what its folded Transpose made, val_<n>)
    assert html.escape(said) in render_html(report) and said in render_markdown(report)
    call = next(c for c in gpt2_stripped.provenance.calls if c.ruled_out == ("aten::_unsafe_view",))
    sel = Analyses(gpt2_stripped).selection(call)
    assert sel is not None and sel.candidates == ("aten::view",)
    panel = SignaturePanel()
    qtbot.addWidget(panel)
    panel.show_selection(sel)
    assert "Also fits aten::_unsafe_view: ruled out by the names of its values" in panel.view.toPlainText()
    panel.show_selection(dataclasses.replace(sel, ruled_out=("<i>a</i>&amp;",)))
    assert "Also fits <i>a</i>&amp;: ruled out" in panel.view.toPlainText()
    body = next(b for f in report.families for b in f.bodies if b.ruled_out)
    body.ruled_out = ["<i>a</i>", "[b](http://c)"]
    assert "also fits &lt;i&gt;a&lt;/i&gt;, [b](http&#58;//c): ruled out" in render_html(report)
    assert "[b](http://c)" not in render_markdown(report)
