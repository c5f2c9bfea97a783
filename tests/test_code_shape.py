"""The house's size limits, checked rather than remembered: no module of ``inspector/`` over 600 lines, no class over
300, no function over 80. Four developers merged into one tree in one day; a limit that lives only in a style guide
is the first thing such a day breaks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "inspector"
LIMITS = {"module": 600, "class": 300, "function": 80}


def _sizes(path: Path, root: Path = PACKAGE.parent) -> list[tuple[str, str, int]]:
    text = path.read_text(encoding="utf-8")
    out = [("module", str(path.relative_to(root)), len(text.splitlines()))]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            kind = "class"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = "function"
        else:
            continue
        assert node.end_lineno is not None
        out.append((kind, f"{path.relative_to(root)}:{node.lineno} {node.name}",
                    node.end_lineno - node.lineno + 1))
    return out


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_the_package_is_there() -> None:
    assert len(MODULES) > 100  # (a wrong path would make every check below pass on nothing)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_sizes_stay_within_the_limits(path: Path) -> None:
    over = [f"{kind} {where}: {lines} lines (limit {LIMITS[kind]})" for kind, where, lines in _sizes(path)
            if lines > LIMITS[kind]]
    assert over == []


def test_the_check_sees_an_oversized_function(tmp_path: Path) -> None:
    """The check itself: a function of 81 lines is found."""
    body = "\n".join(f"    x{k} = {k}" for k in range(80))
    probe = tmp_path / "probe.py"
    probe.write_text(f"class Big:\n    def long(self):\n{'    ' + body.replace(chr(10), chr(10) + '    ')}\n",
                     encoding="utf-8")
    sizes = _sizes(probe, tmp_path)
    assert ("function", "probe.py:2 long", 81) in sizes and ("class", "probe.py:1 Big", 82) in sizes
