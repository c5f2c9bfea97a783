"""ReadBuffer: the files of a diff read one after the other into one memory. A model parsed from it stays intact
when the next file is read there; files larger than the memory, text syntax and bad input load as without it.

Only a file that is read takes the buffer: one the kernel grants a read lease for is mapped instead
(``core.util.mapped``, tests/test_loader_mapped.py). Here every file is read, as where no lease is granted (another
user's file, a file system without leases)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest

from inspector.core.diff import diff_dict, diff_files, diff_models
from inspector.core.model.index import open_index
from inspector.core.model.loader import ReadBuffer, load_model
from inspector.core.util.errors import ModelLoadError
from tests.conftest import ZOO


@pytest.fixture(autouse=True)
def _no_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    @contextlib.contextmanager
    def refused(fd: int, size: int) -> Iterator[None]:
        yield None

    monkeypatch.setattr("inspector.core.model.loader.mapped", refused)


def _proto(path: Path) -> onnx.ModelProto:
    return onnx.load(str(path), load_external_data=False)


def test_a_model_read_first_is_intact_after_the_next_is_read_into_its_memory() -> None:
    small, large = ZOO / "pair_eps_a.onnx", ZOO / "gpt2.onnx"
    assert small.stat().st_size < large.stat().st_size
    buffer = ReadBuffer((small, large))
    a = load_model(large, buffer=buffer)
    b = load_model(small, buffer=buffer)  # over the first bytes of the larger file
    c = load_model(large, buffer=buffer)
    assert a.proto == _proto(large) and b.proto == _proto(small) and c.proto == a.proto
    assert (a.file_size, b.file_size) == (large.stat().st_size, small.stat().st_size)


def test_a_file_larger_than_the_memory_is_read_whole(tmp_path: Path) -> None:
    small, large = ZOO / "pair_eps_a.onnx", ZOO / "gpt2.onnx"
    buffer = ReadBuffer((small,))  # sized for the small one only
    assert load_model(large, buffer=buffer).proto == _proto(large)
    assert load_model(small, buffer=buffer).proto == _proto(small)
    grown = tmp_path / "grown.onnx"  # a file that grew after the memory was sized
    shutil.copyfile(small, grown)
    buffer = ReadBuffer((grown,))
    shutil.copyfile(large, grown)
    assert load_model(grown, buffer=buffer).proto == _proto(large)


def test_text_syntax_and_bad_input_load_as_without_the_buffer(tmp_path: Path) -> None:
    text = tmp_path / "m.onnx"  # text syntax found by content, not by suffix
    text.write_text('<ir_version: 8, opset_import: ["" : 18]>\nagraph (float[2] x) => (float[2] y) {\n'
                    "  y = Relu(x)\n}\n", "utf-8")
    empty, folder = tmp_path / "empty.onnx", tmp_path / "folder.onnx"
    empty.write_bytes(b"")
    folder.mkdir()
    as_json = tmp_path / "j.onnx"
    as_json.write_bytes(b" " * 5000 + b'{"graph": {}}')
    buffer = ReadBuffer((text, empty, as_json))
    got = load_model(text, buffer=buffer)
    assert got.format == "text" and got.proto == load_model(text).proto
    for path, reason in ((empty, "empty file"), (folder, "is a directory"), (as_json, "looks like JSON"),
                         (tmp_path / "none.onnx", "no such file")):
        with pytest.raises(ModelLoadError, match=reason):
            load_model(path, buffer=buffer)
        with pytest.raises(ModelLoadError, match=reason):
            load_model(path)


@pytest.mark.parametrize("pair", ["eps", "heads", "scale", "transpose"])
def test_diff_of_files_equals_diff_of_models_opened_one_by_one(pair: str) -> None:
    a, b = ZOO / f"pair_{pair}_a.onnx", ZOO / f"pair_{pair}_b.onnx"
    d = diff_files(a, b)
    assert not d.equal
    assert diff_dict(d) == diff_dict(diff_models(open_index(a, modules=False), open_index(b, modules=False)))


def test_pieces_parse_from_the_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspector.core.model import loader

    monkeypatch.setattr(loader, "PIECEWISE_BYTES", 1 << 10)  # the zoo's files parsed in pieces, as the app's are
    monkeypatch.setattr(loader, "_PIECE_BYTES", 4 << 10)
    parsed = []
    in_pieces = loader._parse_in_pieces
    monkeypatch.setattr(loader, "_parse_in_pieces",
                        lambda data, progress: parsed.append(in_pieces(data, progress)) or parsed[-1])
    a, b = ZOO / "gpt2.onnx", ZOO / "pair_eps_b.onnx"
    buffer = ReadBuffer((a, b))
    got_a = load_model(a, buffer=buffer, progress=lambda done, total: None)
    got_b = load_model(b, buffer=buffer, progress=lambda done, total: None)
    assert len(parsed) == 2 and None not in parsed  # in pieces, not the whole-file parse it falls back to
    assert got_a.proto == _proto(a) and got_b.proto == _proto(b)


def test_a_file_larger_than_any_protobuf_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inspector.cli import main
    from inspector.core.model.loader import MAX_MODEL_BYTES

    huge = tmp_path / "huge.onnx"
    with open(huge, "wb") as fh:  # sparse: 3 GiB that take no disk
        fh.truncate(3 << 30)
    assert huge.stat().st_size > MAX_MODEL_BYTES
    buffer = ReadBuffer((huge, ZOO / "pair_eps_a.onnx"))
    assert buffer._size == (ZOO / "pair_eps_a.onnx").stat().st_size  # sized without the refused file
    for buf in (None, buffer):
        with pytest.raises(ModelLoadError, match=r"huge\.onnx: 3\.0 GiB, larger than any ONNX protobuf can be"):
            load_model(huge, buffer=buf)
    for argv in (["summary", str(huge)], ["diff", str(huge), str(ZOO / "pair_eps_a.onnx")], ["fold", str(huge),
                                                                                          "-o", str(tmp_path / "f")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "3.0 GiB, larger than any ONNX protobuf" in err and "internal" not in err
