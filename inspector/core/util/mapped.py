"""A file's bytes mapped read-only instead of read, where the kernel promises that they stay while they are parsed.

Why: reading a 168 MB export copies it into fresh memory, 41k page faults: 0.10-0.12 s, a third of ``onnx.load``,
and 168 MB more held during the parse. Protobuf (upb) parses a memoryview in place and copies what it keeps, so it
may parse the page cache's own pages through a read-only map: read plus parse 0.29-0.31 s -> 0.20-0.21 s on the 100k
Llama replica (best of three, interleaved), and nothing of the parsed model points into the map, which is closed right
after.

The threat is a file that shrinks while it is mapped: touching a page past its new end ends the process with SIGBUS,
where ``read`` would have returned short bytes and a one-line parse error. An exporter rewriting the model does just
that (``open(path, "wb")`` truncates it at once). So a file is mapped only under a read lease (``F_SETLEASE``): while
it is held, the kernel makes any other process's open for writing, and any truncate, wait (up to
``/proc/sys/fs/lease-break-time``, 45 s by default) until it is let go, and it refuses the lease when the file is
open for writing already. The kernel tells the holder that someone waits by a signal, SIGIO unless told otherwise,
whose default action ends the process: the lease asks for SIGURG, ignored by default. Where no lease is granted (a
file another user owns, a file open for writing, a file system or platform without leases) ``mapped`` yields None and
the caller reads the file. What is left: a disk's I/O error on a mapped page is SIGBUS too, where ``read`` reports EIO.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import signal
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # (not on Windows: no leases, files are read)
    fcntl = None  # type: ignore[assignment]

_SETLEASE = getattr(fcntl, "F_SETLEASE", None)
_SETSIG = getattr(fcntl, "F_SETSIG", None)
_SIGNAL = getattr(signal, "SIGURG", None)  # (default action: ignored)


@contextlib.contextmanager
def mapped(fd: int, size: int) -> Iterator[memoryview | None]:
    """The ``size`` bytes of the regular file open read-only at ``fd``, mapped under a read lease for the ``with``
    block (None where there is no lease: read the file instead). The view must not outlive the block."""
    if fcntl is None or _SETLEASE is None or _SETSIG is None or _SIGNAL is None or size <= 0:
        yield None
        return
    try:
        fcntl.fcntl(fd, _SETSIG, _SIGNAL)
        fcntl.fcntl(fd, _SETLEASE, fcntl.F_RDLCK)
    except OSError:  # EAGAIN: open for writing elsewhere; EACCES: another user's; EINVAL: no leases on this fs
        yield None
        return
    try:
        try:  # (a file that shrank before the lease: mapped past its end, it would be SIGBUS)
            region = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if os.fstat(fd).st_size == size else None
        except (OSError, ValueError):
            region = None
        if region is None:
            yield None
            return
        view = memoryview(region)
        try:
            yield view
        finally:
            with contextlib.suppress(BufferError):  # a view of it still held (a traceback's frame): unmapped with it
                view.release()
                region.close()
    finally:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, _SETLEASE, fcntl.F_UNLCK)


def leases_apply() -> bool:
    """Whether this platform has read leases (``mapped`` can map at all)."""
    return fcntl is not None and _SETLEASE is not None and _SETSIG is not None and _SIGNAL is not None

