"""Benchmark: diff two ~100k-node exports that differ slightly, as a ratio to load+index of both.

Reuses (or generates) ``_generated/large_100000.onnx`` with ``gen_large.generate``, and derives a second export from
it without any parameter: the SDPA scale constant re-baked for another head size, three transposes with another
perm, and one weight pointing at other bytes of the weights file (as a re-trained weight would). Both measurements
run in this process, on the same files, best of ``--repeats``. Prints a table and exits 0; nothing is asserted.
``python benchmarks/bench_diff.py [--nodes N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

HERE = Path(__file__).resolve().parent
GENERATED = HERE / "_generated"
sys.path.insert(0, str(HERE.parent))

from inspector.core.diff import diff_models  # noqa: E402
from inspector.core.index import open_index  # noqa: E402

NEW_SCALE = np.float32(1 / np.sqrt(np.sqrt(4.0)))  # the split SDPA scale for head size 4 instead of 8
CHANGED_PERMS = 3


def make_changed(base: Path, out: Path) -> list[str]:
    """Load ``base`` (without external data), change a few baked values and one weight's data, save as ``out``
    next to it so that the external data locations stay valid. Returns what was changed."""
    m = onnx.load(str(base), load_external_data=False)
    g = m.graph
    done = []
    for t in g.initializer:
        if t.name == "val_scale":
            t.raw_data = np.array([NEW_SCALE], dtype=np.float32).tobytes()
            done.append(f"val_scale -> {float(NEW_SCALE):.8g}")
            break
    changed = 0
    for node in g.node:
        if node.op_type == "Transpose" and node.name.startswith("node_Transpose") and changed < CHANGED_PERMS:
            props = {p.key: p.value for p in node.metadata_props}
            if "aten.transpose.int" not in props.get("pkg.torch.onnx.fx_node", ""):
                continue
            for a in node.attribute:
                if a.name == "perm":
                    a.ints[:] = [0, 1, 2, 3]
            changed += 1
            done.append(f"{node.name}: perm -> [0, 1, 2, 3]")
    external = [t for t in g.initializer if t.data_location == TensorProto.EXTERNAL]
    first, other = external[0], next(t for t in external[1:] if list(t.dims) == list(external[0].dims))
    offsets = {e.key: e for e in first.external_data}
    offsets["offset"].value = {e.key: e.value for e in other.external_data}["offset"]
    done.append(f"{first.name}: data of {other.name}")
    out.write_bytes(m.SerializeToString())
    return done


def _opened_weights() -> list[str]:
    opened: list[str] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and args and isinstance(args[0], str) and args[0].endswith(".weights.bin"):
            opened.append(args[0])

    sys.addaudithook(hook)
    return opened


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from gen_large import generate

    GENERATED.mkdir(exist_ok=True)
    base = GENERATED / f"large_{args.nodes}.onnx"
    if not base.exists():
        n = generate(base, args.nodes)
        print(f"generated {base.name}: {n} nodes, {base.stat().st_size / 1e6:.1f} MB (+ external weights)")
    changed = GENERATED / f"large_{args.nodes}_changed.onnx"
    edits = make_changed(base, changed)
    print(f"{changed.name}: {'; '.join(edits[:2])}; … {len(edits)} edits")

    opened = _opened_weights()
    best_index = best_diff = float("inf")
    result = None
    nodes = calls = 0
    for _ in range(args.repeats):
        gc.collect()
        t0 = time.perf_counter()
        a, b = open_index(base), open_index(changed)
        t_index = time.perf_counter() - t0
        t1 = time.perf_counter()
        result = diff_models(a, b)
        t_diff = time.perf_counter() - t1
        best_index, best_diff = min(best_index, t_index), min(best_diff, t_diff)
        nodes, calls = a.facts.total_nodes + b.facts.total_nodes, len(a.provenance.calls) + len(b.provenance.calls)
        del a, b
    assert result is not None
    print(f"models: {nodes:,} nodes, {calls:,} aten calls in both")
    print(f"{'task':<34}{'best s':>10}{'ratio':>8}")
    print(f"{'open_index(A) + open_index(B)':<34}{best_index:>10.3f}{1:>8.2f}")
    print(f"{'diff_models(A, B)':<34}{best_diff:>10.3f}{best_diff / best_index:>8.2f}")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts().items()))
    sites = sum(len(c.sites) for c in result.changes)
    print(f"changes found: {len(result.changes)} ({counts}) at {sites:,} sites; equal={result.equal}")
    for c in result.changes:
        print(f"  {c.kind:<22} {c.family or c.section:<38} {c.detail[:70]}  [{len(c.sites)} sites]")
    print(f"external data files opened while diffing: {len(opened)} (target 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
