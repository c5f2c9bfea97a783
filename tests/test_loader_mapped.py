"""A model file is parsed mapped only under a read lease (``core.util.mapped``): the parsed model is the file's, the
map is let go with the load, another process's rewrite of the file waits while it is held (a truncation of a mapped
file would end this process with SIGBUS), the lease's break signal does not end this process, and a file the lease
cannot be had for (open for writing elsewhere) is read as before."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest

from inspector.core.model.loader import load_model
from inspector.core.util.errors import ModelLoadError
from inspector.core.util.mapped import leases_apply, mapped
from tests.conftest import ZOO

pytestmark = pytest.mark.skipif(not leases_apply(), reason="no file leases on this platform")

WRITER = "import sys; print('opening', flush=True); open(sys.argv[1], 'wb').close(); print('done', flush=True)"


def _copy(tmp_path: Path, name: str = "gpt2.onnx") -> Path:
    out = tmp_path / name
    shutil.copyfile(ZOO / name, out)
    return out


def _reference(path: Path) -> bytes:
    proto = onnx.ModelProto()
    proto.ParseFromString(path.read_bytes())
    return proto.SerializeToString()


def test_mapped_load_is_the_files_model_and_lets_the_file_go(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    expected = _reference(path)
    with open(path, "rb") as fh, mapped(fh.fileno(), os.fstat(fh.fileno()).st_size) as view:
        assert view is not None and bytes(view) == path.read_bytes()  # what the loader parses for this file
    loaded = load_model(path)
    assert loaded.file_size == path.stat().st_size
    # after the load, the file is neither mapped nor leased: rewriting it waits for nothing, and the parsed model
    # (protobuf copies what it keeps) is untouched by it
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", WRITER, str(path)], check=True, capture_output=True, timeout=30)
    assert time.monotonic() - started < 20  # (a held lease makes the writer wait lease-break-time: 45 s)
    assert path.stat().st_size == 0
    assert loaded.proto.SerializeToString() == expected


def test_a_rewrite_waits_while_the_file_is_mapped(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    size = path.stat().st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        with mapped(fd, size) as view:
            assert view is not None
            writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
            assert writer.stdout is not None
            assert writer.stdout.readline().strip() == "opening"
            time.sleep(0.5)
            # the writer's open(..., "wb") waits for the lease: the file keeps its length and the mapped pages stay
            # readable; this process got the lease's break signal and is still here
            assert writer.poll() is None
            assert path.stat().st_size == size
            assert bytes(view[-16:]) == ZOO.joinpath("gpt2.onnx").read_bytes()[-16:]
        assert writer.wait(timeout=30) == 0
        assert writer.stdout.readline().strip() == "done"
        assert path.stat().st_size == 0
    finally:
        os.close(fd)


def test_a_file_open_for_writing_is_read_instead(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    expected = _reference(path)
    with open(path, "r+b") as other:  # (open for writing: the kernel grants no read lease)
        fd = os.open(path, os.O_RDONLY)
        try:
            with mapped(fd, path.stat().st_size) as view:
                assert view is None
        finally:
            os.close(fd)
        loaded = load_model(path)
        assert loaded.proto.SerializeToString() == expected
        assert not other.closed


def test_a_damaged_mapped_file_gives_one_line_and_lets_the_file_go(tmp_path: Path) -> None:
    path = tmp_path / "cut.onnx"
    whole = (ZOO / "gpt2.onnx").read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # cut inside a field: protobuf refuses it
    with pytest.raises(ModelLoadError) as raised:
        load_model(path)
    assert "\n" not in str(raised.value) and "not a valid ONNX protobuf" in str(raised.value)
    # the error's traceback still holds the parse's frames; the lease is gone all the same: the file can be
    # truncated at once, and nothing of the map is touched again
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", WRITER, str(path)], check=True, capture_output=True, timeout=30)
    assert time.monotonic() - started < 20
    assert path.stat().st_size == 0
