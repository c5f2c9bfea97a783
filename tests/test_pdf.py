"""PDF reports are written by Qt, headless, with graphs drawn from inline SVG."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from inspector.gui.pdf import html_to_pdf


def test_html_with_svg_becomes_a_pdf(tmp_path: Path):
    svg = ("<svg xmlns='http://www.w3.org/2000/svg' width='120' height='60'>"
           "<rect x='5' y='5' width='110' height='50' fill='#e9f6ec' stroke='#3f8f56'/></svg>")
    html = f"<h1>Report</h1><p>{'text &lt;script&gt; ' * 400}</p>{svg}<p>end</p>"
    out = tmp_path / "r.pdf"
    html_to_pdf(html, out)
    data = out.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:]
    assert data.count(b"/Type /Page\n") + data.count(b"/Type /Page ") + data.count(b"/Type/Page") >= 1
    assert not list(tmp_path.glob(".*.tmp"))


def test_report_command_writes_a_pdf(tmp_path: Path):
    from inspector.cli import main
    from tests.conftest import FIXTURES

    out = tmp_path / "overloads.pdf"
    assert main(["report", str(FIXTURES / "overloads.onnx"), "--format", "pdf", "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(b"%PDF-") and len(data) > 10_000  # text and the graphs of the function bodies
