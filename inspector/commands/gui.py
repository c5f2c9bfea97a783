"""``onnx-inspector [open] [MODEL [OTHER]]``: open the desktop app (PySide6 is imported only here, by ``api.show``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from inspector import api
from inspector.commands import HelpFormatter


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="onnx-inspector", description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("model", nargs="?", help="a model to open")
    p.add_argument("other", nargs="?", help="a second model: open both side by side with their differences")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    if args.model is None:
        return api.show()
    return api.show(args.model, args.other)
