"""``onnx-inspector [open] [MODEL [OTHER]]``: open the desktop app (PySide6 is imported only here)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector", description=__doc__)
    p.add_argument("model", nargs="?", help="a model to open")
    p.add_argument("other", nargs="?", help="a second model: open both side by side with their differences")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    try:
        from inspector.gui.app import run
    except ImportError as e:
        from inspector.core.util.errors import InspectorError

        raise InspectorError(f"the desktop app needs PySide6 ({e.name or e}); install the 'gui' extra") from None
    return run([a for a in (args.model, args.other) if a])
