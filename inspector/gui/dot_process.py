"""The app's layouts run in a helper process, so that the GUI thread never waits for Graphviz.

Why: Graphviz's library holds the GIL for the whole of a layout (``inspector.render.dot``): laying out a 300-box
window of a 100k-node main graph took 1.6 s, during which the window did not repaint or answer. A worker thread
waiting for another process's answer holds no GIL. The job carries generated names and sizes only (never model
text), and the helper (``python -m inspector.render.dot``) runs the same ``run_dot`` the command line runs
in-process, so the layouts are the same. A plain child process with one JSON line per job, not multiprocessing:
its ``spawn`` re-runs the main module in the child (the user's own script, for ``inspector.show``), and a fork
of a process with Qt threads running is unsafe. Threats: the helper dies (a Graphviz crash): a layout it was
making fails with one line, and the next layout starts a new helper.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import threading
from typing import IO

from inspector.render.dot import DotJob, DotResult

_lock = threading.Lock()  # one job at a time (Graphviz lays out one graph at a time anyway)
_helper: list[subprocess.Popen[bytes]] = []
HELPER = [sys.executable, "-m", "inspector.render.dot"]


def _running() -> subprocess.Popen[bytes]:
    if _helper and _helper[0].poll() is None:
        return _helper[0]
    _stop()  # a helper that died: its pipes are closed
    proc = subprocess.Popen(HELPER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    _helper.append(proc)
    return proc


def run_dot_elsewhere(job: DotJob, edge_font_size: float) -> DotResult:
    """``run_dot`` in the helper process (started on first use); called from a worker thread, which waits."""
    line = json.dumps([job.rankdir, job.ranksep, job.nodes, job.edges, edge_font_size, job.clusters]) + "\n"
    with _lock:
        try:
            proc = _running()
            stdin, stdout = _pipes(proc)
            stdin.write(line.encode())
            stdin.flush()
            reply = stdout.readline()
        except OSError:
            reply = b""
        if not reply:
            _stop()
            raise RuntimeError("the layout process stopped (Graphviz crashed?); try again")
    answer = json.loads(reply)
    if "error" in answer:
        raise RuntimeError(f"dot: {answer['error']}")
    return DotResult(answer["bb"], answer["nodes"], tuple((pos, lp) for pos, lp in answer["edges"]),
                     answer["clusters"])


def _pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdin is not None and proc.stdout is not None
    return proc.stdin, proc.stdout


def start() -> None:
    """Start the helper now, so that it is ready (its imports done) by the first layout."""
    with _lock:
        _running()


def helper_pid() -> int | None:
    """The helper's process id while it runs."""
    return _helper[0].pid if _helper and _helper[0].poll() is None else None


def _stop() -> None:
    for proc in _helper:
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # the helper ends with its input
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    _helper.clear()


def shut_down() -> None:
    """Stop the helper process (the app is quitting)."""
    with _lock:
        _stop()


atexit.register(shut_down)  # a helper left running ends with its input anyway; this waits for it
