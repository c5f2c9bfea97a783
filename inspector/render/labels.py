"""Node and constant text for boxes: the operator label, literal attributes in one line, a small tensor's values.

Labels are raw model text (names, attribute strings): whoever draws them escapes them.
"""

from __future__ import annotations

import onnx

from inspector.core.bodies.literals import attribute_value
from inspector.core.model.graph import is_small_constant
from inspector.core.model.tensor_sizes import dtype_name
from inspector.core.specialise.categories import value_text
from inspector.core.util.floats import float_text
from inspector.core.util.plain_tensors import plain_tensor

STANDARD_DOMAINS = ("", "ai.onnx")


def op_label(node: onnx.NodeProto) -> str:
    """``Transpose``, or ``domain.Op`` outside the standard domain."""
    return node.op_type if node.domain in STANDARD_DOMAINS else f"{node.domain}.{node.op_type}"


def attrs_text(node: onnx.NodeProto, limit: int = 80) -> str:
    """A node's literal attributes in one short line (``perm=[0,2,1,3], axis=-1``); subgraphs are left out and
    attributes bound to a function attribute show ``@name``."""
    parts = []
    for a in node.attribute:
        if a.ref_attr_name:
            parts.append(f"{a.name}=@{a.ref_attr_name}")
        elif a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            value, _key = attribute_value(a)
            # as the signature panel writes a value (``value_text``: a float in its fewest digits, a tensor too large
            # to show whole as type, first values and digest; the box read a dict's repr), lists without spaces
            text = value if isinstance(value, str) else value_text(value, limit)
            parts.append(f"{a.name}={text}".replace(", ", ",") if isinstance(value, list | dict)
                         else f"{a.name}={text}")
        if sum(len(p) + 2 for p in parts) > limit:
            break
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def constant_text(t: onnx.TensorProto, width: int = 48) -> str:
    """``FLOAT[] = 0.35355338``, ``INT64[3] = 1, 8, 16``: the type and (for small inline tensors) the values, a float
    as the signature panel and the texts write it (``float_text``: ``1.0``, ``0.7978846``; 6 digits read ``1`` and
    ``0.797885``)."""
    head = f"{dtype_name(t.data_type)}[{','.join(str(d) for d in t.dims)}]"
    if not is_small_constant(t):
        return head
    plain = plain_tensor(t)  # (numpy, and with it the rest of onnx, only for the other types: a report's start-up)
    if plain is not None:
        values = plain.first(9)
    else:
        from onnx import numpy_helper

        try:
            values = numpy_helper.to_array(t).reshape(-1).tolist()
        except Exception:
            return head
    parts = [float_text(x) if isinstance(x, float) else str(x) for x in values[:8]]
    text = f"{head} = {', '.join(parts)}" + (", …" if len(values) > 8 else "")
    return text if len(text) <= width else text[: width - 1] + "…"
