"""The few ONNX messages fold makes itself (attributes, Constant nodes, opset ids), built on onnx's protobuf classes.

Why not ``onnx.helper``: it exists only with the whole onnx package, whose ``__init__`` imports numpy (and starts
its BLAS threads), the checker, shape inference and the operator schemas; a command registers onnx with its protobuf
classes alone (``core/util/onnxpkg.py``) and pays for the rest only where it uses it. Fold used ``helper`` for these
three kinds of message only, and so paid for all of onnx on every run. Each function here makes, byte for byte, what
``helper.make_attribute``, ``helper.make_node`` and ``helper.make_opsetid`` make for the values fold passes
(``tests/test_fold_messages.py`` compares them on each kind of value).
"""

from __future__ import annotations

from collections.abc import Sequence

from onnx import AttributeProto, NodeProto, OperatorSetIdProto, TensorProto

AttributeValue = int | float | str | bytes | TensorProto | Sequence[int] | Sequence[float]


def attribute(name: str, value: AttributeValue, kind: AttributeProto.AttributeType | None = None) -> AttributeProto:
    """``helper.make_attribute(name, value, attr_type=kind)`` for the values fold passes: a bool or an int (INT), a
    float (FLOAT), text (STRING, UTF-8), a tensor (TENSOR, copied), a list of ints (INTS) or of numbers (FLOATS);
    ``kind`` names the type of an empty list, and must agree with the value's. TypeError for any other value."""
    attr = AttributeProto(name=name)
    if isinstance(value, int):
        attr.i, attr.type = int(value), AttributeProto.INT
    elif isinstance(value, float):
        attr.f, attr.type = value, AttributeProto.FLOAT
    elif isinstance(value, (str, bytes)):
        attr.s, attr.type = value.encode() if isinstance(value, str) else value, AttributeProto.STRING
    elif isinstance(value, TensorProto):
        attr.t.CopyFrom(value)
        attr.type = AttributeProto.TENSOR
    elif isinstance(value, (list, tuple)):
        if kind is None:
            if not value or not all(isinstance(v, (int, float)) for v in value):
                raise TypeError(f"attribute {name!r}: no list type for {value!r}")
            kind = AttributeProto.INTS if all(isinstance(v, int) for v in value) else AttributeProto.FLOATS
        if kind == AttributeProto.INTS:
            attr.ints.extend(value)  # (protobuf rejects a float here, as helper's does)
        elif kind == AttributeProto.FLOATS:
            attr.floats.extend(value)
        else:
            raise TypeError(f"attribute {name!r}: fold makes no list of type {kind}")
        attr.type = kind
    else:
        raise TypeError(f"attribute {name!r}: fold makes no attribute of {type(value).__name__}")
    if kind is not None and attr.type != kind:
        raise TypeError(f"attribute {name!r}: {value!r} is not of type {kind}")
    return attr


def constant_node(output: str, tensor: TensorProto) -> NodeProto:
    """``helper.make_node("Constant", [], [output], value=tensor)``."""
    return NodeProto(op_type="Constant", output=[output], attribute=[attribute("value", tensor)])


def opset_id(domain: str, version: int) -> OperatorSetIdProto:
    """``helper.make_opsetid(domain, version)``."""
    return OperatorSetIdProto(domain=domain, version=version)
