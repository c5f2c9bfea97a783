"""Benchmark: load + index a ~100k-node export, as a ratio to ``onnx.load(..., load_external_data=False)``.

Each measurement runs in its own process so that peak memory (max RSS) is per task. Prints a table and exits 0;
targets are documented in benchmarks/README.md, never asserted. ``python benchmarks/bench_index.py [--nodes N]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENERATED = HERE / "_generated"

TASK = r"""
import gc, json, resource, sys, time
path, task, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
opened = []
def hook(ev, args):
    if ev == "open" and args and isinstance(args[0], str):
        opened.append(args[0])
sys.addaudithook(hook)
times, extra = [], {}
import onnx
from inspector.core.index import open_index
for _ in range(repeats):
    gc.collect()
    t0 = time.perf_counter()
    if task == "onnx.load":
        obj = onnx.load(path, load_external_data=False)
    else:
        obj = open_index(path)
    times.append(time.perf_counter() - t0)
    if task == "index":
        t1 = time.perf_counter(); obj.provenance.module_root; extra["module_tree_s"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        for c in obj.provenance.calls: c.fx
        extra["parse_all_fx_args_s"] = time.perf_counter() - t1
        from inspector.core.summary import summary_dict
        t1 = time.perf_counter(); summary_dict(obj, specialisation=False); extra["summary_s"] = time.perf_counter() - t1
        extra["calls"] = len(obj.provenance.calls)
        extra["nodes"] = obj.facts.total_nodes
    del obj
if task == "fold":
    from inspector.core.index import open_index
    from inspector.core.fold import fold_model
    from inspector.core.specialise import Specialiser
    index = open_index(path)
    t1 = time.perf_counter(); Specialiser(index).analyse_all(); extra["specialise_s"] = time.perf_counter() - t1
    t1 = time.perf_counter(); folded, report = fold_model(index); extra["fold_s"] = time.perf_counter() - t1
    extra["fold_functions"] = len(report.functions)
    extra["fold_nodes_after"] = report.nodes_after
weights = [p for p in opened if p.endswith(".weights.bin")]
print(json.dumps({"times": times, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "weights_opened": len(weights), **extra}))
"""


def measure(path: Path, task: str, repeats: int) -> dict:
    out = subprocess.run([sys.executable, "-c", TASK, str(path), task, str(repeats)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from gen_large import generate

    GENERATED.mkdir(exist_ok=True)
    path = GENERATED / f"large_{args.nodes}.onnx"
    if not path.exists():
        n = generate(path, args.nodes)
        print(f"generated {path.name}: {n} nodes, {path.stat().st_size / 1e6:.1f} MB (+ external weights)")
    base = measure(path, "onnx.load", args.repeats)
    ours = measure(path, "index", args.repeats)
    folding = measure(path, "fold", 0)
    ours.update({k: v for k, v in folding.items() if k not in ("times", "max_rss_mb", "weights_opened")})
    b, o = min(base["times"]), min(ours["times"])  # least disturbed run of each
    print(f"model: {path.name}, {ours['nodes']:,} nodes, {ours['calls']:,} aten calls, "
          f"{path.stat().st_size / 1e6:.1f} MB")
    print(f"{'task':<34}{'best s':>10}{'ratio':>8}{'max RSS MB':>12}")
    print(f"{'onnx.load(load_external_data=False)':<34}{b:>10.3f}{1:>8.2f}{base['max_rss_mb']:>12.0f}")
    print(f"{'open_index (load + index)':<34}{o:>10.3f}{o / b:>8.2f}{ours['max_rss_mb']:>12.0f}")
    for k in ("module_tree_s", "parse_all_fx_args_s", "summary_s", "specialise_s", "fold_s"):
        print(f"{'  then ' + k[:-2].replace('_', ' ') + ' (lazy)':<34}{ours[k]:>10.3f}{ours[k] / b:>8.2f}")
    print(f"{'specialise + fold process':<34}{'':>10}{'':>8}{folding['max_rss_mb']:>12.0f}")
    print(f"fold: {ours['calls']:,} calls -> {ours['fold_functions']} functions, main graph "
          f"{ours['nodes']:,} -> {ours['fold_nodes_after']:,} nodes")
    print(f"memory ratio (max RSS): {ours['max_rss_mb'] / base['max_rss_mb']:.2f}")
    print(f"external data files opened while indexing: {ours['weights_opened']} (target 0)")
    print(f"target: load+index ratio <= 4 -> {'met' if o / b <= 4 else 'NOT met'} ({o / b:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
