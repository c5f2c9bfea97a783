"""`fold --modules` on the 100k-node replica: what it costs, and what it buys a runtime.

Users asked for dynamo's missing ``export_modules_as_functions`` because backends compile repeated decoder blocks
once per block; this measures, side by side on the replica ``benchmarks/bench.py`` uses (``replicate.py``: the
first decoder layer of ``tests/zoo/llama_gqa.onnx`` repeated to ~100k nodes, weights external), the fold's time as a
ratio to ``onnx.load(load_external_data=False)``, the model file before and after, and onnxruntime
``InferenceSession`` creation before and after (default graph optimisations, and with them off). Each figure comes
from its own process (the least time of ``--repeat`` runs, page cache warm). Run by hand, never in tests:

    python benchmarks/bench_modules.py [--nodes 100000] [--modules LlamaDecoderLayer] [--hoist] [--repeat 3]

``--model PATH`` measures the same on an export of one's own instead of the replica: ``make_tinyllama.py`` makes
a real-width one (TinyLlama-1.1B's shape, 4.4 GB of external weights); the fold is written beside it, so that its
weights file stays where the folded model's references say.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench import model_paths  # noqa: E402

TASK = r"""
import json, sys, time
op, path = sys.argv[1], sys.argv[2]
with open(path, "rb") as fh:  # warm the page cache: disk speed is not what is measured
    while fh.read(1 << 24):
        pass
if op == "onnx.load":
    import onnx
    t = time.perf_counter(); onnx.load(path, load_external_data=False); dt = time.perf_counter() - t
elif op == "fold":
    import contextlib, io
    from inspector.commands import fold
    argv = [path, "--modules", sys.argv[3], "-o", sys.argv[4], *sys.argv[5:]]
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        fold.main(argv)
    dt = time.perf_counter() - t
else:
    import onnxruntime as ort
    opts = ort.SessionOptions()
    if op == "session.noopt":
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    t = time.perf_counter(); ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    dt = time.perf_counter() - t
print(json.dumps({"t": dt}))
"""


def timed(op: str, path: Path, *extra: str, repeat: int = 3, timeout: float = 900.0) -> float:
    """The least time of ``repeat`` runs of ``op`` on ``path``, each in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    best = float("inf")
    for _ in range(repeat):
        res = subprocess.run([sys.executable, "-c", TASK, op, str(path), *extra], capture_output=True, text=True,
                             env=env, timeout=timeout, check=False)
        if res.returncode != 0:
            tail = (res.stderr.strip().splitlines() or ["?"])[-1]
            raise SystemExit(f"{op} on {path.name} failed: {tail}")
        best = min(best, json.loads(res.stdout.strip().splitlines()[-1])["t"])
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--source", default=str(ROOT / "tests" / "zoo" / "llama_gqa.onnx"))
    ap.add_argument("--model", help="an export to measure instead of the replica (weights external, beside it)")
    ap.add_argument("--modules", default="LlamaDecoderLayer")
    ap.add_argument("--hoist", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    source = Path(args.model) if args.model else model_paths(Path(args.source), args.nodes)[0]
    folded = source.with_name(source.stem + ".modules.onnx")  # beside it: the external weights stay valid
    extra = ["--hoist"] if args.hoist else []
    t_fold = timed("fold", source, args.modules, str(folded), *extra, repeat=args.repeat)
    t_load = timed("onnx.load", source, repeat=args.repeat)
    import onnx

    before, after = (onnx.load(str(p), load_external_data=False) for p in (source, folded))
    external = sum(p.stat().st_size for p in source.parent.iterdir() if p.is_file() and p.suffix != ".onnx"
                   and any(e.key == "location" and e.value == p.name for t in before.graph.initializer
                           for e in t.external_data))
    rows = [("main-graph nodes", f"{len(before.graph.node):,}", f"{len(after.graph.node):,}"),
            ("functions", str(len(before.functions)), str(len(after.functions))),
            ("model file (MB, weights external)", f"{source.stat().st_size / 1e6:.1f}",
             f"{folded.stat().st_size / 1e6:.1f}"),
            ("external weights (GB, one file for both)", f"{external / 1e9:.2f}", f"{external / 1e9:.2f}")]
    for op, label in (("session", "InferenceSession, default optimisations (s)"),
                      ("session.noopt", "InferenceSession, optimisations off (s)")):
        rows.append((label, f"{timed(op, source, repeat=args.repeat):.2f}",
                     f"{timed(op, folded, repeat=args.repeat):.2f}"))
    what = "model" if args.model else "replica"
    print(f"{what} {source.name}: fold --modules {args.modules}{' --hoist' if args.hoist else ''}")
    print(f"fold {t_fold:.3f} s = {t_fold / t_load:.1f}x onnx.load ({t_load:.3f} s)")
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'before':>10}  {'after':>10}")
    for label, b, a in rows:
        print(f"{label:{width}}  {b:>10}  {a:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
