"""Loading is safe on untrusted input: one-line errors, no external data read, no reads outside the folder."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from inspector.core.errors import InspectorError, ModelLoadError, UnsafePathError
from inspector.core.index import build_index, open_index
from inspector.core.loader import load_model
from inspector.core.tensors import read_tensor, resolve_external_path, tensor_facts
from tests.builders import deep_if_model
from tests.conftest import FIXTURES


def test_binary_and_text_syntax_load():
    binary = load_model(FIXTURES / "overloads.onnx")
    assert binary.format == "binary" and len(binary.proto.functions) > 0
    text = load_model(FIXTURES / "text_model.onnxtxt")
    assert text.format == "text"
    keys = {(f.domain, f.name, f.overload) for f in text.proto.functions}
    assert ("local", "f", "to_int32") in keys
    assert any(n.overload == "to_int32" for n in text.proto.graph.node)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("bad/empty.onnx", "empty file"),
        ("bad/truncated.onnx", "not a valid ONNX protobuf"),
        ("bad/random.onnx", "not a valid ONNX protobuf"),
        ("bad/json.onnx", "looks like JSON"),
        ("bad/text_garbage.onnxtxt", "invalid ONNX text syntax"),
        ("bad", "is a directory"),
        ("bad/does_not_exist.onnx", "no such file"),
    ],
)
def test_bad_input_gives_one_line_error(name: str, reason: str):
    with pytest.raises(ModelLoadError) as info:
        load_model(FIXTURES / name)
    message = str(info.value)
    assert reason in message
    assert "\n" not in message


def test_protobuf_that_decodes_but_is_no_model(tmp_path: Path):
    p = tmp_path / "not_model.onnx"
    p.write_bytes(onnx.ModelProto(producer_name="x", ir_version=10).SerializeToString())
    with pytest.raises(ModelLoadError, match="not an ONNX model"):
        load_model(p)


def _opened_paths(action) -> list[str]:
    opened: list[str] = []

    def hook(event: str, args: tuple) -> None:
        if event == "open" and args and isinstance(args[0], (str, bytes, Path)):
            opened.append(str(args[0]))

    sys.addaudithook(hook)  # audit hooks cannot be removed; the list is local to this call
    before = len(opened)
    action()
    return opened[before:]


def test_external_data_is_not_read_when_opening_or_indexing():
    opened = _opened_paths(lambda: open_index(FIXTURES / "external" / "model.onnx"))
    assert not [p for p in opened if p.endswith("weights.bin")]
    index = open_index(FIXTURES / "external" / "model.onnx")
    assert index.parameters().external_bytes == 80  # known from metadata alone


def test_external_tensor_is_read_on_demand_from_inside_the_folder():
    model = load_model(FIXTURES / "external" / "model.onnx")
    tensors = list(model.proto.graph.initializer)
    assert tensors and all(tensor_facts(t).external for t in tensors)
    arrays = [read_tensor(t, model.folder) for t in tensors]
    reference = onnx.load(str(FIXTURES / "external" / "model.onnx"))  # onnx loads the data the normal way
    expected = {t.name: onnx.numpy_helper.to_array(t) for t in reference.graph.initializer}
    for t, a in zip(tensors, arrays):
        np.testing.assert_array_equal(a, expected[t.name])


def test_external_locations_outside_the_folder_are_refused():
    model = load_model(FIXTURES / "escape" / "model.onnx")
    tensors = list(model.proto.graph.initializer)
    assert len(tensors) >= 3
    opened = []
    for t in tensors:
        with pytest.raises(UnsafePathError):
            opened += _opened_paths(lambda t=t: read_tensor(t, model.folder))
    assert not [p for p in opened if "passwd" in p or "weights.bin" in p or "secret" in p]


@pytest.mark.parametrize("location", ["../x.bin", "/etc/passwd", "a/../../x.bin", "", "a\x00b"])
def test_resolve_external_path_refuses_escapes(tmp_path: Path, location: str):
    with pytest.raises(UnsafePathError):
        resolve_external_path(tmp_path, location)


def test_symlink_out_of_the_folder_is_refused(tmp_path: Path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"\0" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "link.bin").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        resolve_external_path(folder, "link.bin")
    assert resolve_external_path(folder, "sub/../w.bin") == (folder / "w.bin").resolve()


def test_external_data_past_end_of_file_is_an_error(tmp_path: Path):
    t = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[4])
    t.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "8"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    (tmp_path / "w.bin").write_bytes(b"\0" * 12)
    with pytest.raises(InspectorError, match="past the end"):
        read_tensor(t, tmp_path)


def test_deeply_nested_file_loads_and_indexes(tmp_path: Path):
    p = tmp_path / "deep.onnx"
    p.write_bytes(deep_if_model(200).SerializeToString())
    index = build_index(load_model(p))
    assert index.facts.total_nodes == 200 * 2 + 1 + 1
