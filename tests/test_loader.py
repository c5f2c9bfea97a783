"""Loading is safe on untrusted input: one-line errors, no external data read, no reads outside the folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from inspector.core.model.index import build_index, open_index
from inspector.core.model.loader import load_model
from inspector.core.model.tensors import read_tensor, resolve_external_path, tensor_facts
from inspector.core.util.errors import InspectorError, ModelLoadError, UnsafePathError
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


# --- the "load values" click path: hostile external data ---------------------------------------------------------

def _external(tmp_path: Path, **entries: str) -> onnx.TensorProto:
    t = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[4])
    t.data_location = onnx.TensorProto.EXTERNAL
    for k, v in {"location": "w.bin", **entries}.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    if not (tmp_path / "w.bin").exists():
        (tmp_path / "w.bin").write_bytes(np.arange(4, dtype="<f4").tobytes())
    return t


@pytest.mark.parametrize("entries", [
    {"length": "²"}, {"length": "-16"}, {"offset": "-4"}, {"length": "1e3"}, {"length": "1_6"}, {"length": " 16"},
    {"length": "9" * 30}, {"offset": "9" * 19}, {"length": "16", "offset": "٣"}, {"length": "1073741824"},
    {"length": "8"},
])
def test_bad_external_offsets_and_lengths_are_one_line_errors(tmp_path: Path, entries: dict[str, str]):
    t = _external(tmp_path, **entries)
    facts = tensor_facts(t)  # never raises, whatever the entries say
    assert facts.nbytes >= 0
    with pytest.raises(InspectorError) as err:
        read_tensor(t, tmp_path)
    assert "\n" not in str(err.value)


def test_external_data_reads_exactly_and_shares_its_buffer(tmp_path: Path):
    t = _external(tmp_path, offset="4", length="12")
    t.dims[:] = [3]
    np.testing.assert_array_equal(read_tensor(t, tmp_path), np.array([1, 2, 3], dtype=np.float32))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("length", [None, "0", "16"])
def test_external_data_in_a_fifo_never_blocks(tmp_path: Path, length: str | None):
    import threading

    os.mkfifo(tmp_path / "w.bin")
    t = _external(tmp_path, **({"length": length} if length is not None else {}))
    errors: list[str] = []

    def read() -> None:
        try:
            read_tensor(t, tmp_path)
        except InspectorError as e:
            errors.append(str(e))

    th = threading.Thread(target=read, daemon=True)
    th.start()
    th.join(5)
    if th.is_alive():
        os.close(os.open(tmp_path / "w.bin", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading external data from a FIFO blocked")
    assert len(errors) == 1 and "not a regular file" in errors[0]


def test_a_folder_swapped_for_a_symlink_after_the_check_is_caught(tmp_path: Path, monkeypatch):
    import inspector.core.model.tensors as tensors

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "w.bin").write_bytes(b"SECRETSECRETSECR")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "sub").symlink_to(outside)  # what the folder holds at open time
    t = _external(folder, location="sub/w.bin")
    # the check ran while sub/ was a real folder inside: it said yes
    monkeypatch.setattr(tensors, "resolve_external_path", lambda f, loc: folder / "sub" / "w.bin")
    with pytest.raises(UnsafePathError):
        read_tensor(t, folder)
    # and a symlink as the last component is never followed
    (folder / "w2.bin").symlink_to(outside / "w.bin")
    monkeypatch.setattr(tensors, "resolve_external_path", lambda f, loc: folder / "w2.bin")
    with pytest.raises(InspectorError):
        read_tensor(t, folder)


def test_a_symlink_loop_is_a_one_line_error(tmp_path: Path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(InspectorError) as err:
        read_tensor(_external(tmp_path, location="loop/w.bin"), tmp_path)
    assert "\n" not in str(err.value)


def test_negative_dims_count_no_elements():
    t = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[-3, -5])
    assert tensor_facts(t).numel == 0 and tensor_facts(t).nbytes == 0


def test_tensor_statistics_use_bounded_memory_and_say_when_sampled():
    import tracemalloc

    from inspector.gui.node_details import tensor_preview

    big = np.arange(16 << 20, dtype=np.float32)  # 64 MiB; a float64 copy would be 128 MiB
    tracemalloc.start()
    try:
        text = tensor_preview(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 << 20  # about 24 bytes per sampled value, whatever the tensor's size
    assert "a sample of 1,048,576 of 16,777,216 values" in text and text.startswith("[0.0, 1.0, 2.0,")
    small = tensor_preview(np.array([1.0, 3.0], dtype=np.float32))
    assert small == "[1.0, 3.0]  min 1  max 3  mean 2  std 1 (all 2 values)"  # (values as floats, stats in short)


def _deep_if_bytes(depth: int) -> bytes:
    """A valid model of ``depth`` nested If bodies, encoded by hand (protobuf cannot serialise such depth)."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            b, n = n & 0x7F, n >> 7
            out.append(b | 0x80 if n else b)
            if not n:
                return bytes(out)

    def ld(num: int, size: int) -> bytes:  # tag and length of a length-delimited field
        return varint(num << 3 | 2) + varint(size)

    def text(num: int, s: str) -> bytes:
        return ld(num, len(s)) + s.encode()

    leaf = ld(1, len(text(1, "x") + text(2, "y") + text(4, "Identity"))) + text(1, "x") + text(2, "y") \
        + text(4, "Identity") + text(2, "leaf")
    prefixes, suffixes, size = [], [], len(leaf)
    for i in range(depth):  # graph{node{input c, output y, op If, attribute{then_branch, type GRAPH, g}}, name}
        attr = text(1, "then_branch") + varint(20 << 3) + varint(onnx.AttributeProto.GRAPH)
        attr_size = len(attr) + len(ld(6, size)) + size
        node = text(1, "c") + text(2, "y") + text(4, "If")
        node_size = len(node) + len(ld(5, attr_size)) + attr_size
        pre = ld(1, node_size) + node + ld(5, attr_size) + attr + ld(6, size)
        suf = text(2, f"g{i}")
        prefixes.append(pre)
        suffixes.append(suf)
        size += len(pre) + len(suf)
    body = b"".join(reversed(prefixes)) + leaf + b"".join(suffixes)
    return varint(1 << 3) + varint(10) + ld(8, 2) + varint(2 << 3) + varint(18) + ld(7, size) + body


def test_nesting_beyond_protobufs_limit_says_what_the_limit_is(tmp_path: Path):
    shallow = tmp_path / "deep200.onnx"
    shallow.write_bytes(_deep_if_bytes(200))
    assert build_index(load_model(shallow)).facts.total_nodes == 201  # the encoder makes valid models
    deep = tmp_path / "deep30000.onnx"
    deep.write_bytes(_deep_if_bytes(30_000))
    with pytest.raises(ModelLoadError) as err:
        load_model(deep)
    assert "nested deeper than protobuf can read (65,535 message levels" in str(err.value)
    assert "corrupt" not in str(err.value)


def test_tensor_statistics_count_nan_and_inf_without_warnings():
    import warnings

    from inspector.gui.node_details import tensor_preview

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = tensor_preview(np.array([1.0, np.nan, np.inf, 3.0], dtype=np.float32))
        assert text.endswith("min 1  max 3  mean 2  std 1  2 NaN/inf (all 4 values)")
        assert tensor_preview(np.array([np.nan], dtype=np.float64)).endswith("]  1 NaN/inf (1 value)")
