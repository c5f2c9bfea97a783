"""Every command and output option against every file an output may never replace (``core/util/paths.py``): an
input model, its external data, its review sidecar, the sidecar's lock, backup and temporary files, named directly,
through a symbolic link and through a hard link; and the sidecar rules (one sidecar for a linked model whichever
command reads it, a linked sidecar never read).

A refusal is exit code 2 with one line, and every protected file is byte for byte what it was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from inspector.cli import main
from inspector.core.review.store import ReviewStore
from inspector.core.util.errors import InspectorError
from inspector.core.util.paths import sidecar_path
from tests.conftest import FIXTURES

ZOO = Path(__file__).parent / "zoo"
SIDE = json.dumps({"format": "onnx-inspector/review", "version": 1, "reviews": {}})
TARGETS = ["a.onnx", "weights.bin", "a.onnx.review.json", "a.onnx.review.json.bak", "a.onnx.review.json.lock",
           ".a.onnx.review.json.k3j4h5g6.tmp", "b.onnx", "b.onnx.review.json"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Model ``a.onnx`` with external data ``weights.bin``, its sidecar family, and ``b.onnx``; a folder pair."""
    shutil.copyfile(FIXTURES / "external" / "model.onnx", tmp_path / "a.onnx")
    shutil.copyfile(FIXTURES / "external" / "weights.bin", tmp_path / "weights.bin")
    shutil.copyfile(ZOO / "pair_eps_b.onnx", tmp_path / "b.onnx")
    for name in TARGETS[2:6]:
        (tmp_path / name).write_text(SIDE if name.endswith(".json") else "kept", "utf-8")
    (tmp_path / "b.onnx.review.json").write_text(SIDE, "utf-8")
    for side in ("A", "B"):
        (tmp_path / side).mkdir()
        shutil.copyfile(ZOO / f"pair_eps_{side.lower()}.onnx", tmp_path / side / "eps.onnx")
        (tmp_path / side / "eps.onnx.review.json").write_text(SIDE, "utf-8")
    return tmp_path


def _commands(d: Path, out: str) -> dict[str, list[str]]:
    a, b = str(d / "a.onnx"), str(d / "b.onnx")
    return {
        "diff": ["diff", a, b, "-o", out, "--format", "json"],
        "diff md": ["diff", a, b, "-o", out, "--format", "md"],
        "report html": ["report", a, "--compare", b, "-o", out, "--format", "html"],
        "report json": ["report", a, "-o", out, "--format", "json"],
        "report md": ["report", a, "--compare", b, "-o", out, "--format", "md"],
        "fold": ["fold", a, "-o", out],
    }


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
            and not p.is_symlink()}


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("onnx-inspector: error: ") and "internal error" not in err
    return err


@pytest.mark.parametrize("via", ["name", "symlink", "hardlink"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("command", ["diff", "diff md", "report html", "report json", "report md", "fold"])
def test_no_output_replaces_an_input_or_its_files(folder: Path, capsys, command: str, target: str, via: str):
    if command in ("fold", "report json") and target.startswith("b."):
        pytest.skip("b.onnx is not an input of this command")
    if via != "name" and not (folder / target).exists():
        pytest.skip("nothing to link to")
    if via == "hardlink" and target.endswith(".tmp"):
        pytest.skip("a temporary file is known by its name; another name for its inode is no temporary file")
    out = folder / target
    if via == "symlink":
        out = folder / "link.out"
        out.symlink_to(folder / target)
    elif via == "hardlink":
        out = folder / "hard.out"
        os.link(folder / target, out)
    before = _snapshot(folder)
    err = _refused(_commands(folder, str(out))[command], capsys)
    assert "refusing to overwrite" in err
    assert _snapshot(folder) == before


@pytest.mark.parametrize("target", ["A/eps.onnx", "B/eps.onnx", "A/eps.onnx.review.json",
                                    "B/eps.onnx.review.json.bak", "A/eps.onnx.review.json.lock"])
@pytest.mark.parametrize("fmt", ["json", "md", "text"])
def test_a_folder_diff_never_writes_over_a_model_it_pairs(folder: Path, capsys, target: str, fmt: str):
    before = _snapshot(folder)
    err = _refused(["diff", str(folder / "A"), str(folder / "B"), "-o", str(folder / target), "--format", fmt],
                   capsys)
    assert "refusing to overwrite" in err
    assert _snapshot(folder) == before


def test_a_folder_diff_may_write_a_report_inside_a_folder(folder: Path, capsys):
    out = folder / "A" / "diff.md"
    assert main(["diff", str(folder / "A"), str(folder / "B"), "-o", str(out)]) == 1
    assert "sub" not in out.read_text() and "eps.onnx" in out.read_text()


def test_a_linked_model_has_one_sidecar_beside_the_link_for_every_reader(folder: Path, tmp_path: Path, capsys):
    """The sidecar rule: beside the path as named. ``check`` and ``report`` (and the app, through the same
    ``ReviewStore``) read the one file beside the link, inside the folder that was opened."""
    opened = tmp_path / "opened"
    opened.mkdir()
    link = opened / "model.onnx"
    link.symlink_to(folder / "b.onnx")
    assert sidecar_path(link) == opened / "model.onnx.review.json"
    assert ReviewStore(link).path == sidecar_path(link)
    assert main(["check", str(link), "--format", "json"]) == 1
    unreviewed = json.loads(capsys.readouterr().out)
    assert unreviewed["reviews"] == str(opened / "model.onnx.review.json")
    from inspector.api import open as open_model

    m = open_model(link)
    assert m.path == link  # not resolved: the reviews are not written into the link's target folder


def test_a_sidecar_that_is_a_symlink_is_never_read(folder: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    private = outside / "private.json"
    private.write_text(json.dumps({"format": "onnx-inspector/review", "version": 1, "reviews": {
        '["overload","aten::x","t","f",""]': {"status": "ok", "note": "secret"}}}), "utf-8")
    model = folder / "b.onnx"
    sidecar_path(model).unlink()
    sidecar_path(model).symlink_to(private)
    with pytest.raises(InspectorError, match="symbolic link, not followed"):
        ReviewStore(model).load()


def test_a_review_key_nested_deeply_is_damage_not_a_crash(folder: Path):
    deep = "[" * 100_000 + "]" * 100_000
    sidecar_path(folder / "b.onnx").write_text(json.dumps({"format": "onnx-inspector/review", "version": 1,
                                                           "reviews": {deep: {"status": "ok"}}}), "utf-8")
    store = ReviewStore(folder / "b.onnx")
    store.load()  # the entry is kept on save but applies to nothing
    assert list(store.items()) == []


def test_a_fifo_named_like_a_model_never_blocks(tmp_path: Path, capsys):
    fifo = tmp_path / "m.onnx"
    os.mkfifo(fifo)
    err = _refused(["summary", str(fifo)], capsys)
    assert err == f"onnx-inspector: error: {fifo}: not a regular file\n"


def test_a_sparse_2_gib_file_is_refused_unread(tmp_path: Path, capsys):
    sparse = tmp_path / "sparse.onnx"
    with open(sparse, "wb") as fh:
        fh.truncate((1 << 31) - 2)
    err = _refused(["summary", str(sparse)], capsys)
    assert err == (f"onnx-inspector: error: {sparse}: not an ONNX file (byte 0 is 0x00: neither a protobuf field "
                   "nor text syntax)\n")


@pytest.mark.parametrize("target", ["a.onnx", "weights.bin", "a.onnx.review.json", "b.onnx.review.json.bak"])
def test_the_python_api_saves_through_the_same_guard(folder: Path, target: str):
    import inspector

    a, b = folder / "a.onnx", folder / "b.onnx"
    before = _snapshot(folder)
    for result in (inspector.diff(a, b), inspector.report(a, "md", compare=b),
                   inspector.diff(folder / "A", folder / "B")):
        protected = folder / target if not isinstance(result, inspector.FolderDiff) else folder / "A" / "eps.onnx"
        with pytest.raises(InspectorError, match="refusing to overwrite"):
            result.save(protected)
    assert _snapshot(folder) == before


def test_folder_diff_rows_say_why_a_link_is_not_used(tmp_path: Path):
    from inspector.core.diff.folders import diff_dirs

    a, b = tmp_path / "a", tmp_path / "b"
    for side in (a, b):
        side.mkdir()
    (a / "loop.onnx").symlink_to(a / "loop2.onnx")
    (a / "loop2.onnx").symlink_to(a / "loop.onnx")
    (a / "gone.onnx").symlink_to(a / "nothing.onnx")
    (a / "out.onnx").symlink_to(ZOO / "pair_eps_a.onnx")
    rows = {r.path: r.error for r in diff_dirs(a, b, jobs=1).rows}
    assert rows == {"loop.onnx": "A: a symbolic link loop", "loop2.onnx": "A: a symbolic link loop",
                    "gone.onnx": "A: a link to nothing (dangling)",
                    "out.onnx": "A: a link to a file outside the folder (not followed)"}
