"""Tensor facts from metadata, and tensor values read on demand from inside the model's folder only (for previews;
a tensor's type and size alone: ``tensor_sizes``).

Reading external data is the one place a model file makes us open another file, so it is careful: the location
must be relative and resolve inside the model's folder; the file is opened with ``O_NOFOLLOW | O_NONBLOCK`` (a
symlink as last component, a FIFO or a device never blocks or redirects the read) and what was opened is then
checked by ``fstat`` (a regular file) and by the path the kernel reports for the descriptor (still inside the
folder, so a symlink swapped into a parent folder between the check and the open is caught); offset and length
must be plain ASCII decimals within bounds; at most ``PREVIEW_LIMIT`` bytes are read, into one buffer that the
array then shares (no second copy for numpy's own types). Every failure is a one-line ``InspectorError``. A diff
compares two regions a chunk at a time (``same_external_bytes``), never a large one in a file of holes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from onnx import TensorProto

from inspector.core.model.tensor_sizes import TENSOR_BITS, dtype_name, element_count
from inspector.core.util.errors import InspectorError, UnsafePathError
from inspector.core.util.paths import open_regular

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class TensorFacts:
    """What is known about a tensor without reading its values."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    numel: int
    nbytes: int
    external: bool
    location: str | None


PREVIEW_LIMIT = 256 * 1024 * 1024  # bytes of tensor data a preview reads at most
_DECIMAL = re.compile(r"[0-9]{1,19}")  # ASCII digits only ("²".isdigit() is True), below 10**19


def parse_decimal(text: str) -> int | None:
    """A non-negative ASCII decimal of at most 19 digits (an external-data offset or length), else ``None``."""
    return int(text) if _DECIMAL.fullmatch(text) else None


def tensor_facts(t: TensorProto) -> TensorFacts:
    shape = tuple(int(d) for d in t.dims)
    numel = element_count(shape)
    external = t.data_location == TensorProto.EXTERNAL
    location = None
    length = None
    if external:
        for entry in t.external_data:
            if entry.key == "location":
                location = entry.value
            elif entry.key == "length":
                length = parse_decimal(entry.value)
    bits = TENSOR_BITS.get(t.data_type, 0)
    nbytes = length if length is not None else (numel * bits + 7) // 8
    return TensorFacts(t.name, dtype_name(t.data_type), shape, numel, nbytes, external, location)


def resolve_external_path(folder: Path, location: str) -> Path:
    """The file an external-data ``location`` names, refusing anything outside ``folder``."""
    if not location or "\x00" in location:
        raise UnsafePathError(f"external data location {location!r} is not a usable path")
    loc = Path(location)
    if loc.is_absolute() or loc.drive:
        raise UnsafePathError(
            f"external data location {location!r} is absolute; only files inside the model's folder are read")
    try:
        root = folder.resolve()
        target = (root / loc).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # symlink loops, names too long, EINVAL
        raise UnsafePathError(f"external data location {location!r} cannot be resolved: "
                              f"{getattr(e, 'strerror', None) or e}") from None
    if not _inside(root, target):
        raise UnsafePathError(f"external data location {location!r} points outside the model's folder")
    return target


def _inside(root: Path, target: Path) -> bool:
    return target == root or root in target.parents


# numpy's own little-endian types: their bytes become the array without a copy
_NUMPY_TYPES: dict[int, str] = {
    TensorProto.FLOAT: "<f4", TensorProto.DOUBLE: "<f8", TensorProto.FLOAT16: "<f2", TensorProto.INT8: "i1",
    TensorProto.UINT8: "u1", TensorProto.INT16: "<i2", TensorProto.UINT16: "<u2", TensorProto.INT32: "<i4",
    TensorProto.UINT32: "<u4", TensorProto.INT64: "<i8", TensorProto.UINT64: "<u8", TensorProto.BOOL: "?",
    TensorProto.COMPLEX64: "<c8", TensorProto.COMPLEX128: "<c16",
}


def read_tensor(t: TensorProto, folder: Path, max_bytes: int = PREVIEW_LIMIT) -> np.ndarray:
    """Decode a tensor's values, reading external data only from inside ``folder`` (see the module doc)."""
    import numpy as np
    from onnx import numpy_helper

    if t.data_location != TensorProto.EXTERNAL:
        try:
            return np.asarray(numpy_helper.to_array(t))
        except Exception as e:
            raise InspectorError(f"tensor {t.name!r}: cannot decode: {' '.join(str(e).split())[:200]}") from None
    info = {e.key: e.value for e in t.external_data}
    root_folder = Path(folder)
    path = resolve_external_path(root_folder, info.get("location", ""))
    facts = tensor_facts(t)
    offset = parse_decimal(info.get("offset", "0"))
    length = parse_decimal(info["length"]) if "length" in info else facts.nbytes
    if offset is None or length is None:
        raise InspectorError(f"tensor {t.name!r}: external data offset/length is not a plain decimal number "
                             f"(offset {info.get('offset', '0')[:30]!r}, length {info.get('length', '')[:30]!r})")
    if length > max_bytes:
        raise InspectorError(f"tensor {t.name!r}: {length:,} bytes is more than the preview limit "
                             f"({max_bytes:,} bytes)")
    raw = _read_region(t.name, root_folder, path, offset, length)
    try:
        code = _NUMPY_TYPES.get(t.data_type)
        if code is not None:
            return np.frombuffer(raw, dtype=np.dtype(code)).reshape(facts.shape)
        copy = TensorProto()
        copy.CopyFrom(t)
        del copy.external_data[:]
        copy.data_location = TensorProto.DEFAULT
        copy.raw_data = bytes(raw)
        return np.asarray(numpy_helper.to_array(copy))
    except Exception as e:
        raise InspectorError(f"tensor {t.name!r}: cannot decode external data: "
                             f"{' '.join(str(e).split())[:200]}") from None


COMPARED_CHUNK = 16 * 1024 * 1024  # bytes of each side's external data compared at a time (``same_external_bytes``)


class ExternalFiles:
    """The external-data files of one model's folder, each resolved, opened and checked once (as ``_open_region``
    checks: a regular file inside the folder, never through a final link), for a diff that compares thousands of
    weights held in one file: resolving both paths and opening both files per weight took 3.3 s of a diff of two
    stripped 100k-node replicas in two folders (10,940 weights, 0.3 ms each). At most ``KEPT_OPEN`` files stay open
    (a hostile model's one file per weight must not run out of descriptors); ``close`` closes them."""

    KEPT_OPEN = 32

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._open: dict[str, tuple[int, os.stat_result]] = {}  # location -> descriptor and its stat, oldest first
        self._unreadable: set[str] = set()

    def file(self, name: str, location: str) -> tuple[int, os.stat_result] | None:
        """The open file ``location`` names (``name``: the tensor that reads it, for errors); None if it cannot be
        read from inside the folder."""
        got = self._open.get(location)
        if got is not None or location in self._unreadable:
            return got
        try:
            fd = _open_inside(name, self.folder, resolve_external_path(self.folder, location))
            got = (fd, os.fstat(fd))
        except (InspectorError, OSError):
            self._unreadable.add(location)
            return None
        if len(self._open) >= self.KEPT_OPEN:
            oldest = next(iter(self._open))
            os.close(self._open.pop(oldest)[0])
        self._open[location] = got
        return got

    def close(self) -> None:
        for fd, _st in self._open.values():
            os.close(fd)
        self._open.clear()


def same_external_bytes(t: TensorProto, files_t: ExternalFiles, u: TensorProto, files_u: ExternalFiles) -> bool | None:
    """Whether two tensors held as external data hold the same bytes, read from inside each model's folder as
    ``read_tensor`` reads them, a chunk at a time, stopping at the first chunk that differs; None when either cannot
    be read (the caller says so, and compares no further). Why: two exports of one model name their weights files
    after themselves (``a.onnx.data``, ``b.onnx.data``), so their references differ however equal the weights are:
    compared by reference alone, every weight of CLIP saved beside another name read "re-valued". One file at one
    place is not read; nor is a region of more than ``SPARSE_CHECKED`` bytes in a file that is mostly holes (a hostile
    model's terabyte of holes would read as zeros for minutes): None."""
    regions = []
    for tensor, files in ((t, files_t), (u, files_u)):
        info = {e.key: e.value for e in tensor.external_data}
        offset = parse_decimal(info.get("offset", "0"))
        length = parse_decimal(info["length"]) if "length" in info else tensor_facts(tensor).nbytes
        if offset is None or length is None:
            return None
        opened = files.file(tensor.name, info.get("location", ""))
        if opened is None or offset + length > opened[1].st_size:
            return None
        regions.append((opened, offset, length))
    ((fd_t, one), at_t, length), ((fd_u, other), at_u, length_u) = regions
    if length != length_u:
        return False
    if (one.st_dev, one.st_ino, at_t) == (other.st_dev, other.st_ino, at_u):
        return True  # (one file at one place, whatever each side calls it: not read)
    if length > SPARSE_CHECKED and (_sparse(one) or _sparse(other)):
        return None  # (a hostile model's terabyte of holes would be read as zeros: not compared)
    done = 0
    try:
        while done < length:
            step = min(COMPARED_CHUNK, length - done)
            a, b = os.pread(fd_t, step, at_t + done), os.pread(fd_u, step, at_u + done)
            if len(a) != step or len(b) != step:
                return None  # (a file that became shorter while it was read)
            if a != b:
                return False
            done += step
    except OSError:
        return None
    return True


SPARSE_CHECKED = 64 * 1024 * 1024  # bytes from which a region compared must lie in a file that is not mostly holes


def _sparse(st: os.stat_result) -> bool:
    """Whether a file holds far fewer blocks than its size says (mostly holes): no exporter writes one."""
    blocks = getattr(st, "st_blocks", None)
    return blocks is not None and blocks * 512 < st.st_size // 2


def _open_inside(name: str, folder: Path, path: Path) -> int:
    """A descriptor of ``path``: a regular file inside ``folder`` only, never through a final symbolic link
    (``paths.open_regular``), what was opened checked to lie inside ``folder``."""
    try:
        fd = open_regular(path, follow_links=False, what="external data")
    except FileNotFoundError:
        raise InspectorError(f"tensor {name!r}: cannot read {path.name}: no such file") from None
    except InspectorError as e:
        why = "is not a regular file" if "not a regular file" in str(e) else "is a symbolic link or unreadable"
        raise UnsafePathError(f"tensor {name!r}: {path.name} {why}") from None
    try:
        _check_opened_inside(name, fd, folder, path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_region(name: str, folder: Path, path: Path, offset: int, length: int) -> int:
    """A descriptor of ``path`` holding ``length`` bytes at ``offset`` (``_open_inside``)."""
    fd = _open_inside(name, folder, path)
    try:
        if offset + length > os.fstat(fd).st_size:
            raise InspectorError(f"tensor {name!r}: external data runs past the end of {path.name}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_region(name: str, folder: Path, path: Path, offset: int, length: int) -> bytearray:
    """``length`` bytes at ``offset`` of ``path``, from a regular file inside ``folder`` only (``_open_region``)."""
    fd = _open_region(name, folder, path, offset, length)
    try:
        buf = bytearray(length)
        view = memoryview(buf)
        done = 0
        while done < length:
            n = os.preadv(fd, [view[done:done + (64 << 20)]], offset + done) if hasattr(os, "preadv") \
                else _pread_into(fd, view[done:done + (64 << 20)], offset + done)
            if n <= 0:
                raise InspectorError(f"tensor {name!r}: {path.name} became shorter while it was read")
            done += n
        return buf
    except OSError as e:
        raise InspectorError(f"tensor {name!r}: cannot read {path.name}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    data = os.pread(fd, len(view), offset)
    view[:len(data)] = data
    return len(data)


def _check_opened_inside(name: str, fd: int, folder: Path, path: Path, st: os.stat_result) -> None:
    """What the descriptor really is must lie inside ``folder`` (a symlink swapped in after
    ``resolve_external_path`` would otherwise redirect the read)."""
    try:
        root = folder.resolve()
    except (OSError, RuntimeError):
        raise UnsafePathError(f"tensor {name!r}: the model's folder cannot be resolved; not read") from None
    proc = Path(f"/proc/self/fd/{fd}")
    try:
        real = Path(os.readlink(proc))
    except OSError:
        real = None
    if real is not None:
        if not _inside(root, real):
            raise UnsafePathError(f"tensor {name!r}: {path.name} turned out to be outside the model's folder")
        return
    # no /proc: the file the checked path names now must be the one opened, and still resolve inside
    try:
        now = os.stat(path, follow_symlinks=False)
        inside = _inside(root, path.resolve())
    except (OSError, RuntimeError):
        now, inside = None, False
    if now is None or not inside or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        raise UnsafePathError(f"tensor {name!r}: {path.name} changed while it was opened; not read")
