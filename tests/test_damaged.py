"""Damaged files: invalid UTF-8 strings and random byte flips give a usable index or a one-line error."""

from __future__ import annotations

import json
import random
from pathlib import Path

import onnx
import pytest

from inspector.cli import main
from inspector.core.model.index import build_index, open_index
from inspector.core.model.loader import LoadedModel, parse_binary_model
from inspector.core.summary import summary_dict
from inspector.core.util.errors import InspectorError
from tests.conftest import FIXTURES


def _with_invalid_utf8(tmp_path: Path) -> Path:
    """overloads.onnx with an op type, a function name and metadata that are not valid UTF-8."""
    model = onnx.load(str(FIXTURES / "overloads.onnx"))
    model.graph.node[0].name = "NAMEAAAA"
    model.functions[0].doc_string = "DOCBBBBB"
    p = model.metadata_props.add()
    p.key, p.value = "note", "METACCCC"
    data = model.SerializeToString()
    for marker in (b"NAMEAAAA", b"DOCBBBBB", b"METACCCC"):
        data = data.replace(marker, b"\xff\xfe\xfd" + marker[3:])
    path = tmp_path / "bad_utf8.onnx"
    path.write_bytes(data)
    return path


def test_invalid_utf8_strings_are_repaired_and_reported(tmp_path: Path, capsys):
    index = open_index(_with_invalid_utf8(tmp_path))
    assert any(f.kind == "invalid_text" for f in index.findings)
    assert "\ufffd" in index.proto.graph.node[0].name
    json.dumps(summary_dict(index), allow_nan=False)
    assert main(["summary", "--json", str(tmp_path / "bad_utf8.onnx")]) == 0
    assert json.loads(capsys.readouterr().out)["findings"]


@pytest.mark.parametrize("name", ["dynamo_block.onnx", "overloads.onnx", "nested_calls.onnx", "hostile.onnx"])
def test_random_byte_flips_never_crash_indexing(name: str):
    rng = random.Random(name)
    data = (FIXTURES / name).read_bytes()
    outcomes = {"indexed": 0, "refused": 0}
    for _ in range(60):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            proto = parse_binary_model(bytes(damaged), name)
        except InspectorError as e:
            assert "\n" not in str(e)
            outcomes["refused"] += 1
            continue
        index = build_index(LoadedModel(Path(name), proto, "binary", len(damaged)))
        json.dumps(summary_dict(index), allow_nan=False)
        outcomes["indexed"] += 1
    assert outcomes["indexed"] and outcomes["refused"]
