"""Types and shapes of values, from graph inputs, outputs and value_info (no shape inference is run)."""

from __future__ import annotations

from collections.abc import Iterable

import onnx

from inspector.core.tensors import dtype_name


def type_text(t: onnx.TypeProto) -> str:
    """``FLOAT[1,8,batch]`` for tensors; a short form for sequences, maps and optionals."""
    which = t.WhichOneof("value")
    if which == "tensor_type" or which == "sparse_tensor_type":
        tt = t.tensor_type if which == "tensor_type" else t.sparse_tensor_type
        dtype = dtype_name(tt.elem_type) if tt.elem_type else "?"
        if not tt.HasField("shape"):
            return dtype
        dims = []
        for d in tt.shape.dim:
            dims.append(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?"))
        return f"{dtype}[{','.join(dims)}]"
    if which == "sequence_type":
        return f"seq({type_text(t.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({type_text(t.optional_type.elem_type)})"
    if which == "map_type":
        return f"map({dtype_name(t.map_type.key_type)},{type_text(t.map_type.value_type)})"
    return "?"


def value_types(infos: Iterable[onnx.ValueInfoProto], initializers: Iterable[onnx.TensorProto] = ()) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in initializers:
        out[t.name] = f"{dtype_name(t.data_type)}[{','.join(str(d) for d in t.dims)}]"
    for v in infos:
        if v.HasField("type"):
            out[v.name] = type_text(v.type)
    return out


def graph_value_types(graph: onnx.GraphProto) -> dict[str, str]:
    return value_types((*graph.input, *graph.value_info, *graph.output), graph.initializer)
