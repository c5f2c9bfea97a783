"""Whole-process rows of the benchmark: start-up on a small model, and a folder diff of the zoo.

Start-up: ``onnx-inspector summary``, ``check`` and ``diff`` on a 15-node export (``tests/zoo/pair_eps_a.onnx``, and
``pair_eps_b.onnx`` for the diff), each a whole process timed from the parent (interpreter start, imports, the
command, exit), side by side with ``python -c "import onnx"``, interleaved run by run (a slow spell of the machine
reaches every row alike), the median of ``--startup-runs`` runs (default 15). Python reads bytecode as an installed
package does: the runs go without ``PYTHONDONTWRITEBYTECODE`` and keep their bytecode in
``benchmarks/_generated/pycache`` (``PYTHONPYCACHEPREFIX``; one warm-up run each first), since compiling the sources
every run (60-80 ms) is not what a user's installed command pays. Target (issue 34): each command at most half of
``import onnx``.

Folder diff: every zoo export (``tests/zoo/*.onnx``, in ``a/``) against the zoo copied to another folder (``b/``,
the same relative paths), ``onnx-inspector diff a b --jobs 2``; its wall time as a ratio to the sum of the
same pairs diffed one by one in one process (``diff_files``, start-up not counted), and the overhead per pair:
(wall time - the sum / 2 workers) / pairs, what the folder run costs beyond its pairs' own work shared by two
workers (the command's start-up, the pool's workers, handing each pair over and its row back).

With ``--instructions``, each start-up command's whole process is also run once under callgrind and its instruction
count printed beside ``import onnx``'s: a figure that does not move with the machine's load.

    python benchmarks/bench_startup.py [--startup-runs 15] [--folder-runs 3] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ZOO = ROOT / "tests" / "zoo"
SMALL_A = ZOO / "pair_eps_a.onnx"
SMALL_B = ZOO / "pair_eps_b.onnx"
STARTUP_TARGET = 0.5  # × python -c "import onnx"
FOLDER_JOBS = 2


def installed_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONPYCACHEPREFIX"] = str(HERE / "_generated" / "pycache")
    return env


def _command() -> list[str]:
    """The console script beside this interpreter, as a user runs it; ``python -m inspector.cli`` without one."""
    script = Path(sys.executable).with_name("onnx-inspector")
    return [str(script)] if script.exists() else [sys.executable, "-m", "inspector.cli"]


def startup_commands() -> dict[str, list[str]]:
    cli = _command()
    return {"python -c 'import onnx'": [sys.executable, "-c", "import onnx"],
            "summary": [*cli, "summary", str(SMALL_A)],
            "check": [*cli, "check", str(SMALL_A)],
            "diff": [*cli, "diff", str(SMALL_A), str(SMALL_B)]}


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process; CPU is its user + system time (``wait4``), which other work on a
    busy machine changes less than the wall time."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode not in (0, 1):  # check and diff exit 1 for open items and differences
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}: {err.decode()[-300:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def _wall(argv: list[str], env: dict[str, str]) -> float:
    return _run(argv, env)[0]


def measure_startup(runs: int) -> dict[str, dict[str, float]]:
    """Per command: the median, least and most wall time of ``runs`` interleaved runs, in seconds."""
    env = installed_env()
    commands = startup_commands()
    for argv in commands.values():  # warm-up: bytecode written, files in the page cache
        _wall(argv, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(_run(argv, env))
    return {name: {"median": statistics.median(w for w, _c in ts), "min": min(w for w, _c in ts),
                   "max": max(w for w, _c in ts), "cpu": statistics.median(c for _w, c in ts), "runs": len(ts)}
            for name, ts in times.items()}


def startup_table(res: dict[str, dict[str, float]]) -> str:
    base_name = next(iter(res))
    base, base_cpu = res[base_name]["median"], res[base_name]["cpu"]
    rows = [["start-up, whole process (small model: 15 nodes)", "wall, median", "least-most", "× import onnx",
             "CPU, median", "× import onnx", "verdict (wall)"], ["---"] * 7]
    for name, r in res.items():
        ratio = r["median"] / base
        verdict = "" if name == base_name else f"≤{STARTUP_TARGET:g}× {'PASS' if ratio <= STARTUP_TARGET else 'MISS'}"
        rows.append([name if name == base_name else f"onnx-inspector {name}", f"{r['median'] * 1000:.0f} ms",
                     f"{r['min'] * 1000:.0f}-{r['max'] * 1000:.0f} ms", f"{ratio:.2f}", f"{r['cpu'] * 1000:.0f} ms",
                     f"{r['cpu'] / base_cpu:.2f}", verdict])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows) + \
        f"\n(median of {res[base_name]['runs']:.0f} interleaved runs each)"


def measure_instructions() -> dict[str, int] | None:
    """Per command: the instructions its whole process executes, counted by callgrind (``valgrind --tool=callgrind``)
    with a fixed hash seed, after the warm-up runs: the same figure however busy the machine is (wall and CPU time on
    a shared machine move by a third), so a change is measured by it run by run. None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    env = {**installed_env(), "PYTHONHASHSEED": "0"}
    counts: dict[str, int] = {}
    for name, argv in startup_commands().items():
        _wall(argv, env)
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        collected = [line.split()[-1] for line in proc.stderr.splitlines() if "Collected :" in line]
        if proc.returncode not in (0, 1) or not collected:
            raise RuntimeError(f"callgrind {' '.join(argv)}: exit {proc.returncode}: {proc.stderr[-300:]}")
        counts[name] = int(collected[-1])
    return counts


def instructions_table(counts: dict[str, int] | None) -> str:
    if counts is None:
        return "(instructions: valgrind not found)"
    base_name = next(iter(counts))
    rows = [["start-up, instructions (callgrind, PYTHONHASHSEED=0)", "million", "× import onnx"], ["---"] * 3]
    for name, count in counts.items():
        rows.append([name if name == base_name else f"onnx-inspector {name}", f"{count / 1e6:.0f}",
                     f"{count / counts[base_name]:.2f}"])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def _zoo_pair_folders(tmp: Path) -> tuple[Path, Path, list[str]]:
    """``a/`` with every zoo export and ``b/`` with a copy of each under the same relative path: every pair is equal
    in content but read from other files (no page sharing between the two sides)."""
    a, b = tmp / "a", tmp / "b"
    names = sorted(p.name for p in ZOO.glob("*.onnx"))
    for folder in (a, b):
        folder.mkdir()
        for name in names:
            shutil.copyfile(ZOO / name, folder / name)
    return a, b, names


_PAIRS_IN_PROCESS = r"""
import json, sys, time
from inspector.core.diff import diff_files
a, b, names = sys.argv[1], sys.argv[2], sys.argv[3:]
for n in names:  # warm: imports and lazily built catalogues are start-up, counted in the folder run's overhead
    diff_files(f"{a}/{n}", f"{b}/{n}")
    break
t = time.perf_counter()
for n in names:
    diff_files(f"{a}/{n}", f"{b}/{n}")
print(json.dumps({"sum": time.perf_counter() - t}))
"""


def measure_folders(runs: int) -> dict[str, Any]:
    """The folder diff's wall time (least of ``runs``), the sum of its pairs diffed one by one (least of ``runs``),
    their ratio and the overhead per pair."""
    import json

    env = installed_env()
    with tempfile.TemporaryDirectory() as tmp_name:
        a, b, names = _zoo_pair_folders(Path(tmp_name))
        folder_argv = [*_command(), "diff", str(a), str(b), "--jobs", str(FOLDER_JOBS), "--format", "json"]
        _wall(folder_argv, env)  # warm-up
        walls, sums = [], []
        for _ in range(runs):
            walls.append(_wall(folder_argv, env))
            res = subprocess.run([sys.executable, "-c", _PAIRS_IN_PROCESS, str(a), str(b), *names], env=env,
                                 capture_output=True, text=True, check=True)
            sums.append(json.loads(res.stdout.strip().splitlines()[-1])["sum"])
    wall, total = min(walls), min(sums)
    return {"pairs": len(names), "wall": wall, "sum": total, "ratio": wall / total,
            "overhead_per_pair": (wall - total / FOLDER_JOBS) / len(names)}


def folder_table(r: dict[str, Any]) -> str:
    return (f"| folder diff (zoo against itself, {r['pairs']} pairs, --jobs {FOLDER_JOBS}) | wall {r['wall']:.2f} s | "
            f"sum of the pairs one by one {r['sum']:.2f} s | ratio {r['ratio']:.2f} | "
            f"overhead per pair {r['overhead_per_pair'] * 1000:.1f} ms ((wall - sum / {FOLDER_JOBS} workers) / pairs: "
            "the process's start-up, the pool, handing pairs over) |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--startup-runs", type=int, default=15)
    ap.add_argument("--folder-runs", type=int, default=3)
    ap.add_argument("--instructions", action="store_true",
                    help="also count each start-up command's instructions under callgrind (about 10 s each)")
    args = ap.parse_args(argv)
    if args.startup_runs > 0:
        print(startup_table(measure_startup(args.startup_runs)), flush=True)
    if args.instructions:
        print(instructions_table(measure_instructions()), flush=True)
    if args.folder_runs > 0:
        print(folder_table(measure_folders(args.folder_runs)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
