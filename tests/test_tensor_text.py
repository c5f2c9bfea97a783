"""A tensor too large to show whole reads the same wherever it is shown: its type, shape, first values and digest, on
one line (a float with its point: ``1.0``). Gemma's RMSNorm bakes ``1 + weight`` (32 floats) into its Mul: ``summary``
printed it as JSON cut at 40 characters (``{"dtype": "FLOAT", "shape": [32], "firs…``), ``check`` as a dict's repr,
the diff as type and digest."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from inspector.core.bodies.literals import tensor_summary_text, tensor_value
from inspector.core.diff.values import show_value
from inspector.core.specialise.categories import value_text
from inspector.core.summary import _short


def test_a_summarised_tensor_reads_alike_in_the_summary_check_and_diff():
    value, key = tensor_value(numpy_helper.from_array(np.ones(32, np.float32), "add_4"))
    digest = value["digest"][:8]
    assert key.endswith(value["digest"]) and len(digest) == 8
    whole = f"FLOAT[32] [{', '.join(['1.0'] * 8)}, …] #{digest}"
    assert tensor_summary_text(value) == value_text(value) == show_value(value) == whole
    # narrower: fewer first values, the type, shape and digest kept
    assert _short(value) == f"FLOAT[32] [1.0, 1.0, 1.0, …] #{digest}" and len(_short(value)) <= 40
    assert tensor_summary_text(value, 20) == f"FLOAT[32] #{digest}"
    halves, _key = tensor_value(numpy_helper.from_array(np.full((4, 8), 0.59460354, np.float32), "s"))
    assert tensor_summary_text(halves) == f"FLOAT[4, 8] [{', '.join(['0.59460354'] * 8)}, …] #{halves['digest'][:8]}"
    # small tensors are lists, shown as lists; other mappings are not tensors
    small, _key = tensor_value(numpy_helper.from_array(np.arange(3, dtype=np.int64), "i"))
    assert small == [0, 1, 2] and tensor_summary_text(small) is None and value_text(small) == "[0, 1, 2]"
    assert tensor_summary_text({"dtype": "FLOAT"}) is None and tensor_summary_text({"shape": [1]}) is None


def _digits(text: str) -> int:
    mantissa = text.lower().split("e")[0].replace("-", "").replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) or 1


def test_a_float32_value_reads_in_the_fewest_digits_that_give_it_back():
    from inspector.core.util.floats import float32, float_text

    # eps=1e-5 as ONNX stores it (float32) read "9.9999997e-06"; numpy's shortest text of the float32 is the truth
    assert float_text(float32(1e-5)) == str(np.float32(1e-5)) == "1e-05"
    assert float_text(float32(0.044715)) == "0.044715" and float_text(float32(0.3) ** 0.5) != ""
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(2000), 10.0 ** rng.uniform(-12, 12, 2000)]).astype(np.float32)
    for v in values:
        shown, truth = float_text(float(v)), str(v)
        if _digits(truth) <= 8:  # (a float32 needing 9 digits keeps 8, as every value did)
            assert np.float32(float(shown)) == v and _digits(shown) == _digits(truth), (shown, truth)
    # a double float32 does not hold keeps its 8 digits: shortened as a float32 it would read another number
    assert float_text(0.3535533905932738) == "0.35355339" and float_text(1e-05) == "1e-05"
    assert float_text(float("inf")) == "inf" and float_text(float("nan")) == "nan"
    # a whole number keeps its point, as numpy writes a float32 (the body's ``Constant<value = 1.0>`` is no int)
    assert [float_text(x) for x in (1.0, 0.0, -2.0)] == [str(np.float32(x)) for x in (1.0, 0.0, -2.0)]
    # and whole: softplus's default threshold read ``2e+01``, the one digit that gives 20 back
    wholes = (20.0, 100.0, -300.0, 65504.0, 1e7, 1e9, 1e20)
    assert [float_text(x) for x in wholes] == [str(np.float32(x)) for x in wholes]


def test_graph_boxes_and_value_previews_write_a_float_as_the_signature_panel_does():
    """A constant's box (``constant_text``) and a tensor's preview in the node details write a float32 in the fewest
    digits that give it back, as the signature panel and the texts do: gpt2's tanh GELU multiplies by torch's
    ``0.7978845608028654`` (its truth file), stored as the float32 0.7978846; six digits read ``0.797885``, and the
    1.0 it adds read ``1``."""
    import json

    import onnx

    from inspector.gui.node_details import tensor_preview
    from inspector.render.labels import constant_text
    from tests.conftest import ZOO

    truth = json.loads((ZOO / "gpt2.truth.json").read_text())
    others = [n["args"].get("other") for n in truth["fx_nodes"] if n["target"] == "aten::mul.Tensor"]
    assert 0.7978845608028654 in others
    model = onnx.load(str(ZOO / "gpt2.onnx"), load_external_data=False)
    scalars = {constant_text(t) for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT
               and not t.dims}
    assert {"FLOAT[] = 0.7978846", "FLOAT[] = 0.044715", "FLOAT[] = 1.0", "FLOAT[] = 0.5"} <= scalars
    assert tensor_preview(np.array([0.7978845608028654, 1.0], np.float32)).startswith("[0.7978846, 1.0]  min")


def test_a_constant_box_writes_a_large_tensor_as_the_signature_panel_does():
    """A Constant node whose tensor is too large to show whole (a Swin's as_strided gathers from INT64[1, 32, 1, 1],
    which fold moves into the function's body) read ``value={'dtype': 'INT64', 'shape': [1, 32, 1, 1], 'first': …``
    in its box: it reads as the signature panel writes it, without the spaces a box has no room for."""
    from onnx import helper

    from inspector.core.bodies.literals import attribute_value
    from inspector.render.labels import attrs_text

    node = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
        np.arange(32, dtype=np.int64).reshape(1, 32, 1, 1)))
    value, _key = attribute_value(node.attribute[0])
    digest = value["digest"][:8]
    assert value_text(value) == f"INT64[1, 32, 1, 1] [0, 1, 2, 3, 4, 5, 6, 7, …] #{digest}"
    assert attrs_text(node) == f"value=INT64[1,32,1,1] [0,1,2,3,4,5,6,7,…] #{digest}"
    scale = helper.make_node("Constant", [], ["s"], value_floats=[0.7978845608028654, 1.0])
    assert attrs_text(scale) == "value_floats=[0.7978846,1.0]"  # (as float32 holds them, in their fewest digits)


def test_a_half_precision_preview_writes_each_value_in_its_own_types_fewest_digits():
    """A float16 or bfloat16 tensor's preview writes each value by the fewest digits that give it back in its own
    type (numpy's float16 text: ``0.1``), not float32's (``0.099975586`` for float16's 0.1), and a whole number
    whole (float16's largest, ``65504.0``, not the ``6.55e+04`` of its 3 digits). Each text is checked by numpy: it
    reads back as the very element. Both give their statistics."""
    import ml_dtypes

    from inspector.gui.node_details import tensor_preview

    for dtype, want in ((np.float16, ["0.1", "1.0", "3.14", "65504.0", "0.0001", "-2.5"]),
                        (ml_dtypes.bfloat16, ["0.1", "1.0", "3.14", "65536.0", "0.0001", "-2.5"])):
        values = np.array([0.1, 1.0, 3.14159, 65504.0, 1e-4, -2.5], dtype)
        preview = tensor_preview(values)
        shown = preview.split("]")[0].lstrip("[").split(", ")
        assert shown == want, dtype
        assert [np.array(float(t)).astype(dtype) for t in shown] == list(values)
        # with its statistics, as a float32's: numpy counts bfloat16 as no number, and its preview had none
        wide = values.astype(np.float64)
        assert f"min {wide.min():.6g}  max {wide.max():.6g}" in preview, preview
