"""write_atomic with data in chunks: written in order from a second thread; a failing producer or a full disk
leaves the old file, no temporary file and no thread behind, and a full disk stops the producer early."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inspector.core.util import fileio
from inspector.core.util.errors import InspectorError
from inspector.core.util.fileio import write_atomic


def _chunks(n: int, made: list[int], fail_at: int = -1) -> Iterator[bytes]:
    for k in range(n):
        if k == fail_at:
            raise ValueError("the producer failed")
        made.append(k)
        yield f"chunk {k:05d};".encode() * 100


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_chunks_are_written_in_order(tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    made: list[int] = []
    write_atomic(out, _chunks(2000, made))
    assert out.read_bytes() == b"".join(_chunks(2000, []))
    assert len(made) == 2000 and _leftovers(tmp_path) == []


def test_a_failing_producer_leaves_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    out.write_bytes(b"old")
    threads = threading.active_count()
    with pytest.raises(ValueError, match="the producer failed"):
        write_atomic(out, _chunks(2000, [], fail_at=700))
    assert out.read_bytes() == b"old" and _leftovers(tmp_path) == []
    assert threading.active_count() == threads


def test_a_full_disk_is_one_error_and_stops_the_producer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.bin"
    out.write_bytes(b"old")
    real_fdopen = os.fdopen

    class Full:
        """A file that takes 50 writes, then reports a full disk."""

        def __init__(self, fh: Any) -> None:
            self.fh, self.writes = fh, 0

        def write(self, data: bytes) -> int:
            self.writes += 1
            if self.writes > 50:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return int(self.fh.write(data))

        def __getattr__(self, name: str) -> Any:
            return getattr(self.fh, name)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

    monkeypatch.setattr(fileio.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    made: list[int] = []
    threads = threading.active_count()
    with pytest.raises(InspectorError, match=r"^cannot write .*out\.bin: No space left on device$"):
        write_atomic(out, _chunks(100_000, made))
    assert out.read_bytes() == b"old" and _leftovers(tmp_path) == []
    assert 50 < len(made) < 100  # the producer stopped a few chunks after the error, not at the end
    assert threading.active_count() == threads
