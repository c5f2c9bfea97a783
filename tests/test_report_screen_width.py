"""The HTML report and the diff page in a browser window narrower than a laptop's screen, and in a phone's: nothing
runs past the window's right edge, whatever names the model holds (a table wider than a phone scrolls within itself).

A name from the model (a dotted parameter path such as ``encoder.block.0.layer.0.SelfAttention.q.weight``, a long FX
name) has no place to break; in a table cell it set the table's least width, so a comparison of t5 with t5_noopt ran
1,162 px wide in a 785 px window, and llama_gqa_noopt's overload table 856 px; at 500 px the families table (550 px)
ran past it. Measured in headless Chromium: each page is opened at 800 and 500 px with every section opened, and
the page's own script-free content is measured by a probe added to a copy (the copy drops the
Content-Security-Policy that keeps scripts out of the real page). Skipped where Chromium is not installed;
tests/test_report_print_pages.py checks the printed pages without a browser.
"""

from __future__ import annotations

import html as html_module
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from inspector.commands import diff, report
from tests.conftest import ZOO

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="laying a page out needs Chromium")
WIDTHS = (800, 500)  # a laptop's half screen; the narrowest window headless Chromium makes (a phone's is narrower)
_PROBE = """<script>addEventListener('load', () => {
  for (const d of document.querySelectorAll('details')) d.open = true;
  const w = document.documentElement.clientWidth, wide = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect(), up = e.parentElement.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 1 && up.right <= w + 1)
      wide.push(e.tagName + (typeof e.className === 'string' ? '.' + e.className : ''));
  }
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({window: w, page: document.documentElement.scrollWidth, wide: wide.slice(0, 5)});
  document.body.appendChild(out);
});</script>"""


def _laid_out(page: Path, tmp_path: Path, width: int) -> dict[str, Any]:
    """The page's width and the window's at ``width`` px, and the outermost elements that run past the window."""
    html = page.read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html, count=1)
    probe = tmp_path / f"probe-{page.name}"
    probe.write_text(html.replace("</body>", _PROBE + "</body>", 1), encoding="utf-8")
    dom = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},1000",
                          "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run"
    return json.loads(html_module.unescape(found.group(1)))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copies of the zoo exports, so that no sidecar lands in tests/zoo."""
    folder = tmp_path_factory.mktemp("screen")
    for name in ("t5", "t5_noopt", "llama_gqa_noopt"):
        shutil.copyfile(ZOO / f"{name}.onnx", folder / f"{name}.onnx")
    return folder


@pytest.mark.parametrize("args", [
    ["report", "t5.onnx", "--compare", "t5_noopt.onnx"],  # the comparison's initializers: dotted parameter paths
    ["report", "llama_gqa_noopt.onnx"],  # its overloads' torchlib functions and long FX names
    ["diff", "t5.onnx", "t5_noopt.onnx", "--format", "html"],
], ids=["report-compare", "report", "diff-page"])
def test_pages_fit_a_narrow_window(args: list[str], models: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    command, *rest = args
    out = tmp_path / "page.html"
    main = report.main if command == "report" else diff.main
    assert main([str(models / a) if a.endswith(".onnx") else a for a in rest] + ["-o", str(out)]) in (0, 1)
    capsys.readouterr()
    for width in WIDTHS:
        got = _laid_out(out, tmp_path, width)
        assert width - 40 < got["window"] <= width
        assert got["page"] == got["window"], (width, got["wide"])
