"""A long fuzz campaign with the harness of ``tests/test_fuzz.py`` (see ``tests/fuzzing.py``).

    .venv/bin/python scripts/fuzz.py --cases 10000 [--start 0] [--text] [--report fuzz-report.json]
    nice -n 19 .venv/bin/python scripts/fuzz.py --cases 10000 &     # in the background, one process

``--text`` fuzzes ONNX text syntax instead (``run_text_case``: deep nesting, long tokens, control characters).
Each case is replayable by its number (``--start N --cases 1``). Prints a progress line every 500 cases and, at the
end, the counts: cases, runs, exit codes, the slowest run and every failure (also written to ``--report``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzzing import Tally, run_case, run_text_case, seeds  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=10_000)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--report", type=Path, help="write the counts and failures as JSON")
    p.add_argument("--text", action="store_true", help="mutate ONNX text syntax instead of binary exports")
    args = p.parse_args()
    files = seeds()
    tally = Tally()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="onnx-inspector-fuzz-") as folder:
        for case in range(args.start, args.start + args.cases):
            tally.cases += 1
            outcomes = [run_text_case(case, Path(folder))] if args.text else run_case(case, Path(folder), files)
            for outcome in outcomes:
                tally.add(outcome)
                if outcome.problem:
                    print(f"FAIL case {outcome.case} ({outcome.seed}, {outcome.mutation}, {outcome.command}): "
                          f"{outcome.problem}", flush=True)
            if tally.cases % 500 == 0:
                print(f"{tally.cases} cases, {tally.runs} runs, exit codes {dict(sorted(tally.codes.items()))}, "
                      f"{len(tally.failures)} failures, {time.monotonic() - started:.0f} s", flush=True)
    result = {"cases": tally.cases, "runs": tally.runs, "exit_codes": dict(sorted(tally.codes.items())),
              "failures": [asdict(f) for f in tally.failures], "slowest_run_seconds": round(tally.slowest, 3),
              "seconds": round(time.monotonic() - started, 1), "first_case": args.start,
              "kind": "text" if args.text else "binary"}
    print(json.dumps({k: v for k, v in result.items() if k != "failures"}), f"failures: {len(tally.failures)}")
    if args.report:
        args.report.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
