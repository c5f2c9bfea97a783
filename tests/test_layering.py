"""Core, render and report never import Qt (nor torch or pygraphviz when imported); the CLI imports Qt only to
open the app. Which layer may import which is declared in pyproject.toml ([tool.importlinter])."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

from tests.conftest import FIXTURES, ROOT

BLOCK_QT = (
    "import sys\n"
    "class Block:\n"
    "    tried = []\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('PySide6', 'shiboken6', 'torch', 'pygraphviz'):\n"
    "            Block.tried.append(name)\n"
    "            raise ImportError('blocked: ' + name)\n"
    "        return None\n"
    "sys.meta_path.insert(0, Block())\n"
)


def _modules(*packages: str) -> list[str]:
    """Every module of ``packages``, subpackages included (``inspector.core.diff``)."""
    out = []
    for name in packages:
        pkg = importlib.import_module(name)
        out.append(name)
        out += [m.name for m in pkgutil.walk_packages(pkg.__path__, name + ".")]
    return out


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK_QT + code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_core_render_and_report_import_and_work_without_qt_torch_or_pygraphviz():
    mods = _modules("inspector.core", "inspector.render", "inspector.report")
    assert {"inspector.core.model.index", "inspector.render.layout", "inspector.report.html"} <= set(mods)
    mods += ["inspector.cli", "inspector.commands.summary"]
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in mods)
    code += (
        "assert not Block.tried, Block.tried\n"  # not even an import guarded by try/except
        "from inspector.cli import main\n"
        f"assert main(['summary', {str(FIXTURES / 'dynamo_block.onnx')!r}]) == 0\n"
        "assert not [m for m in sys.modules if m.startswith(('PySide6', 'shiboken6', 'torch', 'pygraphviz'))]\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert "aten::transpose.int" in proc.stdout


def test_opening_the_app_without_qt_is_a_one_line_error():
    proc = _run("from inspector.cli import main\nsys.exit(main([]))")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("onnx-inspector: error: the desktop app needs PySide6")
