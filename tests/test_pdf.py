"""PDF reports are printed by Qt (``inspector.pdf``, outside the GUI package), headless, with graphs drawn from
inline SVG, from the same view model as the HTML report: every line wraps (no signature cut at the page edge) and
specialised values keep their category colours. The PDF's text is read back with pypdf.

Tests that print in this process take pytest-qt's ``qapp`` first: a process has one Qt application, and the GUI
tests need it to be a QApplication (the printer alone would make a QGuiApplication)."""

from __future__ import annotations

import html as html_lib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import inspector
from inspector.core.specialise.categories import Category
from inspector.pdf import html_to_pdf
from inspector.report import build_report
from inspector.report.data import Report
from inspector.report.render import render_text
from tests.conftest import FIXTURES, ROOT

pytest.importorskip("PySide6")
pypdf = pytest.importorskip("pypdf")

ZOO = ROOT / "tests" / "zoo"


def test_html_with_svg_becomes_a_pdf(tmp_path: Path, qapp: object):
    svg = ("<svg xmlns='http://www.w3.org/2000/svg' width='120' height='60'>"
           "<rect x='5' y='5' width='110' height='50' fill='#e9f6ec' stroke='#3f8f56'/></svg>")
    html = f"<h1>Report</h1><p>{'text &lt;script&gt; ' * 400}</p>{svg}<p>end</p>"
    out = tmp_path / "r.pdf"
    html_to_pdf(html, out)
    data = out.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:]
    assert data.count(b"/Type /Page\n") + data.count(b"/Type /Page ") + data.count(b"/Type/Page") >= 1
    assert not list(tmp_path.glob(".*.tmp"))


def test_report_command_writes_a_pdf(tmp_path: Path, qapp: object):
    from inspector.cli import main

    out = tmp_path / "overloads.pdf"
    assert main(["report", str(FIXTURES / "overloads.onnx"), "--format", "pdf", "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(b"%PDF-") and len(data) > 10_000  # text and the graphs of the function bodies


def _squeezed(text: str) -> str:
    """Text without whitespace: a line wrapped at the page edge reads as the line it was."""
    return "".join(text.split())


def _pdf(model: Path) -> tuple[Report, pypdf.PdfReader]:
    from io import BytesIO

    pdf = inspector.report(model, format="pdf", graphs=False)
    return build_report(inspector.open(model).index, graphs=False), pypdf.PdfReader(BytesIO(pdf.data))


def _fill_colours(reader: pypdf.PdfReader) -> set[tuple[int, int, int]]:
    """Every fill colour the pages paint with (Qt writes ``r g b scn``), as 0-255 triples."""
    out = set()
    for page in reader.pages:
        data = page.get_contents().get_data().decode("latin-1")
        for r, g, b in re.findall(r"([\d.]+) ([\d.]+) ([\d.]+) scn\b", data):
            out.add(tuple(round(float(x) * 255) for x in (r, g, b)))
    return out


@pytest.mark.parametrize("name", ["llama_gqa", "gpt2"])
def test_every_signature_is_whole_and_values_keep_their_colours(name: str, qapp: object):
    report, reader = _pdf(ZOO / f"{name}.onnx")
    text = _squeezed("".join(page.extract_text() for page in reader.pages))
    signatures = [b.signature.text for f in report.families for b in f.bodies if b.signature is not None]
    assert len(signatures) >= 10
    for sig in signatures:
        assert _squeezed(sig) in text, sig
    sdpa = [s for s in signatures if s.startswith("aten::scaled_dot_product_attention(")]
    assert sdpa and all("scale=" in s and "enable_gqa=" in s for s in sdpa)
    drawn = _fill_colours(reader)
    shown = {s.category for f in report.families for b in f.bodies for s in b.specialised}
    assert {Category.VARIES, Category.SHAPE, Category.LINKED, Category.LONE} <= shown
    for category in shown:  # orange, mauve, blue, yellow behind the values, as in the app and the HTML
        assert tuple(int(category.colour[i:i + 2], 16) for i in (1, 3, 5)) in drawn, category
    printed = render_text(report, "pdf")
    assert "<a class='spec" not in printed and "background-color: #f6b26b" in printed  # colours, not links


def test_the_command_line_pdf_never_imports_the_gui(tmp_path: Path):
    out = tmp_path / "r.pdf"
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'inspector.gui' or name.startswith('inspector.gui.'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from inspector.cli import main\n"
        f"code = main(['report', {str(FIXTURES / 'dynamo_block.onnx')!r}, '--format', 'pdf', '-o', {str(out)!r}])\n"
        "assert code == 0, code\n"
        "assert not [m for m in sys.modules if m.startswith('inspector.gui')]\n"
        "assert 'inspector.pdf' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(b"%PDF-")


def _foot_headings(reader: pypdf.PdfReader, html: str) -> list[tuple[int, str]]:
    """(page, heading) for each page but the last whose text ends with a heading of ``html`` (h1-h5: a section's, a
    family's title with its badge, a body's, "ONNX body"), compared without whitespace (pypdf breaks a title in two)."""
    tagged = re.findall(r"<h[1-5][^>]*>(.*?)</h[1-5]>", html, re.S)
    heads = {html_lib.unescape(re.sub(r"<[^>]+>", "", h)) for h in tagged}
    found = []
    for k, page in enumerate(reader.pages[:-1]):
        text = _squeezed(page.extract_text())
        found += [(k + 1, " ".join(h.split())) for h in sorted(heads) if _squeezed(h) and text.endswith(_squeezed(h))]
    return found


def test_no_page_ends_on_a_heading(qapp: object, monkeypatch: pytest.MonkeyPatch):
    """Qt's rich text knows no ``break-after: avoid``: GPT-2's report ended five pages on a heading (its aten::embedding
    family's title, two bodies' titles, an "ONNX body"), each with what it names on the next page. A heading near a
    page's foot now starts the next one (``pdf.qt.keep_headings_with_next``), and nothing is lost by it."""
    from io import BytesIO

    import inspector.pdf.qt as qt
    from inspector.pdf import html_to_pdf_bytes

    html = render_text(build_report(inspector.open(ZOO / "gpt2.onnx").index), "pdf")
    kept = pypdf.PdfReader(BytesIO(html_to_pdf_bytes(html)))
    monkeypatch.setattr(qt, "KEEP_WITH_NEXT", 0.0)  # as before: no heading moved
    loose = pypdf.PdfReader(BytesIO(html_to_pdf_bytes(html)))
    assert _foot_headings(loose, html) == [
        (3, "aten::embedding (aten call; 1 overload, 1 call) unreviewed 1"),
        (8, "aten::scaled_dot_product_attention (2 calls, 11 nodes, 5 specialised)"),
        (12, "Aten signature (this call's values bound to parameter names)"), (14, "ONNX body"),
        (15, "aten::view, body 7 of 9 (2 calls, 1 node, 1 specialised)")]
    assert _foot_headings(kept, html) == []
    assert len(kept.pages) == len(loose.pages) == 18  # (the moves fit in the room the pages had)
    # the same words (a table cut at another place repeats its header row on another page; headings' blocks changed in
    # place, with no layout of what follows them, lost every paragraph after the first move, and 5 of the 18 pages)
    words = [{w for p in r.pages for w in p.extract_text().split()} for r in (kept, loose)]
    assert words[0] == words[1] and len(words[0]) > 700
