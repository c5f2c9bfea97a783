"""Render the app's main views on a real export to PNG files, for humans to look at.

Run by ``make screenshots`` (under Xvfb when no display is present): ``python scripts/screenshots.py --out DIR``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "resources" / "samples" / "sample_export.onnx"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="screenshots")
    ap.add_argument("--model", default=str(SAMPLE))
    args = ap.parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("QT_QPA_PLATFORM") and shutil.which("xvfb-run"):
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", sys.executable, __file__, *sys.argv[1:]]
        return subprocess.call(cmd)
    from PySide6.QtCore import QEventLoop, QThreadPool, QTimer
    from PySide6.QtWidgets import QApplication

    from inspector.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    from inspector.gui.theme import apply_theme

    apply_theme(app)  # ONNX_INSPECTOR_THEME=dark renders the dark palette
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    window = MainWindow()
    window.resize(1500, 900)
    window.show()
    def wait_for(signal, action, timeout_ms: int = 60000) -> None:
        loop = QEventLoop()
        signal.connect(lambda *_: loop.quit())
        QTimer.singleShot(timeout_ms, loop.quit)
        action()
        loop.exec()

    wait_for(window.model_loaded, lambda: window.open_path(args.model))
    if window.index is None:
        print("could not load", args.model, file=sys.stderr)
        return 2

    def settle() -> None:
        for _ in range(10):
            app.processEvents()

    settle()
    window.grab().save(str(out / "01-overview.png"))
    view, proxy = window.family_view, window.family_filter
    # an aten call whose body has specialised values worth showing
    for row in range(proxy.rowCount()):
        fam = proxy.index(row, 0)
        if "scaled_dot" in str(fam.data()):
            ov = proxy.index(0, 0, fam)
            view.expand(fam)
            view.expand(ov)
            call = proxy.index(0, 0, ov)
            wait_for(window.selection_shown, lambda call=call: view.setCurrentIndex(call))
            break
    QThreadPool.globalInstance().waitForDone(60000)
    settle()
    window.grab().save(str(out / "02-aten-call.png"))
    window.trees.setCurrentIndex(1)
    settle()
    window.grab().save(str(out / "03-modules.png"))
    # a local function family with overloads that differ only in baked values, and the review panel
    overloads = ROOT / "tests" / "fixtures" / "overloads.onnx"
    if overloads.exists():
        wait_for(window.reviews_listed, lambda: window.open_path(overloads))
        window.trees.setCurrentWidget(window.family_view)
        window.filter_box.setText("local.tr")
        fam = proxy.index(0, 0)
        wait_for(window.selection_shown, lambda: view.setCurrentIndex(proxy.index(1, 0, fam)))
        QThreadPool.globalInstance().waitForDone(60000)
        settle()
        window.grab().save(str(out / "04-overloads.png"))
        window.trees.setCurrentWidget(window.review_panel)
        settle()
        window.grab().save(str(out / "05-review.png"))
    QThreadPool.globalInstance().waitForDone(60000)
    # two exports side by side: head count 2 vs 4
    from inspector.gui.compare import CompareWindow

    fixtures = ROOT / "tests" / "fixtures"
    compare = CompareWindow()
    compare.resize(1600, 900)
    compare.show()
    wait_for(compare.pair_loaded, lambda: compare.open_pair(fixtures / "dynamo_block.onnx",
                                                            fixtures / "dynamo_block_h4.onnx"))
    group = compare.changes.topLevelItem(0)
    if group is not None and group.childCount():
        wait_for(compare.change_shown, lambda: compare.changes.setCurrentItem(group.child(group.childCount() - 1)))
    QThreadPool.globalInstance().waitForDone(60000)
    settle()
    compare.grab().save(str(out / "06-compare.png"))
    compare.close()
    report_screenshot(out)
    print("wrote", ", ".join(sorted(p.name for p in out.glob("*.png"))), "to", out)
    return 0


def report_screenshot(out: Path) -> None:
    """The HTML report of the sample, as a person sees it in a browser (headless Chromium)."""
    from inspector.cli import main as cli

    html = out / "report.html"
    cli(["report", str(SAMPLE), "--format", "html", "-o", str(html)])
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium not found: skipped the report screenshot", file=sys.stderr)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", "--window-size=1300,2000",
                        f"--screenshot={out / '07-report.png'}", html.as_uri()],
                       capture_output=True, timeout=120, check=False)


if __name__ == "__main__":
    sys.exit(main())
