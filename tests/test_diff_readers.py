"""A changed initializer whose name does not say where it is read (the optimizer's ``val_105``, a transposed weight;
torch's ``unsqueeze_14``, a rotary table) says which aten call reads it, so that a changed weight is found by its
layer: a re-export of Swin with another ``mlp_ratio`` listed 13 ``val_<n>`` weights re-valued or reshaped, and
nothing said which layer each was."""

from __future__ import annotations

import json

import pytest

from inspector.core.diff import diff_files
from inspector.report.diff_markdown import sites_shown
from inspector.report.diff_text import sites_text
from tests.conftest import ZOO


def _changed_copy(tmp_path, name: str):
    """llama_gqa with initializer ``name``'s first value changed."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(ZOO / "llama_gqa.onnx")
    for t in model.graph.initializer:
        if t.name == name:
            a = numpy_helper.to_array(t).copy()
            a.flat[0] += 1
            t.CopyFrom(numpy_helper.from_array(a, name))
    out = tmp_path / "changed.onnx"
    onnx.save(model, out)
    return model, out


@pytest.mark.parametrize("name", ["val_105", "val_112", "model.layers.0.input_layernorm.weight"])
def test_a_changed_initializer_says_what_reads_it_where_its_name_does_not(tmp_path, name: str):
    """A changed weight the optimizer named (``val_105``: the transposed q_proj weight) said nothing of its layer.
    It now names the first aten call that reads it where a change says where (the text's second line, the
    reports' Where column, the app's list; truth: the readers' FX names in the file, their modules in torch), and
    how many more do; a parameter read by its own module's call (its name says where) is left as it
    was."""
    import re

    model, changed = _changed_copy(tmp_path, name)
    fx = [re.match(r"%(\w+)", {p.key: p.value for p in n.metadata_props}["pkg.torch.onnx.fx_node"]).group(1)
          for n in model.graph.node if name in n.input]
    readers = list(dict.fromkeys(fx))
    module = {f["name"]: f["module"] for f in json.loads((ZOO / "llama_gqa.truth.json").read_text())["fx_nodes"]}
    (change,) = [c for c in diff_files(ZOO / "llama_gqa.onnx", changed).changes if c.section == "initializer"]
    (dims,) = [list(t.dims) for t in model.graph.initializer if t.name == name]
    shown = f"{name} FLOAT{dims}: "
    if name.startswith(module[readers[0]] + "."):
        assert change.detail.startswith(shown) and "read_by" not in change.to_json()
        assert sites_shown(change) == ([name], 0)
    else:
        more = f" and {len(readers) - 1} more" if len(readers) > 1 else ""
        read_by = f"{module[readers[0]]} › {readers[0]}{more}"
        assert change.detail.startswith(shown) and change.read_by == read_by
        assert change.to_json()["read_by"] == read_by  # (the diff's JSON says it too)
        assert sites_text(change) == f"read by {read_by}" and sites_shown(change) == ([read_by], 0)
