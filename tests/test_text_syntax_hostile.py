"""ONNX text syntax is parsed by native code (``onnx.parser``), so hostile text is a threat to the process itself:
nesting that recursed until the stack ran out (SIGSEGV, even for a file named ``.onnx``), and parse errors that
quote the file's own bytes (escape sequences reaching the terminal). Each runs in a subprocess, so a crash is a
failed assertion, not a dead test run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inspector.core.model.loader import MAX_TEXT_NESTING, text_nesting
from tests.conftest import ROOT

HEAD = '<ir_version: 10, opset_import: ["" : 18]>\n'


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, timeout=120, cwd=ROOT)


def _nested(depth: int, opener: str = "seq(", closer: str = ")") -> str:
    return HEAD + f"g ({opener * depth}float{closer * depth} x) => (float y) {{ y = Identity(x) }}\n"


@pytest.mark.parametrize("suffix", [".onnxtxt", ".onnx"])
@pytest.mark.parametrize("command", [["summary"], ["summary", "--json"], ["check"], ["report", "--format", "md",
                                                                                      "-o", "-"]])
def test_seq_nested_20000_deep_is_one_line_error_not_a_crash(tmp_path: Path, suffix: str, command: list[str]):
    path = tmp_path / f"deep{suffix}"
    path.write_text(_nested(20_000))
    proc = _cli(*command, str(path))
    assert proc.returncode == 2, proc.stderr[-300:]
    assert proc.stderr.decode() == (f"onnx-inspector: error: {path}: invalid ONNX text syntax: brackets nested "
                                    f"more than {MAX_TEXT_NESTING} deep\n")


def test_a_folder_diff_with_a_crashing_pair_finishes_every_other_pair(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    for side in (a, b):
        side.mkdir()
        (side / "deep.onnxtxt").write_text(_nested(20_000, "(", ")"))
        (side / "ok.onnxtxt").write_text((ROOT / "tests/fixtures/text_model.onnxtxt").read_text())
    proc = _cli("diff", str(a), str(b), "--jobs", "1")
    out = proc.stdout.decode()
    assert proc.returncode == 1, proc.stderr
    table = out[out.index("status  path"):].splitlines()
    rows = {line.split()[1]: line.split()[0] for line in table[1:3]}
    assert rows == {"deep.onnxtxt": "error", "ok.onnxtxt": "equal"}
    assert f"{a}/deep.onnxtxt: invalid ONNX text syntax: brackets nested more than 1000 deep" in table[1]
    assert table[-1] == "different: 2 paths (1 equal, 1 error)"


def test_nesting_inside_strings_and_comments_is_not_counted():
    deep = "(" * (MAX_TEXT_NESTING + 5)
    assert text_nesting(f'x = "{deep}" # {deep}\n' + "(" * 3 + ")" * 3) == 3
    assert text_nesting("(" * 3 + ")" * 5 + "[" * 1_500 + "]") == 1_500


def test_a_model_at_the_bound_still_parses_as_far_as_onnx_allows(tmp_path: Path):
    """Legitimate nesting (types, a few nested bodies) is far below the bound: a real text model loads."""
    text = (ROOT / "tests/fixtures/text_model.onnxtxt").read_text()
    assert 0 <= text_nesting(text) < 50
    path = tmp_path / "m.onnxtxt"
    path.write_text(text)
    assert _cli("summary", str(path)).returncode == 0


def test_parse_errors_and_paths_reach_the_terminal_inert(tmp_path: Path):
    path = tmp_path / "m.onnxtxt"
    path.write_text(HEAD + "g (float x) => (float y) { y = \x1b]0;owned\x07\x1b[2J Identity(x) }\n")
    proc = _cli("summary", str(path))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("onnx-inspector: error: ")
    assert not any(c in err for c in "\x1b\x07\x00\r")
    assert "\\x1b" in err  # shown, escaped, not sent
    proc = _cli("summary", str(tmp_path / "\x1b[2Jnope.onnx"))
    assert proc.returncode == 2
    assert proc.stderr.decode() == f"onnx-inspector: error: {tmp_path}/\\x1b[2Jnope.onnx: no such file\n"
