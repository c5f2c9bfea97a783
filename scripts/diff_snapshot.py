"""Write `onnx-inspector diff` output (text and JSON) for every ordered pair of fixture models into a folder.

Used to check that a refactoring leaves diff output byte-identical: run it before and after, then
`diff -r BEFORE AFTER`. Needs only the package (no torch).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def models() -> list[Path]:
    found = sorted(p for p in (ROOT / "tests").rglob("*.onnx") if "bad" not in p.parts)
    found += sorted((ROOT / "tests").rglob("*.onnxtxt"))
    found += sorted((ROOT / "resources" / "samples").glob("*.onnx"))
    return found


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--formats", default="text,json")
    args = ap.parse_args(argv)
    from inspector.cli import main as cli

    args.out.mkdir(parents=True, exist_ok=True)
    ms = models()
    n = 0
    for a, b in itertools.product(ms, ms):
        for fmt in args.formats.split(","):
            buf, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
                code = cli(["diff", str(a), str(b), "--format", fmt])
            name = f"{a.relative_to(ROOT)}__{b.relative_to(ROOT)}.{fmt}".replace("/", "_")
            (args.out / name).write_text(f"exit {code}\n{err.getvalue()}{buf.getvalue()}", encoding="utf-8")
            n += 1
    print(f"{n} outputs written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
