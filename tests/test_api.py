"""The public Python API: ``__all__`` pinned (as onnx-ir's tests/public_api_test.py does), every name resolves,
``import inspector`` stays cheap, and the calls for torch users work on an ``onnx.ModelProto`` (no torch)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest

import inspector
from inspector.cli import main
from inspector.core.diff import diff_files
from inspector.core.model.index import open_index
from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
from inspector.core.specialise.specialiser import Specialiser
from tests.conftest import FIXTURES, ROOT

ZOO = ROOT / "tests" / "zoo"

PUBLIC_API = [
    "CheckReport", "Diff", "FoldReport", "FolderDiff", "InspectorError", "LoadedModel", "Model", "ModelDiff",
    "ModelIndex", "Report", "__version__", "build_index", "check", "diff", "diff_dict", "diff_files", "diff_models",
    "fold", "fold_model", "load_model", "open", "open_index", "report", "show", "summary_dict", "summary_text",
]


def test_the_public_api_is_exactly_this():
    assert sorted(inspector.__all__) == PUBLIC_API  # a change here is an API change: update the README too
    assert inspector.__all__ == PUBLIC_API  # and kept sorted


@pytest.mark.parametrize("name", PUBLIC_API)
def test_every_public_name_resolves(name):
    assert getattr(inspector, name) is not None
    assert name in dir(inspector)


def test_public_names_are_the_implementations():
    assert inspector.open_index is open_index and inspector.diff_files is diff_files
    from inspector import api

    for name in ("open", "diff", "check", "show", "Model", "Report", "Diff", "FolderDiff", "CheckReport"):
        assert getattr(inspector, name) is getattr(api, name)
    assert callable(inspector.report)  # the report package, callable as inspector.report(model, format=...)
    import inspector.report.diff_render as diff_render  # ... and still the package every writer lives in

    assert diff_render.render_diff is not None and inspector.report.build_report is not None


def test_unknown_name_is_an_attribute_error():
    assert not hasattr(inspector, "no_such_thing")


def test_the_lower_level_calls_end_to_end():
    index = inspector.open_index(FIXTURES / "overloads.onnx")
    data = inspector.summary_dict(index)
    assert data["format"] == "onnx-inspector/summary" and "local.tr" in inspector.summary_text(data)
    diff = inspector.diff_files(FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_renamed.onnx")
    assert inspector.diff_dict(diff)["equal"] is True


def test_import_inspector_loads_no_onnx_and_no_qt():
    code = ("import sys, inspector\n"
            "assert not [m for m in sys.modules if m.startswith(('onnx', 'numpy', 'PySide6', 'inspector.core'))]")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr


# --- the calls for torch users, on a ModelProto -----------------------------------------------------------------

class FakeProgram:
    """What inspector uses of a torch.onnx.ONNXProgram: its ``model_proto`` (torch is never imported)."""

    def __init__(self, proto: onnx.ModelProto) -> None:
        self.model_proto = proto


def _names(m: inspector.Model) -> list[tuple[str, int]]:
    return [(f.label, f.call_count) for f in m.families]


def test_open_a_model_proto_or_a_program_like_a_file():
    proto = onnx.load(str(ZOO / "gpt2.onnx"))
    before = proto.SerializeToString()
    from_file = inspector.open(ZOO / "gpt2.onnx")
    for x in (proto, FakeProgram(proto)):
        m = inspector.open(x)
        assert m.in_memory and m.path is None
        assert _names(m) == _names(from_file)
        summary, expected = m.summary(), from_file.summary()
        summary["model"].pop("path"), expected["model"].pop("path")
        summary["model"].pop("file_size"), expected["model"].pop("file_size")
        assert summary == expected
    assert proto.SerializeToString() == before  # the caller's model is never changed
    assert inspector.open(from_file) is from_file


@pytest.mark.parametrize("bad", [42, "no/such/model.onnx", onnx.ModelProto()])
def test_open_refuses_what_is_not_a_model_in_one_line(bad):
    with pytest.raises(inspector.InspectorError) as err:
        inspector.open(bad)
    assert "\n" not in str(err.value)


def test_diff_of_a_file_and_a_program_names_the_changed_eps(capsys):
    b = FakeProgram(onnx.load(str(ZOO / "pair_eps_b.onnx")))
    d = inspector.diff(ZOO / "pair_eps_a.onnx", b)
    assert isinstance(d, inspector.Diff) and not d.equal and not d.equivalent
    assert {c["family"] for c in d.to_dict()["changes"]} == {"aten::layer_norm"}  # torch changed eps only
    assert inspector.diff(ZOO / "pair_eps_a.onnx", onnx.load(str(ZOO / "pair_eps_a.onnx"))).equal
    # the same text as the command's
    same = inspector.diff(str(ZOO / "pair_eps_a.onnx"), str(ZOO / "pair_eps_b.onnx"))
    assert main(["diff", str(ZOO / "pair_eps_a.onnx"), str(ZOO / "pair_eps_b.onnx")]) == 1
    assert same.text == capsys.readouterr().out
    html = d._repr_html_()
    assert html.startswith("<iframe sandbox srcdoc=") and "<script" not in html and html.count("<") == 2


@pytest.mark.parametrize("pair", ["heads", "transpose"])
def test_diff_of_two_files_is_the_commands_diff(pair, monkeypatch):
    import inspector.core.diff as core_diff

    a, b = ZOO / f"pair_{pair}_a.onnx", ZOO / f"pair_{pair}_b.onnx"
    calls = []

    def spy(*args, **kwargs):
        calls.append(args)
        return diff_files(*args, **kwargs)

    monkeypatch.setattr(core_diff, "diff_files", spy)
    d = inspector.diff(a, b)
    assert calls == [(a, b)]  # as the command does: B read into A's memory and indexed like A
    assert not d.equal
    assert d.to_dict() == inspector.diff(inspector.open(a), inspector.open(b)).to_dict()


def test_diff_of_two_files_refuses_a_missing_one_in_one_line():
    with pytest.raises(inspector.InspectorError, match="no such file") as err:
        inspector.diff(ZOO / "pair_eps_a.onnx", ZOO / "no_such_model.onnx")
    assert "\n" not in str(err.value)


def test_report_of_a_program_renders_and_saves(tmp_path, capsys):
    program = FakeProgram(onnx.load(str(ZOO / "pair_eps_a.onnx")))
    md = inspector.report(program, format="md")
    assert isinstance(md, inspector.Report) and "aten::layer_norm" in md.text
    assert md._repr_html_().startswith("<pre>")
    html = inspector.report(ZOO / "pair_eps_a.onnx", format="html", graphs=False)
    assert html._repr_html_().startswith("<iframe sandbox srcdoc=")
    saved = html.save(tmp_path / "out" / "r.html")
    assert saved.read_text(encoding="utf-8") == html.text
    # the same report as the command's
    assert main(["report", str(ZOO / "pair_eps_a.onnx"), "--format", "md", "-o", "-"]) == 0
    assert inspector.report(ZOO / "pair_eps_a.onnx", format="md").text == capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown report format 'docx'"):
        inspector.report(program, format="docx")


def test_report_of_a_program_as_pdf(tmp_path, qapp):  # qapp: Qt's one application is pytest-qt's QApplication
    pytest.importorskip("PySide6")
    program = FakeProgram(onnx.load(str(ZOO / "pair_eps_a.onnx")))
    pdf = inspector.report(program, format="pdf", graphs=False)
    assert pdf.data.startswith(b"%PDF-") and b"%%EOF" in pdf.data[-1024:]
    assert pdf.save(tmp_path / "r.pdf").read_bytes() == pdf.data
    with pytest.raises(ValueError, match="not text"):
        _ = pdf.text
    assert repr(pdf) == f"<inspector.Report pdf, {len(pdf.data):,} bytes>"


def test_fold_writes_the_folded_model_as_the_command_does(tmp_path, capsys):
    out = tmp_path / "folded.onnx"
    report = inspector.fold(ZOO / "pair_eps_a.onnx", out)
    assert isinstance(report, inspector.FoldReport) and report.calls_folded > 0
    assert main(["fold", str(ZOO / "pair_eps_a.onnx"), "-o", str(tmp_path / "by_command.onnx")]) == 0
    assert capsys.readouterr().out.startswith(f"folded {report.calls_folded} aten calls into "
                                              f"{len(report.functions)} functions")
    assert out.read_bytes() == (tmp_path / "by_command.onnx").read_bytes()


def test_check_of_a_reexported_program_against_the_old_reviews(tmp_path):
    old = tmp_path / "model.onnx"
    old.write_bytes((ZOO / "pair_scale_a.onnx").read_bytes())
    store = ReviewStore(old)
    for analysis in Specialiser(open_index(old)).analyse_all():
        for key, obj in review_keys(analysis):
            store.set(key, "ok", "", reviewed_value(obj))
    assert inspector.check(old).passed
    program = FakeProgram(onnx.load(str(ZOO / "pair_scale_b.onnx")))  # re-exported with scale=0.3
    result = inspector.check(program, reviews=store.path)
    assert not result.passed
    assert {(i.status, i.key.family) for i in result.failing} == {("changed", "aten::scaled_dot_product_attention")}
    assert "changed since review" in result.text and result.to_dict()["passed"] is False
    with pytest.raises(inspector.InspectorError):
        inspector.check(program)  # from memory there is no sidecar to default to


def test_show_opens_the_app_on_a_file_or_a_temporary_copy(monkeypatch):
    import inspector.gui.app

    seen: list[tuple[list[str], list[bytes]]] = []

    def run(paths):
        seen.append((list(paths), [Path(p).read_bytes() for p in paths]))
        return 0

    monkeypatch.setattr(inspector.gui.app, "run", run)
    proto = onnx.load(str(ZOO / "pair_eps_a.onnx"))
    assert inspector.show(ZOO / "convnet.onnx", FakeProgram(proto)) == 0
    (paths, contents), = seen
    assert paths[0] == str(ZOO / "convnet.onnx")
    assert onnx.load_from_string(contents[1]) == proto  # the program's model, written for the app
    assert not Path(paths[1]).exists()  # and removed when the app closed


def test_the_api_never_imports_torch():
    code = ("import sys, onnx, inspector\n"
            "class P: model_proto = onnx.load('tests/zoo/pair_eps_b.onnx')\n"
            "inspector.diff('tests/zoo/pair_eps_a.onnx', P()); inspector.report(P(), format='json')\n"
            "assert 'torch' not in sys.modules and not [m for m in sys.modules if m.startswith('PySide6')]")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
