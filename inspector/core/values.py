"""Types and shapes of values, from graph inputs, outputs and value_info (no shape inference is run)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

import onnx

from inspector.core.tensors import dtype_name


def _dim(d: onnx.TensorShapeProto.Dimension) -> str:
    if d.HasField("dim_value"):
        return str(d.dim_value)
    return d.dim_param or "?"


def type_text(tp: onnx.TypeProto, max_depth: int = 8) -> str:
    """``FLOAT[1,8,16]``, ``INT64[batch,?]``, ``seq(FLOAT[2])``; "" when the type is unknown.

    Iterative with a depth bound: a hostile model may nest sequence types arbitrarily deep.
    """
    opened: list[str] = []
    base = ""
    for _ in range(max_depth):
        which = tp.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            t = tp.tensor_type if which == "tensor_type" else tp.sparse_tensor_type
            base = dtype_name(t.elem_type) if t.elem_type else "?"
            if which == "sparse_tensor_type":
                base = "sparse " + base
            if t.HasField("shape"):
                base += "[" + ",".join(_dim(d) for d in t.shape.dim) + "]"
            break
        if which == "sequence_type":
            opened.append("seq(")
            tp = tp.sequence_type.elem_type
        elif which == "optional_type":
            opened.append("opt(")
            tp = tp.optional_type.elem_type
        elif which == "map_type":
            opened.append(f"map({dtype_name(tp.map_type.key_type)},")
            tp = tp.map_type.value_type
        else:
            base = "?" if opened else ""
            break
    else:
        base = "…"
    return "".join(opened) + base + ")" * len(opened)


def value_types(infos: Iterable[onnx.ValueInfoProto], initializers: Iterable[onnx.TensorProto] = ()) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in initializers:
        out[t.name] = f"{dtype_name(t.data_type)}[{','.join(str(d) for d in t.dims)}]"
    for v in infos:
        if v.HasField("type"):
            out[v.name] = type_text(v.type)
    return out


def graph_value_types(graph: onnx.GraphProto) -> dict[str, str]:
    return value_types(chain(graph.input, graph.value_info, graph.output), graph.initializer)  # read one by one
