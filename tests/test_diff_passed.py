"""A body whose operators changed says the aten arguments its two calls pass differently, from their signatures:
GPT-2 exported with dynamic shapes computes each view's size in the graph, and its bodies "2 -> 3 nodes: +2 (Concat,
constant INT64[1])" said nothing of why. Truth: the arguments of each FX node as torch's graph holds them (the zoo's
truth files, ``args``)."""

from __future__ import annotations

import json
from typing import Any

from inspector.core.diff import diff_files
from tests.conftest import ZOO


def _args(model: str) -> dict[str, dict[str, Any]]:
    return {f["name"]: f["args"] for f in json.loads((ZOO / f"{model}.truth.json").read_text())["fx_nodes"]}


def _shown(value: Any) -> Any:
    """An argument as torch's truth file writes it, as the diff shows it: another FX node by its ``%name``."""
    if isinstance(value, dict) and set(value) == {"node"}:
        return f"%{value['node']}"
    if isinstance(value, list):
        return [_shown(x) for x in value]
    return value


def test_a_view_made_dynamic_says_which_sizes_the_graph_computes_now():
    d = diff_files(ZOO / "gpt2.onnx", ZOO / "gpt2_dynamic.onnx")
    a, b = _args("gpt2"), _args("gpt2_dynamic")
    views = [c for c in d.changes if c.kind == "body_changed" and c.family == "aten::view"]
    assert len(views) >= 5
    for c in views:
        assert [x.parameter for x in c.arguments] == ["size"], c.detail
        (size,) = c.arguments
        assert (size.old, size.new) == (_shown(a[c.where]["size"]), _shown(b[c.where]["size"]))
        assert size.old != size.new and any(isinstance(x, str) for x in size.new)  # (a size the graph computes)
        assert c.detail.endswith(f"; size: {size.old} -> {size.new}".replace("'", "")), c.detail
