"""Tensors decoded without numpy: an in-file tensor of a plain numeric type read with ``struct``, equal to what
``onnx.numpy_helper.to_array`` gives (values and bytes; ``tests/test_startup.py`` checks it on every zoo and fixture
tensor). Importing numpy is 0.05-0.14 s of a command's start-up and the rest of onnx more, for the few small
constants a command on a small model reads; every layer that reads such a constant (the catalogue's canonical
values, literals, the diff's values) reads it here. Malformed tensors give None (the caller then decodes with
numpy, which says what is wrong)."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from onnx import TensorProto

# Element types whose values Python reads without numpy (import numpy is 0.05-0.14 s of a command's start-up, more
# than a small model's whole summary): their struct format, and the typed field numpy_helper.to_array reads when
# there is no raw_data (it reads the other types' typed fields with conversions of its own: numpy does those)
_STRUCT_TYPES: dict[int, str] = {
    TensorProto.FLOAT: "f", TensorProto.DOUBLE: "d", TensorProto.INT8: "b", TensorProto.UINT8: "B",
    TensorProto.INT16: "h", TensorProto.UINT16: "H", TensorProto.INT32: "i", TensorProto.UINT32: "I",
    TensorProto.INT64: "q", TensorProto.UINT64: "Q", TensorProto.BOOL: "?",
}
_TYPED_FIELDS: dict[int, str] = {TensorProto.FLOAT: "float_data", TensorProto.DOUBLE: "double_data",
                                 TensorProto.INT32: "int32_data", TensorProto.INT64: "int64_data"}


@dataclass(frozen=True, slots=True)
class PlainTensor:
    """An in-file tensor of a plain numeric type, as ``numpy_helper.to_array`` would decode it: its elements'
    little-endian bytes (what the array holds), struct format and shape."""

    data: bytes
    code: str  # struct format of one element
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.data) // struct.calcsize("<" + self.code)

    def first(self, n: int) -> list[int | float | bool]:
        """The first ``n`` elements in row-major order, as ``array.reshape(-1)[:n].tolist()`` gives them."""
        return list(struct.unpack_from(f"<{min(n, self.count)}{self.code}", self.data))

    def tolist(self) -> object:
        """The elements nested by the shape, as ``array.tolist()`` gives them (a scalar for shape ``()``)."""
        return _nested(self.first(self.count), self.shape)


def plain_tensor(t: TensorProto) -> PlainTensor | None:
    """The tensor decoded without numpy, when it is in the file, of a type in ``_STRUCT_TYPES`` and well formed;
    None otherwise (the caller decodes it with numpy, which also says what is wrong with it)."""
    code = _STRUCT_TYPES.get(t.data_type)
    if code is None or t.data_location == TensorProto.EXTERNAL or t.HasField("segment"):
        return None
    shape = tuple(int(d) for d in t.dims)
    if any(d < 0 for d in shape):
        return None
    count = math.prod(shape)
    if t.HasField("raw_data"):
        data = t.raw_data
        if len(data) != count * struct.calcsize("<" + code):
            return None
        return PlainTensor(data, code, shape)
    field = _TYPED_FIELDS.get(t.data_type)
    if field is None:
        return None
    values = getattr(t, field)
    if len(values) != count:
        return None
    return PlainTensor(struct.pack(f"<{count}{code}", *values), code, shape)


def _nested(flat: list[int | float | bool], shape: tuple[int, ...]) -> object:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = math.prod(shape[1:])
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]
