"""The one way this package writes a file: atomically, so that a crash or a full disk leaves the old file or the
new one, never half of either.

The data goes to a temporary file in the target's folder (``os.replace`` is atomic only within one file system),
is flushed and fsynced, gets the mode an ordinary file of this user gets (``0o666`` less the umask; ``mkstemp``
would leave ``0o600``), and is renamed over the target; the folder is fsynced where the platform allows it. Any
failure removes the temporary file and raises ``InspectorError`` with a one-line message. ``keep_backup`` first
copies the old file to ``<path>.bak`` (atomically too), as review sidecars want. Missing folders are created only
when asked (``make_parents``): for a report, a mistyped path is an error, not a new folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from inspector.core.errors import InspectorError

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike[str], data: bytes, *, keep_backup: bool = False,
                 make_parents: bool = False, action: str = "write") -> None:
    """Replace ``path`` by ``data`` atomically (see the module doc); ``make_parents`` creates missing folders.
    ``action`` words the error: ``cannot {action} {path}: {reason}``."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    temps: list[str] = []
    try:
        if make_parents:
            folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        temps.append(tmp)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        if keep_backup and target.exists():
            fd_bak, bak_tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".bak.tmp")
            os.close(fd_bak)
            temps.append(bak_tmp)
            shutil.copyfile(target, bak_tmp)
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
