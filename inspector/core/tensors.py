"""Tensor facts from metadata, and tensor values read on demand from inside the model's folder only."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

from inspector.core.errors import InspectorError, UnsafePathError

# Bytes per element; 4-bit and 2-bit types pack two or four values a byte.
TENSOR_BITS: dict[int, int] = {
    TensorProto.FLOAT: 32, TensorProto.UINT8: 8, TensorProto.INT8: 8, TensorProto.UINT16: 16,
    TensorProto.INT16: 16, TensorProto.INT32: 32, TensorProto.INT64: 64, TensorProto.BOOL: 8,
    TensorProto.FLOAT16: 16, TensorProto.DOUBLE: 64, TensorProto.UINT32: 32, TensorProto.UINT64: 64,
    TensorProto.COMPLEX64: 64, TensorProto.COMPLEX128: 128, TensorProto.BFLOAT16: 16,
    TensorProto.FLOAT8E4M3FN: 8, TensorProto.FLOAT8E4M3FNUZ: 8, TensorProto.FLOAT8E5M2: 8,
    TensorProto.FLOAT8E5M2FNUZ: 8, TensorProto.UINT4: 4, TensorProto.INT4: 4,
}


def dtype_name(elem_type: int) -> str:
    """``FLOAT`` style name of an ONNX element type, tolerant of unknown codes."""
    try:
        return str(TensorProto.DataType.Name(elem_type))
    except ValueError:
        return f"dtype{elem_type}"


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


def tensor_size(t: TensorProto) -> tuple[int, int]:
    """``(elements, bytes)`` from metadata only; the cheap part of ``tensor_facts`` for whole-model sums."""
    numel = max(math.prod(t.dims), 0)
    return numel, (numel * TENSOR_BITS.get(t.data_type, 0) + 7) // 8


def tensor_facts(t: TensorProto) -> TensorFacts:
    shape = tuple(int(d) for d in t.dims)
    numel = 1
    for d in shape:
        numel *= max(d, 0)
    external = t.data_location == TensorProto.EXTERNAL
    location = None
    length = None
    if external:
        for entry in t.external_data:
            if entry.key == "location":
                location = entry.value
            elif entry.key == "length" and entry.value.isdigit():
                length = int(entry.value)
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
    root = folder.resolve()
    target = (root / loc).resolve()
    if target != root and root not in target.parents:
        raise UnsafePathError(f"external data location {location!r} points outside the model's folder")
    return target


def read_tensor(t: TensorProto, folder: Path, max_bytes: int = 1 << 30) -> np.ndarray:
    """Decode a tensor's values, reading external data only from inside ``folder``."""
    if t.data_location != TensorProto.EXTERNAL:
        try:
            return np.asarray(onnx.numpy_helper.to_array(t))
        except Exception as e:
            raise InspectorError(f"tensor {t.name!r}: cannot decode: {e}") from None
    info = {e.key: e.value for e in t.external_data}
    path = resolve_external_path(folder, info.get("location", ""))
    facts = tensor_facts(t)
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else facts.nbytes
    except ValueError:
        raise InspectorError(f"tensor {t.name!r}: bad external data offset/length") from None
    if offset < 0 or length < 0:
        raise InspectorError(f"tensor {t.name!r}: negative external data offset/length")
    if length > max_bytes:
        raise InspectorError(f"tensor {t.name!r}: {length} bytes is more than the preview limit")
    try:
        size = os.path.getsize(path)
        if offset + length > size:
            raise InspectorError(f"tensor {t.name!r}: external data runs past the end of {path.name}")
        with open(path, "rb") as f:
            f.seek(offset)
            raw = f.read(length)
    except OSError as e:
        raise InspectorError(f"tensor {t.name!r}: cannot read {path.name}: {e.strerror or e}") from None
    copy = TensorProto()
    copy.CopyFrom(t)
    del copy.external_data[:]
    copy.data_location = TensorProto.DEFAULT
    copy.raw_data = raw
    try:
        return np.asarray(onnx.numpy_helper.to_array(copy))
    except Exception as e:
        raise InspectorError(f"tensor {t.name!r}: cannot decode external data: {e}") from None
