"""Repair string fields that are not valid UTF-8, which protobuf hands back as ``bytes``.

Damaged or hostile files can hold such strings anywhere (names, domains, metadata); left alone they break
sorting, formatting and JSON far from where they came from. Each is replaced, in place, by its decoding with
U+FFFD replacement characters. Iterative: subgraphs may nest hundreds deep.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from typing import Any, TypeVar

import onnx

T = TypeVar("T")

_SCALARS_MODEL = ("producer_name", "producer_version", "domain", "doc_string")
_SCALARS_GRAPH = ("name", "doc_string")
_SCALARS_NODE = ("name", "op_type", "domain", "overload", "doc_string")
_SCALARS_FUNCTION = ("name", "domain", "overload", "doc_string")
_SCALARS_ATTR = ("name", "ref_attr_name", "doc_string")


def _fix(msg: Any, fields: tuple[str, ...]) -> int:
    n = 0
    for f in fields:
        v = getattr(msg, f)
        if v.__class__ is bytes:
            setattr(msg, f, v.decode("utf-8", "replace"))
            n += 1
    return n


def _fix_list(values: MutableSequence[Any]) -> int:
    n = 0
    for i, v in enumerate(values):
        if v.__class__ is bytes:
            values[i] = v.decode("utf-8", "replace")
            n += 1
    return n


def _fix_props(props: Any) -> int:
    return sum(_fix(p, ("key", "value")) for p in props)


def _fix_values(infos: Any) -> int:
    return sum(_fix(v, ("name", "doc_string")) + _fix_props(v.metadata_props) for v in infos)


def _fix_tensor(t: onnx.TensorProto) -> int:
    return _fix(t, ("name", "doc_string")) + _fix_props(t.external_data) + _fix_props(t.metadata_props)


def sanitize_text(model: onnx.ModelProto) -> int:
    """Fix every invalid-UTF-8 string field of ``model`` in place; returns how many were fixed."""
    n = _fix(model, _SCALARS_MODEL) + _fix_props(model.metadata_props)
    n += sum(_fix(o, ("domain",)) for o in model.opset_import)
    node_lists: list[Any] = []
    graphs: list[onnx.GraphProto] = [model.graph] if model.HasField("graph") else []
    for f in model.functions:
        n += _fix(f, _SCALARS_FUNCTION) + _fix_list(f.input) + _fix_list(f.output) + _fix_list(f.attribute)
        n += _fix_props(f.metadata_props) + _fix_values(f.value_info)
        n += sum(_fix(o, ("domain",)) for o in f.opset_import)
        for a in f.attribute_proto:
            n += _fix(a, _SCALARS_ATTR)
        node_lists.append(f.node)
    while graphs or node_lists:
        while graphs:
            g = graphs.pop()
            n += _fix(g, _SCALARS_GRAPH) + _fix_props(g.metadata_props)
            n += _fix_values(g.input) + _fix_values(g.output) + _fix_values(g.value_info)
            n += sum(_fix_tensor(t) for t in g.initializer)
            n += sum(_fix_tensor(s.values) for s in g.sparse_initializer)
            node_lists.append(g.node)
        while node_lists:
            for node in node_lists.pop():
                n += _fix(node, _SCALARS_NODE) + _fix_list(node.input) + _fix_list(node.output)
                n += _fix_props(node.metadata_props)
                for a in node.attribute:
                    n += _fix(a, _SCALARS_ATTR)
                    if a.type == onnx.AttributeProto.GRAPH:
                        graphs.append(a.g)
                    elif a.type == onnx.AttributeProto.GRAPHS:
                        graphs.extend(a.graphs)
    return n


def retry_repaired(run: Callable[[], T], *models: onnx.ModelProto) -> T:
    """``run()``; when it trips over a string that is not valid UTF-8 (which reaches it as ``bytes``: a model above
    ``index.EAGER_TEXT_CHECK_NODES`` nodes is only repaired when indexing trips over one, and indexing reads no node
    or value names), repair ``models`` in place and run it once more. An error with nothing to repair is a bug and
    goes on up."""
    try:
        return run()
    except (TypeError, AttributeError, UnicodeError):
        if not sum(sanitize_text(m) for m in models):
            raise
    return run()


def printed(proto: onnx.NodeProto | onnx.FunctionProto) -> str:
    """``onnx.printer.to_text(proto)``; for a proto holding a string that is not valid UTF-8, which the printer
    cannot decode, the text of a repaired copy (``proto`` itself is left as it is)."""
    try:
        return onnx.printer.to_text(proto)
    except UnicodeDecodeError:
        holder = onnx.ModelProto()
        if isinstance(proto, onnx.FunctionProto):
            holder.functions.add().CopyFrom(proto)
            sanitize_text(holder)
            return onnx.printer.to_text(holder.functions[0])
        holder.graph.node.add().CopyFrom(proto)
        sanitize_text(holder)
        return onnx.printer.to_text(holder.graph.node[0])
