"""``onnx-inspector diff DIR_A DIR_B``: exports paired by relative path, one table, parallel pairs.

The folders are built from zoo exports: what differs between ``pair_eps_a`` and ``pair_eps_b`` is known from their
truth files (made by torch), the rest are byte copies, renamed copies, a fold, damaged and linked files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import onnx
import pytest

from inspector.cli import main
from inspector.core.diff import folders as dir_diff
from inspector.core.diff.folders import DirDiff, diff_dirs, diff_pair
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from inspector.report.dir_diff import render_dir_diff
from tests.builders import renamed_copy
from tests.gfm import shown, tags

ZOO = Path(__file__).resolve().parent / "zoo"
HOSTILE = "<img src=x onerror=alert(1)> [a](javascript:alert) @someone.onnx"


def _put(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("dirs")
    a, b = root / "a", root / "b"
    _put(ZOO / "gpt2.onnx", a / "gpt2.onnx")  # equal: the same bytes
    _put(ZOO / "gpt2.onnx", b / "gpt2.onnx")
    _put(ZOO / "pair_eps_a.onnx", a / "sub" / "eps.onnx")  # different: eps 1e-5 vs 1e-6
    _put(ZOO / "pair_eps_b.onnx", b / "sub" / "eps.onnx")
    _put(ZOO / "convnet.onnx", a / "convnet.onnx")  # only in A
    _put(ZOO / "cond.onnx", b / "deep" / "er" / "cond.onnx")  # only in B
    _put(ZOO / "bert.onnx", a / "bert.onnx")  # equal: every name changed, nothing else
    (b / "bert.onnx").write_bytes(renamed_copy(onnx.load(str(ZOO / "bert.onnx"))).SerializeToString())
    folded, _report = fold_model(open_index(ZOO / "mixer.onnx"))  # equivalent: B is A folded
    _put(ZOO / "mixer.onnx", a / "mixer.onnx")
    (b / "mixer.onnx").write_bytes(folded.SerializeToString())
    _put(ZOO / "vit.onnx", a / "broken.onnx")  # error: B's copy is cut short
    (b / "broken.onnx").write_bytes((ZOO / "vit.onnx").read_bytes()[:5000])
    (a / "notes.txt").write_text("not a model")  # ignored: not a model file
    (b / "notes.txt").write_text("not a model either")
    # links: inside the folder it is used; out of the folder it is never followed
    outside = root / "outside"
    _put(ZOO / "pair_transpose_a.onnx", outside / "t.onnx")
    _put(ZOO / "pair_transpose_a.onnx", b / "t.onnx")
    (a / "t.onnx").symlink_to(outside / "t.onnx")  # error: a link out of A
    (a / "linked.onnx").symlink_to(a / "convnet.onnx")  # a link inside A
    _put(ZOO / "convnet.onnx", b / "linked.onnx")  # equal
    (a / "outdir").symlink_to(outside, target_is_directory=True)  # never entered: outdir/t.onnx is not listed
    _put(ZOO / "tiny_noopt.onnx", a / HOSTILE)  # only in A, with a name full of markup
    os.mkfifo(b / "fifo.onnx")  # error: never opened (reading it would block)
    return a, b


EXPECTED = {
    "bert.onnx": "equal", "broken.onnx": "error", "convnet.onnx": "only_a", "deep/er/cond.onnx": "only_b",
    "gpt2.onnx": "equal", "linked.onnx": "equal", "mixer.onnx": "equivalent", "sub/eps.onnx": "different",
    "t.onnx": "error", HOSTILE: "only_a", "fifo.onnx": "error",
}


@pytest.fixture(scope="module")
def result(folders) -> DirDiff:
    return diff_dirs(*folders, jobs=2)


def test_pairs_by_relative_path_with_one_status_each(result):
    assert {r.path: r.status for r in result.rows} == EXPECTED
    assert [r.path for r in result.rows] == sorted(EXPECTED)
    assert not result.equal
    assert result.counts() == {"equal": 3, "equivalent": 1, "different": 1, "only_a": 2, "only_b": 1, "error": 3}


def test_the_changed_pair_names_what_torch_changed(result):
    truth_a = json.loads((ZOO / "pair_eps_a.truth.json").read_text())
    assert truth_a["pair"]["hyperparameter"] == "eps"
    (row,) = [r for r in result.rows if r.path == "sub/eps.onnx"]
    # eps is an argument of every aten::layer_norm call and of nothing else torch called
    assert truth_a["fx_target_counts"]["aten::layer_norm"] == 3
    assert row.families == ("aten::layer_norm",) and row.kinds == {"value_changed": row.changes}


def test_errors_are_rows_of_one_line(result):
    rows = {r.path: r for r in result.rows}
    assert rows["broken.onnx"].error.startswith(str(Path(result.b) / "broken.onnx"))
    assert rows["t.onnx"].error == "A: a link to a file outside the folder (not followed)"
    assert rows["fifo.onnx"].error == "B: not a regular file"
    assert all("\n" not in r.error for r in result.rows)


def test_parallel_and_serial_runs_agree(folders, result, monkeypatch):
    pools: list[int] = []
    real = dir_diff.ProcessPoolExecutor

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, max_workers: int) -> None:
            pools.append(max_workers)
            super().__init__(max_workers=max_workers)

    monkeypatch.setattr(dir_diff, "ProcessPoolExecutor", Counting)
    assert diff_dirs(*folders, jobs=2).rows == result.rows
    assert pools == [2]  # several pairs: run in two worker processes
    assert diff_dirs(*folders, jobs=1).rows == result.rows
    assert pools == [2, 1]  # one job: one worker process, so that a pair that crashes it is only that pair's row


def _die_on(rel: str, path_a: str, path_b: str):
    if rel == "gpt2.onnx":
        os._exit(3)  # the worker dies (as if killed for memory)
    return diff_pair(rel, path_a, path_b)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_worker_that_dies_is_a_row_not_a_crash(folders, result, monkeypatch, jobs: int):
    """The pool breaks for every pair not finished when a worker dies; each of those is run again alone, so only the
    pair that kills its process is an error, and every other pair gets the row it gets in a calm run."""
    monkeypatch.setattr(dir_diff, "diff_pair", _die_on)
    d = diff_dirs(*folders, jobs=jobs)
    rows = {r.path: r for r in d.rows}
    assert set(rows) == set(EXPECTED)
    assert rows["gpt2.onnx"].status == "error"
    assert rows["gpt2.onnx"].error == "the diff process crashed on this pair (killed by a signal or out of memory)"
    assert [r for r in d.rows if r.path != "gpt2.onnx"] == [r for r in result.rows if r.path != "gpt2.onnx"]


def test_the_command_prints_one_table_and_exits_1(folders, capsys):
    a, b = folders
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    for path, status in EXPECTED.items():
        title = {"only_a": "only in A", "only_b": "only in B"}.get(status, status)
        assert any(line.startswith(title) and f" {path}" in line for line in lines), path
    assert lines[-1] == "different: 11 paths (3 equal, 1 equivalent, 1 different, 2 only in A, 1 only in B, 3 error)"


def test_the_command_writes_a_file_with_o(folders, tmp_path, capsys):
    out = tmp_path / "report" / "dirs.html"
    assert main(["diff", *map(str, folders), "-o", str(out)]) == 1
    assert capsys.readouterr().out == f"different: 11 paths (3 equal, 1 equivalent, 1 different, 2 only in A, " \
                                      f"1 only in B, 3 error); wrote {out}\n"
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_markdown_and_html_keep_file_names_inert(result):
    md = render_dir_diff(result, "md")
    html = render_dir_diff(result, "html")
    assert "<img" not in md and "@someone" not in md
    assert "[a](javascript:alert)" in shown(md) and not tags(md) & {"a", "img"}  # the name shown, no link
    assert "<img" not in html and "&lt;img src&#61;x" in html
    assert html.count("<tr>") == len(EXPECTED) + 1 and "default-src 'none'" in html
    assert md.count("\n| ") == len(EXPECTED) + 2  # header and rule rows, then one row per path
    data = json.loads(render_dir_diff(result, "json"))
    assert data["format"] == "onnx-inspector/dir-diff" and data["equal"] is False
    assert {r["path"]: r["status"] for r in data["rows"]} == EXPECTED


def test_equal_folders_exit_0(tmp_path, capsys):
    for side in ("a", "b"):
        _put(ZOO / "pair_eps_a.onnx", tmp_path / side / "x" / "eps.onnx")
        _put(ZOO / "convnet.onnx", tmp_path / side / "convnet.onnx")
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "md"]) == 0
    assert "equal: 2 paths (2 equal)" in capsys.readouterr().out


@pytest.mark.parametrize("case", ["folder_and_file", "file_and_folder", "missing_folder", "bad_jobs"])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, case):
    (tmp_path / "d").mkdir()
    model = str(ZOO / "convnet.onnx")
    argv = {"folder_and_file": [str(tmp_path / "d"), model], "file_and_folder": [model, str(tmp_path / "d")],
            "missing_folder": [str(tmp_path / "d"), str(tmp_path / "nope")],
            "bad_jobs": [str(tmp_path / "d"), str(tmp_path / "d"), "--jobs", "0"]}[case]
    assert main(["diff", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.startswith("onnx-inspector: error:")
