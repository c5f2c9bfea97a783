"""The piecewise encoder writes what ``SerializeToString`` writes, byte for byte, on every real export of the zoo
and on its fold, in bounded pieces, measured first (iterated) or each entry encoded once with its lengths written
afterwards (``Encoded.once``, as ``write_atomic`` writes it); messages with unknown fields are encoded whole."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from inspector.core.util import encoding
from inspector.core.util.encoding import Encoded, encoded
from inspector.core.util.fileio import write_atomic
from tests.conftest import ZOO

EXPORTS = sorted(ZOO.glob("*.onnx"))


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_zoo_export_and_its_fold_encode_as_protobuf_does(path: Path) -> None:
    model = onnx.load(str(path), load_external_data=False)
    assert b"".join(encoded(model)) == model.SerializeToString()
    index = open_index(path, modules=False)
    if index.provenance.calls:
        folded, report = fold_model(index)
        assert report.calls_folded > 0
        assert b"".join(encoded(folded)) == folded.SerializeToString()
        assert _once(encoded(folded)) == folded.SerializeToString()
    assert _once(encoded(model)) == model.SerializeToString()


def _once(data: Encoded) -> bytes:
    """``data.once()``'s pieces with its patches written over them, as ``write_atomic`` writes them."""
    written = bytearray(b"".join(data.once()))
    assert data.patches is not None
    for offset, length in data.patches:
        assert written[offset:offset + len(length)] == bytes(len(length))  # written as zeros first
        written[offset:offset + len(length)] = length
    return bytes(written)


def test_once_writes_the_graph_length_afterwards(tmp_path: Path) -> None:
    model = onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False)
    whole = model.SerializeToString()
    data = encoded(model)
    _once(data)
    assert data.patches is not None and len(data.patches) == 1  # the graph's length, after the model's first fields
    offset, length = data.patches[0]
    graph = model.graph.SerializeToString()
    assert whole[offset - 1] == 7 << 3 | 2 and whole[offset:offset + len(length)] == length
    assert whole[offset + len(length):offset + len(length) + len(graph)] == graph
    write_atomic(tmp_path / "m.onnx", encoded(model))
    assert (tmp_path / "m.onnx").read_bytes() == whole


@pytest.mark.parametrize("wrong", [1, 5])
def test_a_wrongly_estimated_length_width_is_written_again_from_the_pieces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrong: int) -> None:
    model = onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False)
    monkeypatch.setattr(encoding, "_width", lambda message, depth: wrong)  # the real graph's length takes 3 bytes
    data = encoded(model)
    b"".join(data.once())
    assert data.patches is None
    (tmp_path / "m.onnx").write_bytes(b"x" * 10_000_000)  # a longer old file: nothing of it may remain
    write_atomic(tmp_path / "m.onnx", encoded(model))
    assert (tmp_path / "m.onnx").read_bytes() == model.SerializeToString()


def test_the_estimated_width_is_measured_near_a_boundary() -> None:
    graph = onnx.GraphProto(name="g")
    graph.node.add(op_type="Relu", name="n" * 100)  # about 110 bytes: a third more would need 2 bytes of length
    assert encoding._width(graph, 1) == len(encoding._varint(graph.ByteSize())) == 1
    graph.node.add(op_type="Relu", name="n" * 100)  # about 220: a quarter less would need 1
    assert encoding._width(graph, 1) == 2


def test_pieces_are_bounded_and_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoding, "PIECE_BYTES", 4096)
    model = onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False)
    whole = model.SerializeToString()
    pieces = list(encoded(model))
    entries = [e for msg in (model, model.graph) for d, v in msg.ListFields()
               if d.type == d.TYPE_MESSAGE and d.is_repeated for e in v]
    largest_entry = max(e.ByteSize() for e in entries)  # a node, an initializer, a function...
    assert largest_entry < len(whole) // 20
    assert len(pieces) > len(whole) // (4096 + largest_entry + 16)
    assert all(len(p) >= 4096 for p in pieces[:-1])
    assert max(len(p) for p in pieces) < 4096 + largest_entry + 16  # no piece holds the whole graph
    assert b"".join(pieces) == whole
    once = list(encoded(model).once())
    assert len(once) == len(pieces) and all(len(p) >= 4096 for p in once[:-1])
    assert max(len(p) for p in once) < 4096 + largest_entry + 16


def test_unknown_fields_are_kept_where_protobuf_puts_them() -> None:
    model = onnx.load(str(ZOO / "pair_eps_a.onnx"), load_external_data=False)
    unknown = b"\xba\x3e\x03abc"  # field 999, length-delimited, "abc": no field of GraphProto or ModelProto
    model.graph.MergeFromString(unknown)
    model.MergeFromString(unknown)
    whole = model.SerializeToString()
    assert whole.count(unknown) == 2
    assert b"".join(encoded(model)) == whole
    assert _once(encoded(model)) == whole


def test_an_empty_message_is_no_bytes() -> None:
    assert b"".join(encoded(onnx.ModelProto())) == b"" == _once(encoded(onnx.ModelProto()))
    m = onnx.ModelProto()
    m.graph.SetInParent()  # a present but empty graph: its tag and a zero length
    assert b"".join(encoded(m)) == m.SerializeToString() == b"\x3a\x00" == _once(encoded(m))
