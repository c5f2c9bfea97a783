"""Screenshots of a reviewer's tasks, end to end, on real exports at 1366x768, for humans to look at.

Run by ``make screenshots`` (under Xvfb when no display is present): ``python scripts/screenshots.py --out DIR``.
Each step does what a person would (through the same widgets and signals) and saves what the screen shows:
01-open (GPT-2 from the zoo, opened), 02-sdpa-scale (its SDPA scale found in the Review list: the body with the
scale lit, the signature beside it), 03-reviewed (marked OK with a note), 04-search ("softmax": the results told
apart), 05-jump (the second result jumped to: its node selected in its call), 06-compare-exports (pair_scale_a
against pair_scale_b: the changed scale selected on both sides), 07-overloads-scale (two SDPA calls of
pair_scale_a: 4 and 2 heads), 08-overloads-mask (Whisper's encoder against decoder self-attention: the attn_mask
one passes), 09-report-pdf (the report with the review, exported to PDF, first page) and, when Chromium is
installed, 10-report-html (the HTML report in a browser). The models are copied to a temporary folder first, so
the review's sidecar is written there.
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
ZOO = ROOT / "tests" / "zoo"
MODEL = ZOO / "gpt2.onnx"
PAIR = (ZOO / "pair_scale_a.onnx", ZOO / "pair_scale_b.onnx")
WHISPER = ZOO / "whisper.onnx"
TWO_CALLS = ("scaled_dot_product_attention", "scaled_dot_product_attention_1")  # of PAIR[0]: 4 and 2 heads;
# of WHISPER: encoder and decoder self-attention
SCREEN = (1366, 768)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="screenshots")
    ap.add_argument("--model", default=str(MODEL))
    args = ap.parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("QT_QPA_PLATFORM") and shutil.which("xvfb-run"):
        screen = f"-screen 0 {SCREEN[0]}x{SCREEN[1]}x24"
        return subprocess.call(["xvfb-run", "-a", "-s", screen, sys.executable, __file__, *sys.argv[1:]])
    out = Path(args.out).resolve()  # Chromium needs an absolute path and a file URI
    out.mkdir(parents=True, exist_ok=True)
    shots = Shots(out)
    with tempfile.TemporaryDirectory() as work:
        copies = []
        for source in (Path(args.model).resolve(), *PAIR, WHISPER):
            copies.append(Path(work) / source.name)
            shutil.copy(source, copies[-1])
        code = shots.tasks(*copies)
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

    def tasks(self, model: Path, pair_a: Path, pair_b: Path, whisper: Path) -> int:
        from inspector.gui.main_window import MainWindow

        window = MainWindow()
        window.show()
        window.setGeometry(window.screen().availableGeometry())  # the whole screen (Xvfb has no window manager)
        self.wait_for([window.reviews_listed, window.center.view_shown], lambda: window.open_path(model))
        if window.index is None:
            print("could not load", model, file=sys.stderr)
            return 2
        self.save(window, "01-open.png")
        self.find_and_review_the_scale(window)
        self.search_and_jump(window)
        self.compare_exports(pair_a, pair_b)
        self.wait_for([window.reviews_listed], lambda: window.open_path(pair_a))
        self.two_calls(window, "07-overloads-scale.png")
        self.wait_for([window.reviews_listed], lambda: window.open_path(whisper))
        self.two_calls(window, "08-overloads-mask.png")
        self.wait_for([window.reviews_listed], lambda: window.open_path(model))
        self.report_pdf(window)
        window.close()
        return 0

    def find_and_review_the_scale(self, window: Any) -> None:
        """The SDPA scale, found in the Review list (one click), then marked OK with a note."""
        from PySide6.QtCore import Qt

        from inspector.core.specialise.specialiser import SpecialisedValue

        window.trees.setCurrentWidget(window.review_panel)
        tree = window.review_panel.tree
        rows = [tree.topLevelItem(k) for k in range(tree.topLevelItemCount())]
        family = next(r for r in rows if "scaled_dot_product_attention" in r.text(0))
        values = [family.child(k) for k in range(family.childCount())
                  if isinstance(family.child(k).data(0, Qt.ItemDataRole.UserRole).obj, SpecialisedValue)]
        def linked_to_scale(row: Any) -> bool:  # the value the aten argument ``scale`` became
            return any(link.parameter == "scale" for link in row.data(0, Qt.ItemDataRole.UserRole).obj.links)

        row = next((r for r in values if linked_to_scale(r)), values[0])
        tree.scrollToItem(row)
        self.wait_for([window.selection_shown], lambda: tree.itemClicked.emit(row, 0))
        window.right.setCurrentWidget(window.signature)
        self.wait_for([], lambda: None)
        self.save(window, "02-sdpa-scale.png")
        bar = window.review_bar
        bar.note.setText("sqrt(scale) on q and on k: their product is scaled by scale")
        self.wait_for([window.review_saved], lambda: bar.buttons["ok"].click())
        self.save(window, "03-reviewed.png")

    def search_and_jump(self, window: Any) -> None:
        """Ctrl+F, type, look at the results; then jump to the second one."""
        window.start_search()
        panel = window.search_panel
        self.wait_for([panel.shown], lambda: panel.box.setText("softmax"))
        self.save(window, "04-search.png")
        panel.results.setCurrentRow(min(1, panel.results.count() - 1))
        self.wait_for([window.center.view_shown], lambda: panel.results.itemClicked.emit(panel.results.currentItem()))
        self.save(window, "05-jump.png")

    def compare_exports(self, a: Path, b: Path) -> None:
        """Two exports side by side; the first change row (selected on opening) shows the changed scale's box."""
        from inspector.gui.compare import CompareWindow

        compare = CompareWindow()
        compare.show()
        compare.setGeometry(compare.screen().availableGeometry())
        self.wait_for([compare.pair_loaded, compare.change_shown], lambda: compare.open_pair(a, b))
        self.save(compare, "06-compare-exports.png")
        compare.close()

    def two_calls(self, window: Any, name: str) -> None:
        """Two SDPA calls of the open export side by side (the functions tree's Ctrl+D)."""
        from inspector.gui.overload_compare import FamilyCompare

        index, family_compare = window.index, window.findChild(FamilyCompare)
        a, b = (next(c for c in index.provenance.calls if c.name == n) for n in TWO_CALLS)
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
        self.save(side_by_side, name)
        side_by_side.close()

    def report_pdf(self, window: Any) -> None:
        """File > Export Report as PDF (with the review made above); its first page as a PNG (pdftoppm)."""
        pdf = self.out / "report.pdf"
        self.wait_for([window.report_exported], lambda: window.export_report_to(pdf))
        pdftoppm = shutil.which("pdftoppm")
        if pdftoppm is None or not pdf.exists():
            print("no PDF, or pdftoppm not found: skipped the PDF page", file=sys.stderr)
            return
        subprocess.run([pdftoppm, "-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile", str(pdf),
                        str(self.out / "09-report-pdf")], check=False, timeout=120)


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
                               f"--screenshot={out / '10-report-html.png'}", html.as_uri()],
                              capture_output=True, timeout=120, check=False)
    if done.returncode != 0 or not (out / "10-report-html.png").exists():
        print("chromium could not take the report screenshot:", done.stderr.decode(errors="replace")[-400:],
              file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
