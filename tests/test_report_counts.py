"""Counts in diff pages read in the right number: a change with one node edit, a group of one change. The HTML page
read "1 node edits" (the compare window's PDF export showed it run into the detail) and the Markdown "1 changes"
wherever a group held one. llama_gqa against its unoptimised export, from the zoo."""

from __future__ import annotations

import re
from pathlib import Path

from inspector.cli import main
from tests.conftest import ZOO


def _diff(tmp_path: Path, suffix: str) -> str:
    out = tmp_path / f"d.{suffix}"
    assert main(["diff", str(ZOO / "llama_gqa.onnx"), str(ZOO / "llama_gqa_noopt.onnx"), "-o", str(out)]) == 1
    return out.read_text()


def test_diff_pages_read_counts_of_one_in_the_singular(tmp_path: Path):
    page = _diff(tmp_path, "html")
    edits = re.findall(r"(\d+) (node edits?)</summary>", page)
    assert ("1", "node edit") in edits and all((n == "1") == (w == "node edit") for n, w in edits)
    markdown = _diff(tmp_path, "md")
    groups = re.findall(r"</b>: (\d+) (changes?)</summary>", markdown)
    assert ("1", "change") in groups and all((n == "1") == (w == "change") for n, w in groups)
    assert "1 changes" not in markdown and "1 node edits" not in page


def test_pages_write_old_to_new_with_an_arrow_the_terminal_and_json_in_ascii(tmp_path: Path, capsys):
    """The HTML and Markdown pages write a change as the app does (``2 → 1 node``); the command line's text and the
    JSON keep ``2 -> 1 node``, plain ASCII to grep and compare. The pages read ``->`` under the app's ``→``."""
    change = "2 {} 1 node: -1 (constant FLOAT"  # (Markdown writes the brackets after it as entities)
    for suffix in ("html", "md"):
        page = _diff(tmp_path, suffix)
        assert change.format("→") in page and " -> " not in page, suffix
    assert change.format("->") in _diff(tmp_path, "json")
    assert main(["diff", str(ZOO / "llama_gqa.onnx"), str(ZOO / "llama_gqa_noopt.onnx")]) == 1
    text = capsys.readouterr().out
    assert change.format("->") in text and "→" not in text
