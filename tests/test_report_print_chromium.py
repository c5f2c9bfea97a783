"""The HTML report printed by a real browser (headless Chromium's Save as PDF, on A4 and on US Letter), read back
with pypdf: sections closed on screen are on paper, a table that runs over several pages has its header on each,
and pages are numbered. Skipped where Chromium is not installed (`make screenshots` installs it); the same rules are
checked without a browser, element by element, in tests/test_report_print_pages.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from inspector.core.model.index import open_index
from inspector.core.review.store import ReviewStore, review_keys
from inspector.core.specialise.specialiser import Specialiser
from inspector.report import build_report
from inspector.report.html import render_html
from tests.conftest import ZOO

pypdf = pytest.importorskip("pypdf")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="printing with a browser needs Chromium")
PAPER = {"A4": (595, 842), "letter": (612, 792)}  # points


def _squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("paper", ["A4", "letter"])
def test_chromium_prints_every_section_and_repeats_table_headers(paper: str, tmp_path: Path) -> None:
    model = tmp_path / "llama_gqa_noopt.onnx"
    shutil.copyfile(ZOO / "llama_gqa_noopt.onnx", model)
    index = open_index(model)
    store = ReviewStore(model)
    specialiser = Specialiser(index)
    for n, family in enumerate(index.families[:12]):
        status = ["wrong", "suspicious", "ok"][n % 3]
        store.set(review_keys(specialiser.analyse(family))[0][0], status,
                  f"{status}: the value looks baked for seq_len=128 and would be wrong for another sequence length, "
                  "see modeling_llama.py:apply_rotary_pos_emb")
    report = build_report(open_index(model), ReviewStore(model))
    html = render_html(report).replace("</style>", f"@page {{ size: {paper}; }}</style>", 1)  # the reader's paper
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    pdf = tmp_path / "report.pdf"
    subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                    f"--print-to-pdf={pdf}", page.as_uri()], capture_output=True, timeout=300, check=True)
    reader = pypdf.PdfReader(pdf)
    pages = [_squeezed(p.extract_text()) for p in reader.pages]
    assert all((round(float(p.mediabox.width)), round(float(p.mediabox.height))) == PAPER[paper]
               for p in reader.pages)
    for i, text in enumerate(pages, 1):  # numbered at the foot of each page
        assert f"{i}/{len(pages)}" in text, i
    everything = "".join(pages)
    bodies = [b for f in report.families for b in f.bodies]
    assert len(bodies) > 40 and len(report.families) > 12  # more families than the screen opens (12)
    for b in bodies:  # inside sections the screen shows closed
        assert b.fingerprint[:16] in everything, b.title  # ("fingerprint" itself is printed with an fi ligature)
    # the tables of flagged reviews and of families run over pages; each page they are on has their header
    for header, start, end in [("statusfamilybodywhatnote", "Changedsincereviewed,markedwrongorsuspicious",
                                "Findings(0)None."),
                               ("familykindoverloadscallsbodiesspecialisedreviews",
                                "Families(32)familykind", "aten::_to_copy(atencall;")]:
        first = next(i for i, text in enumerate(pages) if start in text)
        last = next(i for i, text in enumerate(pages) if end in text and i >= first)
        assert last > first, header  # the table does run over a page break
        for i in range(first, last + 1):
            assert header in pages[i] or (i == last and pages[i].index(end) < 20), (header, i)
