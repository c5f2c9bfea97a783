"""Render the app's main views on real exports to PNG files at 1366x768, for humans to look at.

Run by ``make screenshots`` (under Xvfb when no display is present): ``python scripts/screenshots.py --out DIR``.
Writes 01-overview (the sample export), 02-sdpa-call (an SDPA call with its aten signature), 03-overloads (two
calls of one family side by side: pair_scale_a's SDPA calls with 4 and 2 heads, the differing values lit and the
scale constant selected on both sides), 04-review (the review panel), 05-compare (pair_scale_a vs pair_scale_b of
the zoo, the changed scale selected on both sides) and, when Chromium is installed, 06-report (the HTML report in
a browser).
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
TWO_CALLS = ("scaled_dot_product_attention", "scaled_dot_product_attention_1")  # of PAIR[0]: 4 and 2 heads
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

    def wait_until(self, done: Any, timeout_s: float = 60) -> None:
        """Process events until ``done()`` (or the timeout)."""
        import time

        end = time.monotonic() + timeout_s
        while not done() and time.monotonic() < end:
            self.app.processEvents()
            time.sleep(0.02)
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
                view.expand(fam)
                overload = proxy.index(0, 0, fam)
                view.expand(overload)
                call = proxy.index(0, 0, overload)
                self.wait_for([window.selection_shown, window.center.view_shown],
                              lambda call=call: view.setCurrentIndex(call))
                break
        window.right.setCurrentWidget(window.signature)
        self.save(window, "02-sdpa-call.png")
        self.two_calls(window)
        # a local function family whose overloads differ only in a baked value, then what is left to review
        self.wait_for([window.reviews_listed], lambda: window.open_path(OVERLOADS))
        window.filter_box.set_now("local.tr")
        fam = proxy.index(0, 0)
        view.expand(fam)
        self.wait_for([window.selection_shown, window.center.view_shown],
                      lambda: view.setCurrentIndex(proxy.index(1, 0, fam)))
        window.trees.setCurrentWidget(window.review_panel)
        self.wait_for([], lambda: None)
        self.save(window, "04-review.png")
        compare = CompareWindow()
        compare.show()
        compare.setGeometry(compare.screen().availableGeometry())
        self.wait_for([compare.pair_loaded, compare.change_shown], lambda: compare.open_pair(*PAIR))
        graph = compare.side_a.graph  # the changed value's box, selected in A and (aligned) in B
        changed = next((i for i, item in graph.items_by_id.items() if item.mark), None)
        if changed is not None:
            self.wait_for([], lambda: graph.select(changed))
        self.save(compare, "05-compare.png")
        compare.close()
        window.close()
        return 0

    def two_calls(self, window: Any) -> None:
        """Two SDPA calls of one export side by side (the functions tree's Ctrl+D), the scale constant selected."""
        from inspector.gui.overload_compare import FamilyCompare

        self.wait_for([window.model_loaded], lambda: window.open_path(PAIR[0]))
        index, family_compare = window.index, window.findChild(FamilyCompare)
        a, b = (next(c for c in index.provenance.calls if c.name == name) for name in TWO_CALLS)
        side_by_side = family_compare.compare(a, b)
        side_by_side.setGeometry(side_by_side.screen().availableGeometry())
        self.wait_until(lambda: side_by_side.ready)
        comparison = side_by_side.comparison
        values = [r for r in comparison.rows if r.kind == "value"]
        scale = next((k for k, r in enumerate(values) if r.label.startswith("scale")), None)
        if scale is not None:  # the scale constant of A, and with it its partner in B
            slot_a, _slot_b = comparison.pairing.changed[scale]
            graph = side_by_side.twin.side_a.graph
            self.wait_for([], lambda: graph.select(f"const:{slot_a[1]}"))
        self.save(side_by_side, "03-overloads.png")
        side_by_side.close()


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
