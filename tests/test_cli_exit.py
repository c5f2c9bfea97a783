"""The console script ends the process right after a subcommand's output (``inspector.cli.entry``): the output must
be whole (flushed before ``os._exit``) and the exit code kept; in-process runs keep nothing alive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import inspector.commands as commands
from inspector.cli import main
from inspector.core.diff import diff_files
from inspector.core.diff.units import Side
from inspector.core.model.index import ModelIndex
from tests.conftest import ROOT

ZOO = ROOT / "tests" / "zoo"


# buffered output, as a user's shell gives it (this suite may run with PYTHONUNBUFFERED set)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | {"QT_QPA_PLATFORM": "offscreen"}


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, timeout=120, cwd=ROOT,
                          env=ENV)


def test_summary_json_through_a_pipe_is_whole_and_equal_to_in_process(capsysbinary):
    # many times Python's 8 KiB buffer: the last part of it is still there when the command returns
    proc = run("summary", "--json", str(ZOO / "gpt2.onnx"))
    assert proc.returncode == 0 and proc.stderr == b""
    assert len(proc.stdout) > 6 * 8192 and len(proc.stdout) % 8192
    assert main(["summary", "--json", str(ZOO / "gpt2.onnx")]) == 0
    assert proc.stdout == capsysbinary.readouterr().out
    assert json.loads(proc.stdout)["model"]["node_count"] > 0


def test_exit_codes_and_written_files_survive_the_fast_exit(tmp_path: Path):
    a, b = ZOO / "pair_eps_a.onnx", ZOO / "pair_eps_b.onnx"
    proc = run("diff", str(a), str(b), "--format", "json", "-o", str(tmp_path / "d.json"))
    assert proc.returncode == 1  # they differ
    assert proc.stdout.decode().endswith(f"; wrote {tmp_path / 'd.json'}\n")
    written = json.loads((tmp_path / "d.json").read_text())
    assert written["equal"] is False and written["changes"]
    same = run("diff", str(a), str(a))
    assert same.returncode == 0
    folded = run("fold", str(a), "-o", str(tmp_path / "f.onnx"))
    assert folded.returncode == 0 and (tmp_path / "f.onnx").stat().st_size > 0
    assert folded.stdout.decode().splitlines()[-1] == f"wrote {tmp_path / 'f.onnx'}"
    report = run("report", str(a), "--format", "md", "-o", str(tmp_path / "r.md"))
    assert report.returncode == 0 and (tmp_path / "r.md").read_text().startswith("#")
    bad = run("summary", str(tmp_path / "missing.onnx"))
    assert bad.returncode == 2 and bad.stdout == b""
    assert bad.stderr.decode().count("\n") == 1


def test_a_reader_that_goes_away_is_no_error():
    proc = subprocess.run(f"{sys.executable} -m inspector summary --json {ZOO / 'gpt2.onnx'} | head -c 10",
                          shell=True, capture_output=True, timeout=120, cwd=ROOT, env=ENV)
    assert proc.stdout == b'{\n  "forma'
    assert b"Traceback" not in proc.stderr and b"Exception" not in proc.stderr


def test_in_process_commands_keep_nothing(capsys):
    assert commands.kept() is None
    assert main(["summary", str(ZOO / "gpt2.onnx")]) == 0
    commands.keep(object())
    assert commands.kept() is None


def test_a_diff_hands_its_indexes_and_sides_to_keep_unreleased():
    kept: list[object] = []
    d = diff_files(ZOO / "pair_eps_a.onnx", ZOO / "pair_eps_b.onnx", keep=kept)
    assert not d.equal
    assert [type(x) for x in kept] == [ModelIndex, ModelIndex, Side, Side]
    sides = [x for x in kept if isinstance(x, Side)]
    assert all(side.units and len(side.units) >= side.n_calls > 0 for side in sides)  # kept whole


@pytest.fixture(autouse=True)
def _nothing_kept_after():
    yield
    assert commands.kept() is None


def test_a_process_that_ends_after_its_command_runs_without_the_cyclic_collector():
    # indexing pauses the collector and restores it; left on, its first pass after that walks every object indexed
    model = str(ZOO / "gpt2.onnx")
    code = ("import gc; from inspector import commands; from inspector.core.model.index import open_index; "
            f"commands.leave_to_exit(); open_index({model!r}); print(gc.isenabled(), commands.kept() == [])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=ENV)
    assert proc.stdout.split() == ["False", "True"], proc.stderr
