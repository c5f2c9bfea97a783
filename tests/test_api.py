"""The public Python API: every name in ``inspector.__all__`` resolves, and ``import inspector`` stays cheap."""

from __future__ import annotations

import subprocess
import sys

import inspector
from inspector.core.diff import diff_files
from inspector.core.index import open_index
from tests.conftest import FIXTURES, ROOT


def test_every_public_name_resolves():
    assert sorted(inspector.__all__) == inspector.__all__
    for name in inspector.__all__:
        assert getattr(inspector, name) is not None
    assert inspector.open_index is open_index and inspector.diff_files is diff_files
    assert set(inspector.__all__) <= set(dir(inspector))


def test_unknown_name_is_an_attribute_error():
    assert not hasattr(inspector, "no_such_thing")


def test_the_api_end_to_end():
    index = inspector.open_index(FIXTURES / "overloads.onnx")
    data = inspector.summary_dict(index)
    assert data["format"] == "onnx-inspector/summary" and "local.tr" in inspector.summary_text(data)
    diff = inspector.diff_files(FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_renamed.onnx")
    assert inspector.diff_dict(diff)["equal"] is True


def test_import_inspector_loads_no_onnx():
    code = "import sys, inspector\nassert not [m for m in sys.modules if m.startswith(('onnx', 'numpy'))]"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
