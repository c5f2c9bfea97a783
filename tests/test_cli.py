"""The ``onnx-inspector`` command: summary text and JSON, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jsonschema
import onnx
import pytest

from inspector.cli import main
from tests.conftest import FIXTURES, ROOT, SAMPLE

SCHEMA = json.loads((ROOT / "resources" / "summary.schema.json").read_text())


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


def test_summary_text_lists_facts_families_and_targets(capsys):
    assert main(["summary", str(FIXTURES / "overloads.onnx")]) == 0
    out = capsys.readouterr().out
    assert "ir_version   10" in out
    assert "local.tr  3 overloads, 4 calls" in out
    assert "perm_0213" in out
    assert main(["summary", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "aten::transpose.int" in out and "aten::scaled_dot_product_attention" in out


@pytest.mark.parametrize("path", [ROOT / "tests" / "zoo" / "gpt2.onnx", FIXTURES / "torchscript_modfuncs.onnx",
                                  Path(onnx.__file__).parent / "backend/test/data/light/light_inception_v1.onnx"])
def test_summary_text_lists_the_main_graphs_operators(path: Path, capsys):
    """A model with neither functions nor aten calls (onnx's own Caffe2 Inception, a TorchScript export) read as
    "(none)" twice: the text now lists its op types, the most frequent first. Truth: onnx's own nodes, counted."""
    nodes = onnx.load(str(path), load_external_data=False).graph.node
    counts = Counter((n.domain, n.op_type) for n in nodes)
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    head = f"operators ({len(counts)} op types, {len(nodes)} nodes in the main graph)"
    listed = out.split(head + "\n", 1)[1].split("\n\n", 1)[0].splitlines()
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [(f"{d}::{op}" if d not in ("", "ai.onnx") else op, n) for (d, op), n in ranked]
    assert [line.split()[:2] for line in listed[:12]] == [[label, str(n)] for label, n in shown[:12]]
    if len(shown) > 12:
        rest = shown[12:]
        assert listed[12] == f"  … {len(rest)} more op types ({sum(n for _l, n in rest)} nodes)" and len(listed) == 13


@pytest.mark.parametrize("name", ["overloads.onnx", "dynamo_block.onnx", "torchscript_modfuncs.onnx",
                                  "findings.onnx", "text_model.onnxtxt", "hostile.onnx"])
def test_summary_json_validates_against_the_shipped_schema(name: str, capsys):
    assert main(["summary", "--json", str(FIXTURES / name)]) == 0
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMA)
    assert data["version"] == 1


def test_summary_json_content(capsys):
    main(["summary", "--json", str(FIXTURES / "dynamo_block.onnx")])
    data = json.loads(capsys.readouterr().out)
    fams = {(f["kind"], f["domain"], f["name"]): f for f in data["families"]}
    transpose = fams[("aten_call", "aten", "transpose")]
    (ov,) = transpose["overloads"]
    assert {k: ov[k] for k in ("overload", "calls", "function", "target", "nodes")} == {
        "overload": "int", "calls": 8, "function": None, "target": "aten::transpose.int", "nodes": 8}
    assert len(ov["bodies"]) == 1 and ov["fingerprint"] == ov["bodies"][0]["fingerprint"]
    (perm,) = ov["specialised"]
    assert perm["attribute"] == "perm" and perm["value"] == [0, 2, 1, 3] and not perm["varies"]
    assert {a["parameter"]: a["value"] for a in perm["aten_arguments"]} == {"dim0": 1, "dim1": 2}
    main(["summary", "--json", str(FIXTURES / "findings.onnx")])
    data = json.loads(capsys.readouterr().out)
    assert {f["kind"] for f in data["findings"]} >= {"missing_function", "missing_overload", "recursion"}
    fam = next(f for f in data["families"] if f["name"] == "f")
    assert fam["kind"] == "function" and fam["overloads"][0]["function"]["overload"] == ""


@pytest.mark.parametrize("name", ["bad/empty.onnx", "bad/truncated.onnx", "bad/random.onnx", "bad/json.onnx",
                                  "bad/text_garbage.onnxtxt", "bad", "missing.onnx"])
def test_bad_input_exits_2_with_one_line(name: str):
    proc = run("summary", str(FIXTURES / name))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnx-inspector: error: ")
    assert "Traceback" not in proc.stderr


def test_usage_errors_and_help():
    assert run("summary").returncode == 2
    proc = run("--help")
    assert proc.returncode == 0 and "summary MODEL" in proc.stdout


@pytest.mark.parametrize("command", ["summary", "fold", "diff", "report", "check"])
def test_a_commands_help_reads_as_plain_text(command: str, capsys):
    """Each command's description is its module's docstring; ``report --help`` read ````--compare```` and the
    other literals with the docstring's double backquotes."""
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"onnx-inspector {command} " in out and "``" not in out


@pytest.mark.parametrize(("word", "meant"), [("gui", "open"), ("sumary", "summary"), ("compare", "diff"),
                                             ("frobnicate", None)])
def test_a_mistyped_subcommand_is_an_error_naming_the_right_one(word: str, meant: str | None):
    # before: the word was taken for a model, and the app opened a comparison of a file named "gui" with the model
    proc = run(word, str(SAMPLE))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"onnx-inspector: error: unknown command '{word}' and no such file")
    assert (f"did you mean '{meant}'?" in lines[0]) is (meant is not None)


def test_a_model_file_named_like_a_word_still_opens(tmp_path: Path, monkeypatch):
    import inspector.gui.app

    opened: list[list[str]] = []
    monkeypatch.setattr(inspector.gui.app, "run", lambda paths: opened.append(paths) or 0)
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLE, tmp_path / "gui")
    assert main(["gui", str(SAMPLE)]) == 0  # a file of that name exists here: it is a model, not a command
    assert opened == [["gui", str(SAMPLE)]]
    assert main(["view"]) == 2  # no such file: a mistyped command


def test_console_script_is_installed():
    exe = shutil.which("onnx-inspector", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.run([exe, "summary", str(FIXTURES / "overloads.onnx")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "local.tr" in proc.stdout


def test_control_characters_are_escaped_in_text(tmp_path: Path, capsys):
    import onnx

    model = onnx.load(str(FIXTURES / "overloads.onnx"))
    model.producer_name = "evil\x1b[31mred\x07"
    path = tmp_path / "ctl.onnx"
    onnx.save(model, str(path))
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[31mred" in out
