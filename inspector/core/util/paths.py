"""Every decision about where this tool reads and writes files, in one place: where a model's review sidecar,
its lock and its backup live; which paths an output may never be; how an untrusted file is opened.

Threats: an output option naming an input (``diff A B -o A/model.onnx`` replaced the model; ``-o
model.onnx.review.json`` replaced the reviews), directly or through a hard or symbolic link; a sidecar that is a
symbolic link (its notes were read from ``../outside/private.json``); a FIFO swapped in for a model after it was
checked (the open blocked forever); reviews split between two sidecars because one reader resolved a link and
another did not.

The rules:

- A model's sidecar is ``<model as named>.review.json``, beside the path the user gave, made absolute but with
  symbolic links NOT resolved: the app, ``report``, ``check``, the API and folder diffs name the same file for the
  same path, the reviews of a linked model stay in the folder that was opened, and a link to a shared model in two
  folders keeps two sets of reviews (one per place it is reviewed from). Its lock is ``<sidecar>.lock``, its
  backup ``<sidecar>.bak``, and an atomic write's temporary files ``.<name>.XXXXXXXX[.bak].tmp`` beside it.
- An output may be none of: an input model, its external-data files, its sidecar, lock, backup or temporary
  files; compared by path with links resolved and by device and inode (hard links), for every command and for the
  app's exports. A folder, FIFO, device or socket is never an output either (``fileio.write_atomic``).
- An untrusted file is opened non-blocking (a FIFO never blocks), optionally without following a final symbolic
  link, and then the OPEN descriptor is checked to be a regular file (``fstat``): nothing checked by name can be
  swapped before the open.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from inspector.core.util.errors import InspectorError

SIDECAR_SUFFIX = ".review.json"
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def named(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute as the user named it: ``..`` folded, symbolic links kept (the sidecar rule)."""
    return Path(os.path.abspath(os.fspath(path)))


def sidecar_path(model: str | os.PathLike[str]) -> Path:
    """Where the reviews of the model at ``model`` live: beside the path as named (see the module's rules)."""
    p = named(model)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def lock_path(sidecar: Path) -> Path:
    return sidecar.with_name(sidecar.name + ".lock")


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + ".bak")


def model_files(model: str | os.PathLike[str], external: Iterable[str] = ()) -> list[Path]:
    """The files that belong to one input model and that no output may replace: the model, its sidecar, the
    sidecar's lock and backup, and ``external`` (the model's external-data locations, relative to its folder)."""
    p = named(model)
    side = sidecar_path(p)
    out = [p, side, lock_path(side), backup_path(side)]
    out += [p.parent / loc for loc in external if loc and "\x00" not in loc]
    return out


def _temp_of(out: Path, protected: Path) -> bool:
    """``out`` is one of an atomic write's temporary files for ``protected`` (``.<name>.XXXXXXXX[.bak].tmp``)."""
    name = out.name
    return (out.parent == protected.parent and name.startswith(f".{protected.name}.")
            and name.endswith(".tmp"))


def file_id(path: Path, follow: bool = True) -> tuple[int, int] | None:
    """``(device, inode)`` of ``path``, None when it cannot be stat-ed."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def check_output(output: str | os.PathLike[str], protected: Iterable[Path], what: str = "the output") -> None:
    """Refuse ``output`` when it is (by name, by resolved path, or by device and inode) one of ``protected`` or
    a temporary file of one: ``InspectorError`` with one line naming what would have been replaced."""
    out = named(output)
    try:
        resolved = out.resolve()
    except (OSError, RuntimeError) as e:
        raise InspectorError(f"cannot write {out}: {getattr(e, 'strerror', None) or e}") from None
    out_id = file_id(out)
    for p in protected:
        try:
            same = p == out or p.resolve() == resolved
        except (OSError, RuntimeError):
            same = p == out
        if (same or (out_id is not None and file_id(p) == out_id) or _temp_of(out, p)
                or _temp_of(resolved, p)):
            raise InspectorError(f"refusing to overwrite {out} (an input model, its external data or its reviews) "
                                 f"with {what}; choose another output file")


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = True, what: str = "a file") -> int:
    """A descriptor of the regular file at ``path``, opened non-blocking (and, without ``follow_links``, refusing a
    symbolic link at ``path``), checked with ``fstat`` after the open. Raises ``FileNotFoundError`` when nothing is
    there (callers decide what a missing file means) and ``InspectorError`` with one line otherwise."""
    flags = _FLAGS | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        if not follow_links and os.path.islink(path):
            raise InspectorError(f"{path}: a symbolic link, not followed for {what}") from None
        if isinstance(e, IsADirectoryError):
            raise InspectorError(f"{path}: is a directory, not {what}") from None
        raise InspectorError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InspectorError(f"{path}: is a directory, not {what}")
        if not stat.S_ISREG(mode):
            raise InspectorError(f"{path}: not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], limit: int, *, follow_links: bool = True,
                 what: str = "a file") -> bytes:
    """The bytes of the regular file at ``path`` (``open_regular``), at most ``limit``: a longer file raises
    ``InspectorError`` after ``limit + 1`` bytes were read (its size is checked on the open descriptor first)."""
    fd = open_regular(path, follow_links=follow_links, what=what)
    try:
        if os.fstat(fd).st_size > limit:
            raise InspectorError(f"{path}: larger than {limit} bytes")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise InspectorError(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise InspectorError(f"{path}: larger than {limit} bytes")
    return b"".join(chunks)
