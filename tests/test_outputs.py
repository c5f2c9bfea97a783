"""Output paths of diff, report and fold: never an input model or its reviews, never a non-regular file, one-line
errors for folders and unwritable places, the user's umask; damaged sidecars give a report without reviews."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from inspector.cli import main
from tests.conftest import FIXTURES

ZOO = Path(__file__).parent / "zoo"


@pytest.fixture
def models(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    shutil.copyfile(ZOO / "pair_eps_a.onnx", a)
    shutil.copyfile(ZOO / "pair_eps_b.onnx", b)
    (tmp_path / "a.onnx.review.json").write_text(
        json.dumps({"format": "onnx-inspector/review", "version": 1, "reviews": {}}), "utf-8")
    return a, b


def _commands(a: Path, b: Path, out: str) -> list[list[str]]:
    return [["diff", str(a), str(b), "--format", "md", "-o", out],
            ["report", str(a), "--compare", str(b), "--format", "md", "-o", out],
            ["fold", str(a), "-o", out]]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("onnx-inspector: error: ") and "internal error" not in err
    return err


@pytest.mark.parametrize("which", ["a.onnx", "b.onnx", "a.onnx.review.json", "b.onnx.review.json"])
@pytest.mark.parametrize("command", [0, 1, 2])
def test_inputs_and_their_reviews_are_never_overwritten(models, capsys, which, command):
    a, b = models
    target = a.parent / which
    before = target.read_bytes() if target.exists() else None
    if command == 2 and which.startswith("b"):
        pytest.skip("fold has one input")
    assert main(_commands(a, b, str(target))[command]) == 2
    assert "refusing to overwrite" in _one_line_error(capsys)
    assert (target.read_bytes() if target.exists() else None) == before


def test_a_hard_link_to_an_input_is_refused(models, capsys):
    a, b = models
    os.link(a, a.parent / "alias.md")
    assert main(["diff", str(a), str(b), "--format", "md", "-o", str(a.parent / "alias.md")]) == 2
    assert "refusing to overwrite" in _one_line_error(capsys)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symlinks")
@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder", "device"])
@pytest.mark.parametrize("command", [0, 1, 2])
def test_non_regular_outputs_are_refused_and_left_alone(models, capsys, kind, command):
    a, b = models
    target = a.parent / "out.md"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        target.symlink_to(a.parent / "elsewhere.md")
    elif kind == "folder":
        target.mkdir()
    else:  # a device node of our own (never /dev/null: a regression would replace the real one)
        try:
            os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except (PermissionError, AttributeError):
            pytest.skip("creating a device node needs root")
    before = os.lstat(target)
    assert main(_commands(a, b, str(target))[command]) == 2
    assert "refusing to write" in _one_line_error(capsys)
    after = os.lstat(target)
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
    assert not (a.parent / "elsewhere.md").exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_unwritable_folder_is_a_one_line_error(models, capsys, monkeypatch):
    a, b = models
    ro = a.parent / "ro"
    ro.mkdir()
    # root ignores folder permissions; make the temporary file fail as a read-only folder would
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    for command in _commands(a, b, str(ro / "x.md")):
        assert main(command) == 2
        assert "Permission denied" in _one_line_error(capsys)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("command", [0, 1, 2])
def test_outputs_get_the_users_umask(models, capsys, command):
    a, b = models
    out = a.parent / "out.txt"
    old = os.umask(0o027)
    try:
        assert main(_commands(a, b, str(out))[command]) in (0, 1)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_temporary_files_of_a_killed_write_are_cleaned(models, capsys):
    a, b = models
    out = a.parent / "out.md"
    stale = a.parent / ".out.md.x1y2z3w4.tmp"
    fresh = a.parent / ".out.md.q1w2e3r4.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (0, 0))
    assert main(["diff", str(a), str(b), "--format", "md", "-o", str(out)]) == 1
    assert not stale.exists() and fresh.exists()  # a write younger than a minute may still be running


@pytest.mark.parametrize("content", [
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {}, "n": ' + b"9" * 5001 + b"}",
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {"k": {"status": "ok", "note": "\\ud800"}}}',
    b'{"format": "onnx-inspector/review", "version": 1.0, "reviews": {}}',
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {"k": {"status": NaN}}}',
])
@pytest.mark.parametrize("fmt", ["json", "md", "html"])
def test_damaged_sidecar_gives_a_warning_and_a_report_without_reviews(tmp_path, capsys, content, fmt):
    model = tmp_path / "m.onnx"
    shutil.copyfile(FIXTURES / "overloads.onnx", model)
    (tmp_path / "m.onnx.review.json").write_bytes(content)
    out = tmp_path / f"r.{fmt}"
    assert main(["report", str(model), "--format", fmt, "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "the report has no reviews" in err and "internal error" not in err
    text = out.read_text("utf-8")
    if fmt == "json":
        assert json.loads(text)["reviews"]["available"] is False


def test_json_diff_is_written_in_pieces_not_held_whole(tmp_path: Path):
    import onnx
    from onnx import TensorProto, helper

    from inspector.core.diff import diff_dict, diff_files
    from inspector.report.diff_render import diff_chunks as render_chunks

    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"n{i}") for i in range(5000)]
    big = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("v5000", TensorProto.FLOAT, [4])]), opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(big, str(tmp_path / "big.onnx"))
    d = diff_files(tmp_path / "big.onnx", ZOO / "pair_eps_a.onnx")
    sizes = [len(chunk) for chunk in render_chunks(d, "json")]
    assert sum(sizes) > 1_000_000 and max(sizes) < 1 << 17  # the whole text is never held as one string
    assert "".join(render_chunks(d, "json")) == json.dumps(diff_dict(d), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_sidecar_gives_a_warning_not_a_hang(tmp_path: Path, capsys):
    model = tmp_path / "m.onnx"
    shutil.copyfile(FIXTURES / "overloads.onnx", model)
    os.mkfifo(tmp_path / "m.onnx.review.json")
    assert main(["report", str(model), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err
    assert "not a regular file" in err and "the report has no reviews" in err
