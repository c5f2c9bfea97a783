"""Render the app's main views on real exports to PNG files at 1366x768, for humans to look at.

Run by ``make screenshots`` (under Xvfb when no display is present): ``python scripts/screenshots.py --out DIR``.
Writes 01-overview (the sample export), 02-sdpa-call (an SDPA call with its aten signature), 03-overloads (a
function overload with its specialised value), 04-review (the review panel), 05-compare (pair_scale_a vs
pair_scale_b of the zoo) and, when Chromium is installed, 06-report (the HTML report in a browser).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "resources" / "samples" / "sample_export.onnx"
OVERLOADS = ROOT / "tests" / "fixtures" / "overloads.onnx"
PAIR = (ROOT / "tests" / "zoo" / "pair_scale_a.onnx", ROOT / "tests" / "zoo" / "pair_scale_b.onnx")
SCREEN = (1366, 768)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="screenshots")
    ap.add_argument("--model", default=str(SAMPLE))
    args = ap.parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("QT_QPA_PLATFORM") and shutil.which("xvfb-run"):
        screen = f"-screen 0 {SCREEN[0]}x{SCREEN[1]}x24"
        return subprocess.call(["xvfb-run", "-a", "-s", screen, sys.executable, __file__, *sys.argv[1:]])
    out = Path(args.out).resolve()  # Chromium needs an absolute path and a file URI
    out.mkdir(parents=True, exist_ok=True)
    shots = Shots(out)
    code = shots.app_views(Path(args.model).resolve())
    if code == 0:
        report_screenshot(out)
        print("wrote", ", ".join(sorted(p.name for p in out.glob("*.png"))), "to", out)
    return code


class Shots:
    def __init__(self, out: Path) -> None:
        from PySide6.QtWidgets import QApplication

        from inspector.gui.theme import apply_theme

        existing = QApplication.instance()
        self.app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
        apply_theme(self.app)  # ONNX_INSPECTOR_THEME=dark renders the dark palette
        self.out = out

    def wait_for(self, signals: list[Any], action: Any, timeout_ms: int = 60000) -> None:
        """Run ``action`` and return once every signal has fired (or after the timeout)."""
        from PySide6.QtCore import QEventLoop, QThreadPool, QTimer

        loop, left = QEventLoop(), [len(signals)]

        def fired(*_: Any) -> None:
            left[0] -= 1
            if left[0] <= 0:
                loop.quit()

        connections = [s.connect(fired) for s in signals]
        QTimer.singleShot(timeout_ms if signals else 0, loop.quit)
        action()
        loop.exec()
        for s, c in zip(signals, connections):
            s.disconnect(c)
        QThreadPool.globalInstance().waitForDone(60000)
        for _ in range(20):
            self.app.processEvents()

    def save(self, widget: Any, name: str) -> None:
        widget.grab().save(str(self.out / name))

    def app_views(self, model: Path) -> int:
        from inspector.gui.compare import CompareWindow
        from inspector.gui.main_window import MainWindow

        window = MainWindow()
        window.show()
        window.setGeometry(window.screen().availableGeometry())  # the whole screen (Xvfb has no window manager)
        self.wait_for([window.model_loaded, window.center.view_shown], lambda: window.open_path(model))
        if window.index is None:
            print("could not load", model, file=sys.stderr)
            return 2
        self.save(window, "01-overview.png")
        view, proxy = window.family_view, window.family_filter
        for row in range(proxy.rowCount()):  # an SDPA call: its signature beside a body with a baked scale
            fam = proxy.index(row, 0)
            if "scaled_dot_product_attention" in str(fam.data()):
                call = proxy.index(0, 0, proxy.index(0, 0, fam))
                view.expand(fam)
                view.expand(call.parent())
                self.wait_for([window.selection_shown, window.center.view_shown],
                              lambda call=call: view.setCurrentIndex(call))
                break
        self.save(window, "02-sdpa-call.png")
        # a local function family whose overloads differ only in a baked value, then what is left to review
        self.wait_for([window.reviews_listed], lambda: window.open_path(OVERLOADS))
        window.filter_box.set_now("local.tr")
        fam = proxy.index(0, 0)
        view.expand(fam)
        self.wait_for([window.selection_shown, window.center.view_shown],
                      lambda: view.setCurrentIndex(proxy.index(1, 0, fam)))
        self.save(window, "03-overloads.png")
        window.trees.setCurrentWidget(window.review_panel)
        self.wait_for([], lambda: None)
        self.save(window, "04-review.png")
        compare = CompareWindow()
        compare.show()
        compare.setGeometry(compare.screen().availableGeometry())
        self.wait_for([compare.pair_loaded, compare.change_shown], lambda: compare.open_pair(*PAIR))
        self.save(compare, "05-compare.png")
        compare.close()
        window.close()
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
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                               "--no-first-run", "--disable-background-networking", "--disable-component-update",
                               "--disable-sync", f"--user-data-dir={profile}", f"--window-size={SCREEN[0]},2000",
                               f"--screenshot={out / '06-report.png'}", html.as_uri()],
                              capture_output=True, timeout=120, check=False)
    if done.returncode != 0 or not (out / "06-report.png").exists():
        print("chromium could not take the report screenshot:", done.stderr.decode(errors="replace")[-400:],
              file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
