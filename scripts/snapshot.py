"""Write the command line's outputs for every zoo model and fixture into a folder, to prove a refactoring changes
no output: `summary --json`, `report --format json` per model, and `diff` (text and JSON) per ordered pair.

Run it before and after the change, then `diff -r BEFORE AFTER`. Needs only the package (no torch). A report's
JSON names the tool's version and nothing of the machine, so two runs of one tree are byte-identical.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def models() -> list[Path]:
    found = sorted(p for p in (ROOT / "tests").rglob("*.onnx") if "bad" not in p.parts)
    found += sorted((ROOT / "tests").rglob("*.onnxtxt"))
    found += sorted((ROOT / "resources" / "samples").glob("*.onnx"))
    return found


def _run(args: list[str]) -> str:
    from inspector.cli import main as cli

    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = cli(args)
    return f"exit {code}\n{err.getvalue()}{buf.getvalue()}"


def _name(*paths: Path) -> str:
    return "__".join(str(p.relative_to(ROOT)) for p in paths).replace("/", "_")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--what", default="summary,report,diff", help="comma-separated: summary, report, diff")
    args = ap.parse_args(argv)
    what = set(args.what.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    ms = models()
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for m in ms:
            if "summary" in what:
                (args.out / f"{_name(m)}.summary.json").write_text(_run(["summary", str(m), "--json"]), "utf-8")
                n += 1
            if "report" in what:
                out = Path(tmp) / "report.json"
                log = _run(["report", str(m), "--format", "json", "-o", str(out)])
                body = out.read_text("utf-8") if out.exists() else ""
                out.unlink(missing_ok=True)
                (args.out / f"{_name(m)}.report.json").write_text(log.replace(tmp, "TMP") + body, "utf-8")
                n += 1
        if "diff" in what:
            for a, b in itertools.product(ms, ms):
                for fmt in ("text", "json"):
                    text = _run(["diff", str(a), str(b), "--format", fmt])
                    (args.out / f"{_name(a, b)}.diff.{fmt}").write_text(text, encoding="utf-8")
                    n += 1
    print(f"{n} outputs written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
