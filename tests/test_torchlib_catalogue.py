"""The torchlib catalogue (resources/torchlib_functions.txt, generated from onnxscript 0.7.2's registry)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.core.aten.torchlib import _parse, torchlib_for, torchlib_json, torchlib_version

ZOO = Path(__file__).resolve().parent / "zoo"


def test_known_lowerings_are_named_with_trace_only_and_source() -> None:
    # checked by hand in onnxscript 0.7.2: ops/core.py defines aten_transpose (trace_only=True) for
    # aten::transpose.int and aten_transpose_complex for complex inputs; ops/nn.py defines
    # aten_scaled_dot_product_attention (trace_only=True)
    assert torchlib_version() == "onnxscript 0.7.2"
    real, cplx = torchlib_for("aten::transpose.int")
    assert (real.function, real.trace_only, real.complex) == ("aten_transpose", True, False)
    assert (cplx.function, cplx.complex) == ("aten_transpose_complex", True)
    assert real.source.startswith("function_libs/torch_lib/ops/core.py:")
    assert torchlib_json("aten::scaled_dot_product_attention") == {
        "function": "aten_scaled_dot_product_attention", "trace_only": True,
        "source": torchlib_for("aten::scaled_dot_product_attention")[0].source}
    assert torchlib_for("aten::no_such_op") == () and torchlib_json("aten::no_such_op") is None


@pytest.mark.parametrize("name", ["gpt2", "llama_gqa", "whisper", "t5_noopt", "convnet"])
def test_every_emitting_aten_target_of_the_zoo_has_a_lowering(name: str) -> None:
    """Each aten target that emitted ONNX nodes in a real export was lowered by some torchlib function."""
    truth = json.loads((ZOO / f"{name}.truth.json").read_text())
    targets = {f["target"] for f in truth["fx_nodes"] if f["onnx_nodes"] and f["target"].startswith("aten::")}
    assert sorted(t for t in targets if not torchlib_for(t)) == []


def test_damaged_lines_are_skipped() -> None:
    version, table = _parse(["# onnxscript 9: x", "aten::a\tf\ttrace_only\treal\tx.py:1", "broken", "a\tb"])
    assert version == "onnxscript 9" and list(table) == ["aten::a"]


def test_summary_names_the_lowering_of_each_aten_overload() -> None:
    from inspector.core.model.index import open_index
    from inspector.core.summary import summary_dict

    data = summary_dict(open_index(ZOO / "gpt2.onnx"), specialisation=False)
    by_target = {ov["target"]: ov["torchlib"] for f in data["families"] for ov in f["overloads"] if ov["target"]}
    assert by_target["aten::transpose.int"]["function"] == "aten_transpose"
    assert by_target["aten::scaled_dot_product_attention"]["trace_only"] is True
