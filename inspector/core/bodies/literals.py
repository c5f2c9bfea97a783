"""Literal values in bodies: attribute values and constants, as comparable, JSON-friendly Python values."""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field
from typing import Any

import onnx
from onnx import AttributeProto

from inspector.core.bodies.body import Body, walk_body
from inspector.core.model.tensor_sizes import dtype_name
from inspector.core.util.digest import blake2b
from inspector.core.util.floats import float32, float_text

BodyPath = tuple[int | str, ...]
LiteralKind = typing.Literal[
    "attribute",  # a literal attribute of a node
    "constant",  # the value of a Constant node
    "initializer",  # a small initializer read by the body (baked in by trace_only code)
    "parametric",  # an attribute bound through ref_attr_name: its value is at each call site
]
MAX_SHOWN_ELEMENTS = 16


@dataclass(frozen=True, slots=True)
class Literal:
    """One literal slot of a body: ``(path, attribute)`` or a constant input, and its value."""

    path: BodyPath  # node path in the body; () for a constant input
    op_type: str
    name: str  # attribute name, or the constant's (initializer) name
    kind: LiteralKind
    value: Any  # JSON-friendly value (None for parametric)
    key: str  # canonical text used to compare values across members
    ref: str | None = None  # the function attribute a parametric attribute refers to
    uses: int = 1  # how many node inputs in the body read this constant (the SDPA scale is read twice)
    # for a constant input: the first node reading it, at any depth (inside an If branch); not part of its identity
    reader: BodyPath = field(default=(), compare=False)

    @property
    def slot(self) -> tuple[BodyPath, str, str]:
        """Where the literal sits; stable across members of one template (names of constants excluded)."""
        return (self.path, self.kind if self.kind == "initializer" else self.name, self.op_type)


def attribute_value(attr: AttributeProto) -> tuple[Any, str]:
    """``(value, canonical key)`` of a literal attribute (graph attributes are not literals)."""
    t = attr.type
    if t == AttributeProto.INT:
        return int(attr.i), f"i:{attr.i}"
    if t == AttributeProto.FLOAT:
        return _float(attr.f), f"f:{_fkey(attr.f)}"
    if t == AttributeProto.STRING:
        s = attr.s.decode("utf-8", "replace")
        return s, f"s:{s!r}"
    if t == AttributeProto.INTS:
        v = [int(x) for x in attr.ints]
        return v, f"is:{v}"
    if t == AttributeProto.FLOATS:
        fl = [_float(x) for x in attr.floats]
        return fl, "fs:" + ",".join(_fkey(x) for x in attr.floats)
    if t == AttributeProto.STRINGS:
        ss = [x.decode("utf-8", "replace") for x in attr.strings]
        return ss, f"ss:{ss!r}"
    if t == AttributeProto.TENSOR:
        return tensor_value(attr.t)
    if t == AttributeProto.SPARSE_TENSOR:
        digest = blake2b(attr.sparse_tensor.SerializeToString(), digest_size=8).hexdigest()
        return {"sparse": True}, f"sp:{digest}"
    if t == AttributeProto.TYPE_PROTO:
        return "type", "tp:" + blake2b(attr.tp.SerializeToString(), digest_size=8).hexdigest()
    if t == AttributeProto.TYPE_PROTOS:
        return "types", "tps:" + blake2b(b"".join(x.SerializeToString() for x in attr.type_protos),
                                                   digest_size=8).hexdigest()
    if t == AttributeProto.TENSORS:
        keys = [tensor_value(x)[1] for x in attr.tensors]
        return {"tensors": len(keys)}, "ts:" + "|".join(keys)
    return None, f"?{t}"


def tensor_value(t: onnx.TensorProto) -> tuple[Any, str]:
    """A tensor as a value: small tensors as (nested) lists, larger ones summarised; key from a content digest."""
    dims = [int(d) for d in t.dims]
    from inspector.core.util.plain_tensors import plain_tensor  # (here: a tensor read; start-up)

    plain = plain_tensor(t)  # without numpy (start-up): the same values and bytes
    if plain is not None:
        digest = blake2b(plain.data, digest_size=8).hexdigest()
        key = f"t:{t.data_type}:{dims}:{digest}"
        if plain.count <= MAX_SHOWN_ELEMENTS:
            return _jsonable(plain.tolist()), key
        return {"dtype": dtype_name(t.data_type), "shape": dims, "first": _jsonable(plain.first(8)),
                "digest": digest}, key
    import numpy as np
    from onnx import numpy_helper

    try:
        arr = np.asarray(numpy_helper.to_array(t)) if t.data_location != onnx.TensorProto.EXTERNAL else None
    except Exception:
        arr = None
    if arr is None:
        digest = blake2b(t.SerializeToString(), digest_size=8).hexdigest()
        return {"dtype": dtype_name(t.data_type), "shape": dims}, f"t:{t.data_type}:{dims}:{digest}"
    digest = blake2b(np.ascontiguousarray(arr).tobytes(), digest_size=8).hexdigest()
    key = f"t:{t.data_type}:{dims}:{digest}"
    if arr.size <= MAX_SHOWN_ELEMENTS:
        value: Any = _jsonable(arr.tolist())
    else:
        flat = arr.reshape(-1)
        value = {"dtype": dtype_name(t.data_type), "shape": dims,
                 "first": _jsonable(flat[:8].tolist()), "digest": digest}
    return value, key


def tensor_summary_text(v: Any, width: int = 0) -> str | None:
    """A tensor too large to show whole, as ``tensor_value`` summarises it (dtype, shape, first values, digest), on
    one line: ``FLOAT[32] [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, …] #08c86c4a``, with fewer first values where
    ``width`` would be passed; None for any other value. The one text of such a value wherever one is shown (the
    summary printed its JSON cut at 40 characters, ``{"dtype": "FLOAT", "shape": [32], "firs…``, and check its
    repr)."""
    if not isinstance(v, dict) or "dtype" not in v or not isinstance(v.get("shape"), list):
        return None
    head = f"{v['dtype']}[{', '.join(str(d) for d in v['shape'])}]"
    tail = f" #{str(v['digest'])[:8]}" if v.get("digest") else ""
    first = v.get("first")
    values = [float_text(x) if isinstance(x, float) else str(x) for x in first] if isinstance(first, list) else []
    while values:
        text = f"{head} [{', '.join(values)}, …]{tail}"
        if not width or len(text) <= width:
            return text
        values.pop()
    return head + tail


def body_literals(body: Body) -> list[Literal]:
    """Every literal of a body, in a fixed order; constants (small initializers) first."""
    out: list[Literal] = []
    readers: dict[str, tuple[BodyPath, str]] = {}
    uses: dict[str, int] = {}
    for path, node in walk_body(body.nodes):  # subgraphs too: an If branch reads the constants it captures
        for name in node.input:
            readers.setdefault(name, (path, node.op_type))
            uses[name] = uses.get(name, 0) + 1
    for name, init in body.constants.items():
        value, key = tensor_value(init)
        where, op = readers.get(name, ((), ""))
        out.append(Literal((), op, name, "initializer", value, key, uses=uses.get(name, 0), reader=where))
    for path, node in walk_body(body.nodes):
        for attr in node.attribute:
            if attr.ref_attr_name:
                out.append(Literal(path, node.op_type, attr.name, "parametric", None, f"@{attr.ref_attr_name}",
                                   attr.ref_attr_name))
                continue
            if attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                continue
            value, key = attribute_value(attr)
            is_constant = node.op_type == "Constant" and node.domain in ("", "ai.onnx")
            kind: LiteralKind = "constant" if is_constant else "attribute"
            n_uses = sum(uses.get(o, 0) for o in node.output) if kind == "constant" else 1
            out.append(Literal(path, node.op_type, attr.name, kind, value, key, uses=n_uses))
    return out


def _float(x: float) -> float | str:
    x = float32(x)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return float(f"{x:.8g}")


def _fkey(x: float) -> str:
    return f"{float32(x):.8g}"


def _jsonable(v: Any) -> Any:
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (int, str)) or v is None:  # (bool is an int)
        return v
    import numpy as np  # only a numpy-decoded tensor's elements are anything else

    if isinstance(v, (np.generic,)):
        return v.item()
    return v
