"""Core, render and report never import Qt; the CLI imports Qt only to open the app."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import FIXTURES, ROOT

BLOCK_QT = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('PySide6', 'shiboken6', 'torch', 'pygraphviz'):\n"
    "            raise ImportError('blocked: ' + name)\n"
    "        return None\n"
    "sys.meta_path.insert(0, Block())\n"
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK_QT + code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_core_imports_and_works_without_qt_torch_or_pygraphviz():
    import pkgutil

    import inspector.core

    mods = [f"inspector.core.{m.name}" for m in pkgutil.iter_modules(inspector.core.__path__)]
    mods += ["inspector.cli", "inspector.commands.summary"]
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in mods)
    code += (
        "from inspector.cli import main\n"
        f"assert main(['summary', {str(FIXTURES / 'dynamo_block.onnx')!r}]) == 0\n"
        "assert not [m for m in sys.modules if m.startswith(('PySide6', 'torch'))]\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert "aten::transpose.int" in proc.stdout


def test_opening_the_app_without_qt_is_a_one_line_error():
    proc = _run("from inspector.cli import main\nsys.exit(main([]))")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("onnx-inspector: error: the desktop app needs PySide6")
