"""Regenerate ``resources/torchlib_functions.txt`` from onnxscript's torchlib registry.

For every aten/prims overload torchlib registers: the onnxscript function that lowers it, whether it is
``trace_only`` (runs as Python at export time, so the values it computes are baked into the ONNX), whether it is
the complex-number variant, and its source location relative to the onnxscript package. The inspector reads this
file at run time without torch or onnxscript (``inspector/core/aten/torchlib.py``).

Usage: ``.venv-zoo/bin/python scripts/gen_torchlib.py [--output PATH]`` (needs torch and onnxscript).
One line per (target, function), tab-separated::

    # onnxscript 0.7.2
    aten::transpose.int<TAB>aten_transpose<TAB>trace_only<TAB>real<TAB>function_libs/torch_lib/ops/core.py:8791
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = REPO / "resources" / "torchlib_functions.txt"


def collect() -> tuple[str, list[tuple[str, str, bool, bool, str]]]:
    import onnxscript
    from onnxscript.function_libs.torch_lib import (
        ops,  # noqa: F401  (registers the functions)
        registration,
    )

    root = Path(onnxscript.__file__).resolve().parent
    rows: list[tuple[str, str, bool, bool, str]] = []
    for target, overloaded in registration.default_registry.items():
        for fn, is_complex in [(f, False) for f in overloaded.overloads] + [(f, True) for f in overloaded.complex]:
            func = getattr(fn, "func", None) or getattr(fn, "function", None)
            where = ""
            if func is not None:
                try:
                    path = Path(inspect.getsourcefile(func) or "").resolve()
                    line = inspect.getsourcelines(func)[1]
                    where = f"{path.relative_to(root).as_posix()}:{line}"
                except (OSError, TypeError, ValueError):
                    where = ""
            traced = type(fn).__name__ == "TracedOnnxFunction"
            rows.append((target, str(fn.name), traced, is_complex, where))
    rows.sort()
    return str(onnxscript.__version__), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    version, rows = collect()
    for target, name, *_ in rows:
        if "\t" in target or "\t" in name or "\n" in target + name:
            print(f"unexpected characters in {target!r} / {name!r}", file=sys.stderr)
            return 1
    lines = [f"# onnxscript {version}: aten overload, torchlib function, trace_only|script, real|complex, source"]
    lines += ["\t".join((t, n, "trace_only" if tr else "script", "complex" if c else "real", w))
              for t, n, tr, c, w in rows]
    args.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(rows)} functions for {len({r[0] for r in rows})} targets -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
