"""torch dtypes as FX texts name them (``dtype: torch.int64``) and the ONNX element type each lowers to (``Cast.to``),
both ways: the evidence's ``dtype`` relation reads a call's ``dtype`` argument at a Cast, and a call recognised by
body template reads it back from the Cast (the first name of a type is torch's own: ``torch.float32``, not its
alias ``torch.float``). Written by hand: torch's dtypes and ONNX's ``TensorProto.DataType`` numbers, which neither
package maps to the other at run time without importing torch."""

from __future__ import annotations

ONNX_TYPES: dict[str, int] = {
    "torch.float32": 1, "torch.float": 1, "torch.uint8": 2, "torch.int8": 3, "torch.int16": 5, "torch.int32": 6,
    "torch.int64": 7, "torch.long": 7, "torch.bool": 9, "torch.float16": 10, "torch.half": 10, "torch.float64": 11,
    "torch.double": 11, "torch.complex64": 14, "torch.complex128": 15, "torch.bfloat16": 16}

_NAMES: dict[int, str] = {}
for _name, _code in ONNX_TYPES.items():
    _NAMES.setdefault(_code, _name)


def torch_dtype(code: object) -> str | None:
    """The torch dtype an ONNX element type number is, by its own name; None for a number no dtype lowers to."""
    return _NAMES.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
