"""A tensor's element type and size from its metadata alone: what every command reads of a model's tensors.

Split from ``tensors`` (a tensor's facts and values read from external data, for previews) for start-up: a command
that only counts and names tensors does not make that module's classes and pattern (about 5 million instructions,
callgrind, ``benchmarks/bench_startup.py --instructions``). Dims and type codes come from the model (untrusted):
negative dims count as empty and unknown codes get a placeholder name, never an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from onnx import TensorProto

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


def element_count(dims: Sequence[int]) -> int:
    """Elements of a tensor with these dims; 0 when any dim is negative (a hostile or damaged file), so that
    counts and sums are never negative (two negative dims must not multiply to a positive count)."""
    return math.prod(dims) if min(dims, default=0) >= 0 else 0


def tensor_size(t: TensorProto) -> tuple[int, int]:
    """``(elements, bytes)`` from metadata only; the cheap part of ``tensor_facts`` for whole-model sums."""
    numel = element_count(t.dims)
    return numel, (numel * TENSOR_BITS.get(t.data_type, 0) + 7) // 8
