"""A tensor too large to show whole that changed between two exports says where it differs: how many values, and
the largest difference with its index and both values. Its summary's first eight values may all read alike (GPT-NeoX
re-exported with another rotary base: the diff showed eight equal values and the "…" each side), so the line said
nothing of what changed. Truth: the values this test changes in a copy of a zoo export, with numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from inspector.cli import main
from tests.conftest import ZOO


def _changed(src: Path, dest: Path, name: str, edits: dict[tuple[int, ...], float]) -> np.ndarray:
    """A copy of ``src`` with ``edits`` added to initializer ``name``'s values at their indices; its old values."""
    model = onnx.load(str(src), load_external_data=False)
    (tensor,) = [t for t in model.graph.initializer if t.name == name]
    old = numpy_helper.to_array(tensor)
    new = old.copy()
    for index, delta in edits.items():
        new[index] += delta
    tensor.CopyFrom(numpy_helper.from_array(new, name))
    onnx.save(model, str(dest))
    return old


def _changes(capsys, a: Path, b: Path) -> list[dict]:
    assert main(["diff", str(a), str(b), "--format", "json"]) == 1
    return json.loads(capsys.readouterr().out)["changes"]


def test_a_baked_constant_says_where_it_differs(tmp_path: Path, capsys) -> None:
    # T5's relative position bias ``where_3`` (32 values, small enough to be baked into the add that reads it)
    edits = {(0, 0, 1, 6): 0.75, (0, 0, 3, 2): -0.125}
    old = _changed(ZOO / "t5.onnx", tmp_path / "t5.onnx", "where_3", edits)
    (change,) = _changes(capsys, ZOO / "t5.onnx", tmp_path / "t5.onnx")
    assert (change["kind"], change["family"], change["where"]) == ("value_changed", "aten::add", "add_26")
    worst = old[0, 0, 1, 6]
    assert change["detail"].endswith(f"2 of 32 values differ, the most at [0, 0, 1, 6]: {worst:.1f} -> "
                                     f"{worst + 0.75:.2f}")
    # named as the summary names it (torch's FX name for the value), then where it is read
    assert change["detail"].startswith(f"where_3 (Add.B): FLOAT[1, 1, 4, 8] #{change['old']['digest'][:8]} -> "
                                       f"#{change['new']['digest'][:8]}: ")


def test_a_revalued_initializer_says_where_it_differs(tmp_path: Path, capsys) -> None:
    # Llama's rotary table ``unsqueeze_14`` (64 values, an initializer of its own) and a norm's weight (32 values)
    model = tmp_path / "llama_gqa.onnx"
    edits = {(0, 0, 2, 5): 0.5, (0, 0, 7, 1): 0.01, (0, 0, 0, 0): 0.25}
    old = _changed(ZOO / "llama_gqa.onnx", model, "unsqueeze_14", edits)
    weight = _changed(model, model, "model.layers.0.input_layernorm.weight", {(3,): 0.125, (30,): -0.5})
    changes = {c["where"]: c["detail"] for c in _changes(capsys, ZOO / "llama_gqa.onnx", model)}
    assert set(changes) == {"unsqueeze_14", "model.layers.0.input_layernorm.weight"}
    assert changes["unsqueeze_14"].endswith(
        f": 3 of 64 values differ, the most at [0, 0, 2, 5]: {old[0, 0, 2, 5]:.7g} -> {old[0, 0, 2, 5] + 0.5:.8g}")
    assert changes["unsqueeze_14"].startswith("unsqueeze_14 FLOAT[1, 1, 8, 8]: #")
    assert changes["model.layers.0.input_layernorm.weight"].endswith(
        f"2 of 32 values differ, the most at [30]: {weight[30]:.1f} -> {weight[30] - 0.5:.1f}")


def test_a_small_tensor_is_shown_whole_and_a_reshaped_one_not_compared(tmp_path: Path, capsys) -> None:
    # a tensor of at most 16 values reads whole on both sides: nothing more is said
    model = onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False)
    small = next(t for t in model.graph.initializer if 1 < int(np.prod(t.dims)) <= 16 and t.data_type == 7)
    values = numpy_helper.to_array(small).copy()
    values.flat[0] += 1
    small.CopyFrom(numpy_helper.from_array(values, small.name))
    onnx.save(model, str(tmp_path / "m.onnx"))
    changes = _changes(capsys, ZOO / "llama_gqa.onnx", tmp_path / "m.onnx")
    assert changes and not any("values differ" in c["detail"] for c in changes)
    # (and a constant the exporter numbered, ``val_111``, is named by the argument it holds, not by its number)
    assert small.name == "val_111" and [c["detail"].split(":")[0] for c in changes] == ["size (Reshape.shape)"]
