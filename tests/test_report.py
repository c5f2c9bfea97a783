"""Annotated reports: HTML, Markdown and JSON content, reviews, findings, diffs, hostile models, limits and the CLI."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from inspector.cli import main
from inspector.core.diff import Change, ModelDiff
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.review.store import ReviewStore, review_keys
from inspector.core.specialise.specialiser import BodyAnalysis, SpecialisedValue, Specialiser
from inspector.core.util.paths import sidecar_path
from inspector.report import Limits, build_report
from inspector.report.data import Report
from inspector.report.html import render_html
from inspector.report.jsonreport import render_json
from inspector.report.markdown import MAX_CHARS, render_markdown
from tests.conftest import FIXTURES, ROOT, SAMPLE
from tests.gfm import shown, tags

SCHEMA = json.loads((ROOT / "resources" / "report.schema.json").read_text())
HAS_GRAPHVIZ = importlib.util.find_spec("pygraphviz") is not None


class _Page(HTMLParser):
    """Collects tags, attributes and the text a browser would show."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend((tag, k, v) for k, v in attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _page(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    p.close()
    return p


def _text(html: str) -> str:
    return "".join(_page(html).text)


def _validate(text: str) -> dict:
    data = json.loads(text)
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
    return data


def _report(name: str, **kw: object) -> Report:
    return build_report(open_index(FIXTURES / name), **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def block() -> Report:
    return _report("dynamo_block.onnx")


def _outside_fences(md: str) -> str:
    return re.sub(r"^(`{3,})[^\n]*\n.*?^\1\s*$", "", md, flags=re.S | re.M)


# --- the view model and its templates ---------------------------------------------------------------------------


def test_the_model_section_is_the_index_facts_not_a_copy():
    index = open_index(FIXTURES / "dynamo_block.onnx")
    report = build_report(index, graphs=False)
    assert report.model.facts is index.facts
    assert report.model.parameters == index.parameters()
    assert report.model.file_name == "dynamo_block.onnx" and report.model.inputs == index.user_inputs()
    assert list(report.model.opsets) == sorted(index.facts.opsets)


HOSTILE = "a=b <script>x</script> \"q\" 'q' https://example.org \u202e\n\x1b[31m"


@pytest.mark.parametrize("source", ["{{ x }}", "{{ [x, x]|join(' / ') }}", "{{ x|line(0) }}"])
def test_templates_escape_every_value_with_the_one_html_escaper(source: str):
    from inspector.core.util.textsafe import html_text, one_line
    from inspector.report.templating import template_environment

    out = template_environment().from_string(source).render(x=HOSTILE)
    expected = {"{{ x }}": html_text(HOSTILE, keep_newlines=True),
                "{{ [x, x]|join(' / ') }}": html_text(f"{HOSTILE} / {HOSTILE}", keep_newlines=True),
                "{{ x|line(0) }}": html_text(one_line(HOSTILE), keep_newlines=True)}[source]
    assert out == expected
    assert "<" not in out and "://" not in out and "=" not in out and "\u202e" not in out and "\x1b" not in out
    diff_page = template_environment(keep_newlines=False).from_string(source).render(x=HOSTILE)
    assert "\n" not in diff_page  # a diff page shows a newline of model text as \x0a


# --- HTML -------------------------------------------------------------------------------------------------------

def test_html_shows_families_signature_and_highlighted_values(block: Report):
    html = render_html(block)
    text = _text(html)
    for label in ("aten::transpose", "aten::scaled_dot_product_attention", "aten::view", "aten::layer_norm"):
        assert label in text
    assert "aten::transpose.int(self=%view, dim0=1, dim1=2) -> Tensor(a)" in text
    # the specialised perm is highlighted as "from an aten argument", linked to dim0/dim1 with the rule
    assert re.search(r"<a class='spec linked'[^>]*>\[0, 2, 1, 3\]</a>", html)
    assert re.search(r"<a class='spec linked' id='f\d+-b0-a-dim0' href='#f\d+-b0-s0'[^>]*>1</a>", html)
    assert "perm swaps dims 1 and 2" in text
    assert "from aten argument dim0&#61;1 at Transpose.perm: perm swaps dims 1 and 2" in html  # the tooltip
    assert "default scale: constant val_49 is sqrt(1/sqrt(E))" in text
    assert all(c in html for c in ("#f6b26b", "#9fc5e8", "#ffe599"))
    assert "prefers-color-scheme: dark" in html
    assert "<nav id=\"toc\">" in html and "<details" in html and "<summary>" in html
    assert ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; img-src data:\">") in html
    assert "http://" not in html and "https://" not in html
    page = _page(html)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert all(v is None or v.startswith("#") for _t, k, v in page.attrs if k in ("href", "src"))
    if HAS_GRAPHVIZ:
        assert block.graphs == "included" and "<svg" in html and "<?xml" not in html


def test_html_of_a_function_model_has_varying_values_and_graphs():
    report = _report("overloads.onnx")
    html = render_html(report)
    text = _text(html)
    assert "local.tr" in text and "perm_0213" in text and "local.par" in text
    assert re.search(r"<a class='spec varies'[^>]*>\[0, 2, 3, 1\]</a>", html)
    assert "varies: [0, 2, 1, 3] | [0, 2, 3, 1] | [1, 0, 2, 3]" in text
    assert "parametric: @perm" in text
    if HAS_GRAPHVIZ:
        tr = next(f for f in report.families if f.label == "local.tr")
        assert all(b.svg for b in tr.bodies)


def test_reviews_are_shown_and_the_sidecar_is_left_alone(tmp_path: Path):
    model = tmp_path / "overloads.onnx"
    shutil.copyfile(FIXTURES / "overloads.onnx", model)
    index = open_index(model)
    store = ReviewStore(model)
    analysis = Specialiser(index).analyse(next(f for f in index.families if f.label == "local.tr"))
    keys = review_keys(analysis)
    ov_key = next(k for k, o in keys if k.kind == "overload" and isinstance(o, BodyAnalysis)
                  and "perm_0231" in o.body.label)
    val_key, _spec = next((k, o) for k, o in keys if k.kind == "value" and isinstance(o, SpecialisedValue)
                          and o.literal.value == [0, 2, 1, 3])
    store.set(ov_key, "wrong", "should be <b>0132</b> & not 0231")
    store.set(val_key, "ok", "checked against the torch code")
    before = sidecar_path(model).read_bytes()

    report = build_report(index, ReviewStore(model))
    assert report.reviews.available and report.reviews.counts["wrong"] == 1 and report.reviews.counts["ok"] == 1
    html = render_html(report)
    text = _text(html)
    assert "<span class='badge wrong'>wrong</span>" in html and "<span class='badge ok'>OK</span>" in html
    assert "should be <b>0132</b> & not 0231" in text  # shown as text ...
    assert "<b>0132</b>" not in html  # ... never as markup
    assert "checked against the torch code" in text
    assert "Changed since reviewed, marked wrong or suspicious" in text
    md = render_markdown(report)
    assert "❌ wrong" in md and "✅ OK" in md and "should be &lt;b&gt;0132&lt;/b&gt; &amp; not 0231" in md
    data = _validate(render_json(report))
    tr = next(f for f in data["families"] if f["label"] == "local.tr")
    statuses = {b["title"]: b["review"]["status"] for b in tr["bodies"]}
    assert statuses["local.tr:perm_0231"] == "wrong" and statuses["local.tr:perm_1023"] == "unreviewed"
    values = [s["review"] for b in tr["bodies"] for s in b["specialised"] if s["value"] == [0, 2, 1, 3]]
    assert values == [{"status": "ok", "note": "checked against the torch code", "updated": values[0]["updated"]}]
    assert sidecar_path(model).read_bytes() == before


def test_findings_are_listed():
    report = _report("findings.onnx")
    text = _text(render_html(report))
    assert "Findings (4)" in text
    assert "recursive functions: local.ping -> local.pong -> local.ping" in text
    assert "call to local.missing_fn, but the model defines no such function" in text
    md = render_markdown(report)
    assert "## Findings (4)" in md and "call to overload local.f:nope" in md
    data = _validate(render_json(report))
    assert {f["kind"] for f in data["findings"]} >= {"recursion"} and len(data["findings"]) == 4


def test_hostile_model_yields_no_live_markup():
    report = _report("hostile.onnx")
    html = render_html(report)
    page = _page(html)
    assert "script" not in page.tags and "img" not in page.tags
    assert not [(t, k) for t, k, _v in page.attrs if k.lower().startswith("on")]
    assert all(v is None or v.startswith("#") for _t, k, v in page.attrs if k in ("href", "src", "xlink:href"))
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "http://" not in html and "https://" not in html
    text = "".join(page.text)
    assert "prod<script>alert(1)</script>" in text  # shown literally
    assert "<img src=x onerror=alert(1)>" in text
    assert "\u202e" not in html and "\\u202e" in text  # a bidi override is made visible, not applied
    if HAS_GRAPHVIZ:
        assert "<svg" in html  # graph labels were escaped too (no script/img tags above)


def test_hostile_model_markdown_is_neutralised():
    md = render_markdown(_report("hostile.onnx"))
    assert "<script" not in md.lower() and "<img" not in md.lower()
    assert "](javascript:" in shown(md)  # the fixture's link text is there, as GitHub shows it ...
    assert not tags(md) & {"a", "img", "script"}  # ... but no link, image or script forms
    assert "\u202e" not in md
    # every table row keeps its column count: pipes from the model are escaped
    for table in re.findall(r"(?:^\|.*\|$\n?)+", _outside_fences(md), flags=re.M):
        counts = {len(re.findall(r"(?<!\\)\|", row)) for row in table.strip().splitlines()}
        assert len(counts) == 1, table
    # only our own tags remain
    assert set(re.findall(r"</?([a-zA-Z]+)", _outside_fences(md))) <= {"details", "summary", "br"}


def test_hostile_model_json_keeps_strings_exactly():
    data = _validate(render_json(_report("hostile.onnx")))
    assert data["model"]["producer_name"] == "prod<script>alert(1)</script>"


# --- Markdown ---------------------------------------------------------------------------------------------------

def test_markdown_content(block: Report):
    md = render_markdown(block)
    assert len(md) < MAX_CHARS
    assert md.startswith("# ONNX Inspector report: dynamo\\_block.onnx")  # (read as it renders)
    assert "aten::transpose.int(self=%view, dim0=1, dim1=2) -> Tensor(a)" in md
    assert "| 🟦 | \\[0, 2, 1, 3\\] | Transpose.perm |" in md
    assert "perm swaps dims 1 and 2" in md
    assert "### aten::scaled\\_dot\\_product\\_attention" in md
    assert md.count("<details>") == md.count("</details>")


def test_markdown_fences_outgrow_backtick_runs():
    from inspector.report.markdown import fence

    text = "a ``` b ```` c"
    block = fence(text)
    assert block.startswith("`````\n") and block.endswith("\n`````")


def test_markdown_is_cut_to_fit_with_a_note(block: Report):
    md = render_markdown(block, max_chars=4000)
    assert len(md) <= 4000
    assert "Left out to fit a GitHub comment" in md
    assert md.count("<details>") == md.count("</details>")
    assert len(re.findall(r"^`{3,}", md, flags=re.M)) % 2 == 0


# --- JSON -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["dynamo_block.onnx", "overloads.onnx", "findings.onnx", "hostile.onnx",
                                  "torchscript_modfuncs.onnx", "nested_calls.onnx", "text_model.onnxtxt"])
def test_json_validates_against_the_schema(name: str):
    data = _validate(render_json(_report(name, graphs=False)))
    assert data["format"] == "onnx-inspector/report" and data["version"] == 1


def test_json_content(block: Report):
    data = _validate(render_json(block))
    fams = {f["label"]: f for f in data["families"]}
    tr = fams["aten::transpose"]
    (body,) = tr["bodies"]
    assert body["signature"]["text"] == "aten::transpose.int(self=%view, dim0=1, dim1=2) -> Tensor(a)"
    (perm,) = body["specialised"]
    assert perm["category"] == "linked" and perm["value"] == [0, 2, 1, 3]
    assert {a["parameter"]: a["value"] for a in perm["aten_arguments"]} == {"dim0": 1, "dim1": 2}
    args = {a["parameter"]: a for a in body["signature"]["arguments"]}
    assert args["dim0"]["specialised"] == [perm["id"]] and args["self"]["value"] == "%view"
    assert body["lines"][perm["line"]].strip().startswith("transpose = Transpose<perm = [0, 2, 1, 3]>")
    assert fams["aten::view"]["body_count"] == 2 and data["model"]["parameter_count"] == 6479


# --- limits, diffs, graphs --------------------------------------------------------------------------------------

def test_limits_are_reported():
    report = _report("dynamo_block.onnx", limits=Limits(families=2, bodies_per_family=1, members_listed=2,
                                                         body_lines=2), graphs=False)
    assert report.families_omitted == 5 and [f.detailed for f in report.families].count(True) == 2
    assert any("5 of 7 families" in n for n in report.notes)
    view = _report("dynamo_block.onnx", limits=Limits(bodies_per_family=1), graphs=False)
    fam = next(f for f in view.families if f.label == "aten::view")
    assert fam.bodies_omitted == 1 and any("not shown in full" in n for n in view.notes)
    data = _validate(render_json(report))
    assert data["families_omitted"] == 5
    add = data["families"][0]
    assert add["bodies"][0]["members_omitted"] == 2 and add["bodies"][0]["lines_omitted"] == 1
    assert "listed without detail" in _text(render_html(report))


def test_a_diff_is_shown():
    compare = ModelDiff("a.onnx", "b.onnx", [
        Change("value_changed", "aten_call", "aten::view", "view_3 <script>", [1, 8, 16], [1, 8, 32],
               "Reshape shape | changed: [1, 8, 16] -> [1, 8, 32]", ["view_3 <script>"])])
    report = _report("dynamo_block.onnx", compare=compare, graphs=False)
    assert report.diff is not None and report.diff.equal is False and len(report.diff.changes) == 1
    html = render_html(report)
    assert "view_3 &lt;script&gt;" in html and "<script" not in html
    assert "[1, 8, 32]" in _text(html)
    md = render_markdown(report)
    assert "## Changes (1)" in md and "Reshape shape \\| changed" in md
    data = _validate(render_json(report))
    assert data["diff"]["changes"][0]["new"] == [1, 8, 32]


def test_no_graphs_without_pygraphviz(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "pygraphviz", None)  # import pygraphviz -> ImportError
    report = _report("overloads.onnx")
    assert report.graphs == "unavailable" and any("pygraphviz" in n for n in report.notes)
    assert "<svg" not in render_html(report)


def test_report_imports_and_runs_without_qt_or_pygraphviz(tmp_path: Path):
    from tests.test_layering import BLOCK_QT

    out = tmp_path / "r.html"
    code = BLOCK_QT + (
        "from inspector.cli import main\n"
        f"rc = main(['report', {str(FIXTURES / 'overloads.onnx')!r}, '-o', {str(out)!r}])\n"
        "assert rc == 0, rc\n"
        "assert not [m for m in sys.modules if m.startswith(('PySide6', 'shiboken6', 'torch'))]\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "pygraphviz" in out.read_text()  # the note saying graphs were left out


# --- the command ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("suffix", "check"), [(".html", "<!DOCTYPE html>"), (".md", "# ONNX Inspector report"),
                                                (".json", '"format": "onnx-inspector/report"')])
def test_cli_writes_each_format(tmp_path: Path, suffix: str, check: str, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / f"report{suffix}"
    assert main(["report", str(SAMPLE), "-o", str(out)]) == 0
    assert check in out.read_text(encoding="utf-8")
    assert f"wrote {out}" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left behind
    if suffix == ".json":
        _validate(out.read_text(encoding="utf-8"))


def test_cli_format_option_and_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "report.txt"
    assert main(["report", str(FIXTURES / "overloads.onnx"), "--format", "md", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("# ONNX Inspector report")
    capsys.readouterr()
    assert main(["report", str(FIXTURES / "overloads.onnx"), "--format", "json", "-o", "-"]) == 0
    _validate(capsys.readouterr().out)


@pytest.mark.parametrize("bad", ["bad/empty.onnx", "bad/truncated.onnx", "bad/random.onnx", "missing.onnx"])
def test_cli_bad_model_is_a_one_line_error(tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "r.html"
    assert main(["report", str(FIXTURES / bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("onnx-inspector: error: ") and err.count("\n") == 1
    assert not out.exists()


def test_cli_refuses_to_overwrite_the_model_or_write_nowhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    model = tmp_path / "m.onnx"
    shutil.copyfile(FIXTURES / "overloads.onnx", model)
    before = model.read_bytes()
    assert main(["report", str(model), "--format", "html", "-o", str(model)]) == 2
    assert model.read_bytes() == before
    assert main(["report", str(model), "-o", str(tmp_path / "no" / "such" / "dir" / "r.html")]) == 2
    assert main(["report", str(model), "--format", "pdf", "-o", "-"]) == 2
    assert main(["report", str(model), "--format", "docx", "-o", str(tmp_path / "r")]) == 2  # argparse
    capsys.readouterr()


def test_cli_unreadable_sidecar_warns_and_continues(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    model = tmp_path / "m.onnx"
    shutil.copyfile(FIXTURES / "overloads.onnx", model)
    sidecar = sidecar_path(model)
    sidecar.write_text("{ not json")
    out = tmp_path / "r.json"
    assert main(["report", str(model), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "onnx-inspector: warning: cannot read review file" in err
    assert sidecar.read_text() == "{ not json"
    assert not sidecar.with_name(sidecar.name + ".bak").exists()
    data = _validate(out.read_text())
    assert data["reviews"]["available"] is False


def test_cli_reads_the_sidecar(tmp_path: Path):
    model = tmp_path / "m.onnx"
    shutil.copyfile(FIXTURES / "overloads.onnx", model)
    index: ModelIndex = open_index(model)
    analysis = Specialiser(index).analyse(next(f for f in index.families if f.label == "local.sm"))
    key = next(k for k, _o in review_keys(analysis) if k.kind == "overload")
    ReviewStore(model).set(key, "suspicious", "axis=1 looks odd")
    out = tmp_path / "r.md"
    assert main(["report", str(model), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "⚠️ suspicious" in text and "axis=1 looks odd" in text


def test_cli_compare_adds_the_changes(tmp_path: Path):
    out = tmp_path / "r.json"
    assert main(["report", str(FIXTURES / "dynamo_block.onnx"), "--compare", str(FIXTURES / "dynamo_block_h4.onnx"),
                 "-o", str(out)]) == 0
    data = _validate(out.read_text(encoding="utf-8"))
    assert data["diff"] is not None and data["diff"]["changes"] and data["diff"]["equal"] is False
    html = tmp_path / "r.html"
    assert main(["report", str(FIXTURES / "dynamo_block.onnx"), "--compare", str(FIXTURES / "dynamo_block_h4.onnx"),
                 "-o", str(html)]) == 0
    assert "Changes (" in _text(html.read_text(encoding="utf-8"))


def _many_functions_model(path: Path, families: int, overloads: int) -> None:
    import onnx
    from onnx import TensorProto, helper

    functions, nodes = [], []
    value = "x"
    for f in range(families):
        for o in range(overloads):
            body = [helper.make_node("Transpose", ["a"], ["b"], perm=[0, 2, 1, 3] if o % 2 else [0, 1, 3, 2]),
                    helper.make_node("Softmax", ["b"], ["c"], axis=o - 1)]
            fn = helper.make_function("local", f"fam{f:03d}", ["a"], ["c"], body, [helper.make_opsetid("", 18)])
            fn.overload = f"v{o}"
            functions.append(fn)
            out = f"y{f}_{o}"
            call = helper.make_node(f"fam{f:03d}", [value], [out], domain="local")
            call.overload = f"v{o}"
            nodes.append(call)
            value = out
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
                              [helper.make_tensor_value_info(value, TensorProto.FLOAT, [1, 2, 2, 2])])
    model = helper.make_model(graph, functions=functions,
                              opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)])
    model.ir_version = 10
    onnx.save(model, path)


def test_one_family_past_the_cap_is_said_in_the_singular(tmp_path: Path):
    path = tmp_path / "many.onnx"
    _many_functions_model(path, families=201, overloads=1)
    report = build_report(open_index(path), graphs=False)
    assert report.families_omitted == 1
    assert any("1 of 201 families is listed without detail" in n for n in report.notes)
    assert "1 family is listed without detail." in render_html(report)


def test_many_families_are_capped_and_markdown_fits(tmp_path: Path):
    path = tmp_path / "many.onnx"
    _many_functions_model(path, families=230, overloads=3)
    report = build_report(open_index(path), graphs=False)
    assert report.families_omitted == 30 and len(report.families) == 230
    assert any("30 of 230 families are listed without detail" in n for n in report.notes)
    md = render_markdown(report)
    assert len(md) <= MAX_CHARS and "Left out to fit a GitHub comment" in md
    assert md.count("<details>") == md.count("</details>")
    assert len(re.findall(r"^`{3,}", md, flags=re.M)) % 2 == 0
    data = _validate(render_json(report))
    assert sum(f["detailed"] for f in data["families"]) == 200
    html = render_html(report)
    assert html.count("<details class='family'") == 200


def test_an_unreadable_review_store_is_reported_not_raised(tmp_path: Path):
    model = tmp_path / "m.onnx"
    shutil.copyfile(FIXTURES / "overloads.onnx", model)
    sidecar_path(model).write_text('{"format": "something else"}')
    report = build_report(open_index(model), ReviewStore(model), graphs=False)
    assert not report.reviews.available and "cannot read review file" in (report.reviews.error or "")
    assert "The review file could not be read" in _text(render_html(report))
    assert sidecar_path(model).read_text() == '{"format": "something else"}'
