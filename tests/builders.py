"""Models built in memory for tests that need shapes no exporter produces (e.g. 200 nested Ifs), and copies of real
exports changed as a re-export would change them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
from onnx import AttributeProto, TensorProto, helper


def deep_if_model(depth: int, call_at_bottom: bool = True) -> onnx.ModelProto:
    """``depth`` nested If nodes, built in place (protobuf copies refuse >100 nesting levels)."""
    m = onnx.ModelProto()
    m.ir_version = 10
    m.opset_import.add().version = 18
    local = m.opset_import.add()
    local.domain, local.version = "local", 1
    f = m.functions.add()
    f.domain, f.name, f.overload = "local", "leaf", "deep"
    f.input.append("x")
    f.output.append("y")
    f.opset_import.add().version = 18
    ident = f.node.add()
    ident.op_type = "Identity"
    ident.input.append("x")
    ident.output.append("y")
    g = m.graph
    g.name = "main"
    g.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    g.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]))
    g.output.append(helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1]))
    for i in range(depth):
        n = g.node.add()
        n.op_type, n.name = "If", f"if_{i}"
        n.input.append("c")
        n.output.append(f"y{i}")
        else_attr = n.attribute.add()
        else_attr.name, else_attr.type = "else_branch", AttributeProto.GRAPH
        e = else_attr.g
        e.name = f"else_{i}"
        en = e.node.add()
        en.op_type = "Identity"
        en.input.append("x")
        en.output.append(f"e{i}")
        e.output.append(helper.make_tensor_value_info(f"e{i}", TensorProto.FLOAT, [1]))
        then_attr = n.attribute.add()
        then_attr.name, then_attr.type = "then_branch", AttributeProto.GRAPH
        g = then_attr.g
        g.name = f"then_{i}"
        g.output.append(helper.make_tensor_value_info(f"y{i + 1}", TensorProto.FLOAT, [1]))
    leaf = g.node.add()
    if call_at_bottom:
        leaf.domain, leaf.op_type, leaf.overload = "local", "leaf", "deep"
    else:
        leaf.op_type = "Identity"
    leaf.name = "bottom"
    leaf.input.append("x")
    leaf.output.append(f"y{depth}")
    return m


def renamed_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """Every value, node and function-internal name changed; metadata scrambled."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = {v.name for v in m.graph.input} | {v.name for v in m.graph.output} | {t.name for t in m.graph.initializer}

    def rename(nodes, prefix):
        mapping = {}
        for n in nodes:
            for i, name in enumerate(n.output):
                if name and name not in keep:
                    mapping[name] = f"{prefix}_renamed_{len(mapping)}"
                    n.output[i] = mapping[name]
            for i, name in enumerate(n.input):
                n.input[i] = mapping.get(name, name)
            n.name = f"{prefix}_node_{id(n) % 1000}"
            for p in n.metadata_props:
                if p.key == "pkg.torch.onnx.stack_trace":
                    p.value = "scrambled"
        return mapping

    rename(m.graph.node, "g")
    for f in m.functions:
        mapping = {name: f"arg{i}" for i, name in enumerate(f.input)}
        for i, name in enumerate(f.input):
            f.input[i] = mapping[name]
        for n in f.node:
            for i, name in enumerate(n.input):
                n.input[i] = mapping.get(name, name)
        inner = rename(f.node, "f")
        for i, name in enumerate(f.output):
            f.output[i] = inner.get(name, mapping.get(name, name))
    return m


def count_calls(fn: Callable[[], Any]) -> int:
    """Python function calls made by ``fn()``: the work a scaling test compares between sizes, the same on every
    machine (a quadratic pass shows as a work ratio, never as a timed assertion)."""
    count = 0

    def prof(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def count_lines(fn: Callable[[], Any]) -> int:
    """Lines of Python run by ``fn()`` (``sys.settrace`` "line" events, loops inside one function and generator
    expressions included, which ``count_calls`` does not see): the work a scaling test compares between sizes when
    a quadratic pass could hide inside one frame."""
    count = 0

    def local(_frame: Any, event: str, _arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def trace(_frame: Any, _event: str, _arg: Any) -> Any:
        return local

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def reviewed_cos_table(folder: Path, note: str) -> tuple[Path, Path]:
    """A copy of the zoo's llama_gqa whose rotary cos table (``unsqueeze_14``, an initializer the rotary ``mul`` calls
    read) is changed in another copy, with the body of its first reader marked suspicious with ``note`` in the first
    copy's sidecar, as the app marks it: the reviewed model and the changed one (Qwen2 re-exported with another
    ``rope_theta`` changes its tables so)."""
    import shutil

    from onnx import numpy_helper

    from inspector.core.model.index import open_index
    from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
    from inspector.core.specialise.specialiser import Specialiser
    from tests.conftest import ZOO

    model, other = folder / "llama_gqa.onnx", folder / "other.onnx"
    shutil.copy(ZOO / "llama_gqa.onnx", model)
    changed = onnx.load(str(model), load_external_data=False)
    (table,) = [t for t in changed.graph.initializer if t.name == "unsqueeze_14"]
    values = numpy_helper.to_array(table).copy()
    values.flat[-1] += 0.25
    table.CopyFrom(numpy_helper.from_array(values, table.name))
    onnx.save(changed, str(other))
    index = open_index(model)
    reader = next(i for i, n in enumerate(index.proto.graph.node) if "unsqueeze_14" in n.input)
    call = next(c for c in index.provenance.calls if (reader,) in c.node_paths)
    analysis = next(a for a in Specialiser(index).analyse_all() if a.family.name == call.family[1])
    body = analysis.bodies_of([call])[0]
    (key,) = [k for k, o in review_keys(analysis) if o is body]
    ReviewStore(model).set(key, "suspicious", note, reviewed_value(body))
    return model, other
