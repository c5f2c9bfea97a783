"""PDF reports are printed by Qt (``inspector.pdf``, outside the GUI package), headless, with graphs drawn from
inline SVG, from the same view model as the HTML report: every line wraps (no signature cut at the page edge) and
specialised values keep their category colours. The PDF's text is read back with pypdf.

Tests that print in this process take pytest-qt's ``qapp`` first: a process has one Qt application, and the GUI
tests need it to be a QApplication (the printer alone would make a QGuiApplication)."""

from __future__ import annotations

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
