"""The piecewise encoder writes what ``SerializeToString`` writes, byte for byte, on every real export of the zoo
and on its fold, in bounded pieces; messages with unknown fields are encoded whole."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from inspector.core.util import encoding
from inspector.core.util.encoding import encoded
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


def test_unknown_fields_are_kept_where_protobuf_puts_them() -> None:
    model = onnx.load(str(ZOO / "pair_eps_a.onnx"), load_external_data=False)
    unknown = b"\xba\x3e\x03abc"  # field 999, length-delimited, "abc": no field of GraphProto or ModelProto
    model.graph.MergeFromString(unknown)
    model.MergeFromString(unknown)
    whole = model.SerializeToString()
    assert whole.count(unknown) == 2
    assert b"".join(encoded(model)) == whole


def test_an_empty_message_is_no_bytes() -> None:
    assert b"".join(encoded(onnx.ModelProto())) == b""
    m = onnx.ModelProto()
    m.graph.SetInParent()  # a present but empty graph: its tag and a zero length
    assert b"".join(encoded(m)) == m.SerializeToString() == b"\x3a\x00"
