"""The one way this package writes a file: atomically, so that a crash or a full disk leaves the old file or the
new one, never half of either.

The data goes to a temporary file in the target's folder (``os.replace`` is atomic only within one file system),
is flushed and fsynced, gets the mode an ordinary file of this user gets (``0o666`` less the umask; ``mkstemp``
would leave ``0o600``), or the permissions of the file it replaces (a review sidecar made group-writable to be
shared stays so when it is saved again), and is renamed over the target; the folder is fsynced where the platform
allows it. Any failure removes the temporary file and raises ``InspectorError`` with a one-line message.
``keep_backup`` first copies the old file to ``<path>.bak`` (atomically too, with the old file's permissions: it
was left ``0o600``), as review sidecars want. Missing folders are created only when asked (``make_parents``): for a
report, a mistyped path is an error, not a new folder.

Only a regular file is ever replaced: a FIFO, device, socket, folder or symlink at the target is refused with a
one-line error (``-o /dev/null`` must not turn ``/dev/null`` into a file). Temporary files a killed write left
behind (our own name pattern only, older than a minute) are removed on the next write to the same target.
Which paths an output may not be is decided in ``paths.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol, runtime_checkable

from inspector.core.util.errors import InspectorError

__all__ = ["clean_stale_temps", "write_atomic"]

STALE_SECONDS = 60.0


@runtime_checkable
class Rewritable(Protocol):
    """Bytes written in one pass with some places written again afterwards (``encoding.Encoded``): ``once`` yields
    the pieces, then ``patches`` holds (offset, bytes) to write over them, or is None when the pieces must be written
    again from ``__iter__``."""

    patches: list[tuple[int, bytes]] | None

    def once(self) -> Iterator[bytes]: ...

    def __iter__(self) -> Iterator[bytes]: ...


def write_atomic(path: str | os.PathLike[str], data: bytes | Iterable[bytes] | Rewritable, *,
                 keep_backup: bool = False, make_parents: bool = False, action: str = "write") -> None:
    """Replace ``path`` by ``data`` (bytes, or an iterable of byte chunks, so a large output need not be held
    whole, or ``Rewritable`` pieces) atomically (see the module doc); ``make_parents`` creates missing folders.
    ``action`` words the error: ``cannot {action} {path}: {reason}``."""
    # (here: tempfile with random, and shutil with bz2, lzma and zlib, are 9.5 and 6 million instructions of
    # start-up, callgrind, for a check that reads)
    import shutil
    import tempfile

    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    temps: list[str] = []
    old_mode = _check_replaceable(target)
    try:
        if make_parents:
            folder.mkdir(parents=True, exist_ok=True)
        clean_stale_temps(target)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        temps.append(tmp)
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes | bytearray):
                fh.write(data)
            elif isinstance(data, Rewritable):
                _write_rewritable(fh, data)
            else:
                _write_chunks(fh, data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, old_mode if old_mode is not None else 0o666 & ~_umask())
        if keep_backup and old_mode is not None:
            fd_bak, bak_tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".bak.tmp")
            os.close(fd_bak)
            temps.append(bak_tmp)
            shutil.copyfile(target, bak_tmp)
            os.chmod(bak_tmp, old_mode)
            with open(bak_tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(bak_tmp, target.with_name(target.name + ".bak"))
            temps.remove(bak_tmp)
        os.replace(tmp, target)
        temps.remove(tmp)
        _fsync_dir(folder)
    except OSError as e:
        raise InspectorError(f"cannot {action} {target}: {e.strerror or e}") from None
    finally:
        for t in temps:
            with contextlib.suppress(OSError):
                os.unlink(t)


def _write_rewritable(fh: BinaryIO, data: Rewritable) -> None:
    """``data``'s pieces, then its patches over them; all again from its other pieces when it has none (for a
    model's wire format, ``encoding.Encoded``: when a length's estimated width was wrong)."""
    _write_chunks(fh, data.once())
    if data.patches is None:
        fh.seek(0)
        fh.truncate()
        _write_chunks(fh, data)
        return
    for offset, length in data.patches:
        fh.seek(offset)
        fh.write(length)


def _write_chunks(fh: BinaryIO, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` on a second thread while this one makes the next: the writes run in the kernel, and putting
    130 MB into the page cache (0.2-0.35 s of kernel time for a folded 100k-node export) then overlaps making them.
    At most a few chunks wait; an error on either side stops both, and the writer's error is raised here."""
    import queue
    import threading  # (here: a write of chunks; 2.4 million instructions of start-up, callgrind)

    pending: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
    failed: list[OSError] = []

    def writer() -> None:
        while (chunk := pending.get()) is not None:
            if not failed:
                try:
                    fh.write(chunk)
                except OSError as e:
                    failed.append(e)

    thread = threading.Thread(target=writer, name="write_atomic", daemon=True)
    thread.start()
    try:
        for chunk in chunks:
            if failed:
                break
            pending.put(chunk)
    finally:
        pending.put(None)
        thread.join()
    if failed:
        raise failed[0]


def _check_replaceable(target: Path) -> int | None:
    """Refuse a target that exists and is not a regular file (checked without following a symlink); the permission
    bits of the file there, None where there is none."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InspectorError(f"cannot write {target}: {e.strerror or e}") from None
    if stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    what = ("a folder; give a file name" if stat.S_ISDIR(st.st_mode)
            else "a symbolic link; give the real file" if stat.S_ISLNK(st.st_mode)
            else "not a regular file (a FIFO, device or socket)")
    raise InspectorError(f"refusing to write {target}: it is {what}")


def clean_stale_temps(target: str | os.PathLike[str], older_than: float = STALE_SECONDS) -> int:
    """Remove temporary files ``write_atomic`` left next to ``target`` (a killed write), when older than
    ``older_than`` seconds; only names of our own pattern (``.<name>.XXXXXXXX[.bak].tmp``) are touched.
    Returns how many were removed; best effort."""
    target = Path(target)
    folder = target.parent if str(target.parent) else Path(".")
    pattern = re.compile(re.escape(f".{target.name}.") + r"[A-Za-z0-9_]{8}(\.bak)?\.tmp")
    removed = 0
    now = time.time()
    try:
        names = [n for n in os.listdir(folder) if pattern.fullmatch(n)]
    except OSError:
        return 0
    for name in names:
        path = folder / name
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime >= older_than:
                os.unlink(path)
                removed += 1
    return removed


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    """Make the renames durable where the platform allows it (POSIX); best effort."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
