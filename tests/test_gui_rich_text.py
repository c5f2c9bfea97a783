"""Qt rich text in the app is built only from escaped parts (``inspector.gui.text``: ``tag``, ``rich``,
``tooltip``), so no model string reaches a text browser, label or tooltip as markup; and what those build is
escaped by the one HTML escaper every writer uses (``core.util.textsafe.html_text``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from inspector.core.util.textsafe import html_text
from inspector.gui.text import BR, Rich, rich, tag, tooltip
from tests.conftest import ROOT

GUI = ROOT / "inspector" / "gui"
MARKUP = re.compile(r"</?(a|b|br|code|h[1-6]|hr|i|li|p|pre|small|span|table|td|th|tr|ul|img|div)\b", re.I)
BUILDER = {"text.py"}  # the one module that writes tags
ELSEWHERE = {"pdf.py"}  # replaced by a PDF writer outside gui/ (its own escaping)


def _strings(path: Path) -> list[tuple[int, str]]:
    """String constants of a module, the pieces of f-strings included (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_module_of_the_gui_writes_a_tag_by_hand():
    found = [f"{p.name}:{line}: {text[:60]!r}" for p in sorted(GUI.glob("*.py")) if p.name not in BUILDER | ELSEWHERE
             for line, text in _strings(p) if MARKUP.search(text)]
    assert found == []


def test_the_finder_sees_a_tag_written_by_hand(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text('"""Doc <b>ok</b>."""\nx = f"<p>{1}</p>"\ny = "<i>"\n', encoding="utf-8")
    assert sorted(text for _line, text in _strings(module) if MARKUP.search(text)) == ["</p>", "<i>", "<p>"]


def test_parts_and_attribute_values_are_escaped_by_the_one_escaper():
    hostile = "<img src=x onerror='alert(1)'>http://evil"
    made = tag("a", hostile, href=f"tensor:{hostile}", style="color:#000")
    assert made == (f"<a href='tensor:{html_text(hostile)}' style='color:#000'>{html_text(hostile)}</a>")
    assert "<img" not in made and "'alert" not in made and "http://" not in made
    assert rich("a<b", BR, tag("b", "c&d")) == "a&lt;b<br/><b>c&amp;d</b>"
    assert isinstance(rich("x"), Rich) and rich(rich("<")) == "&lt;"  # escaped once, never twice
    assert tooltip("x\n<y>") == "<p style='white-space:pre'>x\n&lt;y&gt;</p>"
