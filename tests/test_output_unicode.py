"""Every JSON output is valid UTF-8 and every row says what it counts, whatever the model's strings and file names
hold: an fx text's ``'\\ud800'`` (a lone surrogate once parsed) and a file name that is not UTF-8 (Python gives it
lone surrogates) made ``report --format json`` and ``Report.save`` fail with ``UnicodeEncodeError`` and a diff's JSON
on stdout invalid UTF-8. A lone surrogate is written as the visible text ``\\udXXX``, as the terminal shows it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.conftest import ROOT

ZOO = ROOT / "tests" / "zoo"


@pytest.fixture
def surrogate_model(tmp_path: Path) -> Path:
    """pair_eps_a with ``eps`` of its layer norms given as the fx text ``'\\ud800'``."""
    m = onnx.load(str(ZOO / "pair_eps_a.onnx"))
    changed = 0
    for n in m.graph.node:
        for p in n.metadata_props:
            if p.key == "pkg.torch.onnx.fx_node" and "aten.layer_norm" in p.value and "1e-05, False)" in p.value:
                p.value = p.value.replace("1e-05, False)", "'\\ud800', False)")
                changed += 1
    assert changed
    path = tmp_path / "sur.onnx"
    onnx.save(m, str(path))
    return path


def _cli(*args: str | bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, timeout=120, cwd=cwd)


def test_report_json_of_a_lone_surrogate_is_valid_utf8(surrogate_model: Path):
    proc = _cli("report", str(surrogate_model), "--format", "json", "-o", "r.json", cwd=surrogate_model.parent)
    assert proc.returncode == 0, proc.stderr
    text = (surrogate_model.parent / "r.json").read_bytes().decode("utf-8")  # strict
    assert "'\\\\ud800'" in text  # the visible escape, as JSON text
    data = json.loads(text)
    assert data["format"] == "onnx-inspector/report"
    import inspector

    report = inspector.report(surrogate_model, "json")
    report.save(surrogate_model.parent / "api.json")
    assert (surrogate_model.parent / "api.json").read_bytes() == (surrogate_model.parent / "r.json").read_bytes()


@pytest.mark.skipif(sys.platform != "linux", reason="file names as bytes")
def test_json_naming_a_file_that_is_not_utf8_is_valid_utf8(surrogate_model: Path):
    folder = os.fsencode(surrogate_model.parent)
    odd = folder + b"/b\xff.onnx"
    shutil.copyfile(surrogate_model, odd)
    outputs = {
        "diff": _cli("diff", str(surrogate_model), odd, "--format", "json", cwd=surrogate_model.parent).stdout,
        "summary": _cli("summary", odd, "--json", cwd=surrogate_model.parent).stdout,
        "check": _cli("check", odd, "--format", "json", cwd=surrogate_model.parent).stdout,
    }
    assert _cli("diff", str(surrogate_model), odd, "--format", "json", "-o", "d.json",
                cwd=surrogate_model.parent).returncode == 0
    outputs["diff -o"] = (surrogate_model.parent / "d.json").read_bytes()
    for name, raw in outputs.items():
        data = json.loads(raw.decode("utf-8"))  # strict UTF-8: raises if any output is not
        shown = data.get("b") or data.get("model") or data["model"]
        if isinstance(shown, dict):
            continue
        assert shown.endswith("b\\udcff.onnx"), (name, shown)


def test_a_folder_diff_row_names_which_values_were_retyped(tmp_path: Path):
    from inspector.core.diff.folders import DirRow
    from inspector.report.dir_diff import row_detail

    row = DirRow("m.onnx", "different", 4, {"input_retyped": 1, "output_retyped": 1, "initializer_added": 2})
    assert row_detail(row) == "4 changes (initializer added 2, input retyped 1, output retyped 1)"
