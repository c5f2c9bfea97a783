"""Fold's own messages (``core/fold/messages.py``) are byte for byte what ``onnx.helper`` makes for the same values:
the folded files must not change by leaving helper (and numpy with it) out of fold's process."""

from __future__ import annotations

import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from inspector.core.fold.messages import attribute, constant_node, opset_id

_TENSOR = helper.make_tensor("c", TensorProto.INT64, [3], [1, -2, 3])


@pytest.mark.parametrize(("value", "kind"), [
    (0, None), (-7, None), (True, None), (2**40, None), (0.125, None), (-1e-5, None), (float("inf"), None),
    ("tanh", None), ("", None), ("ünïcode", None), (b"raw", None), (_TENSOR, None),
    ([1, 2, 3], None), ([0.5, 2.0], None), ([1, 0.5], None), ([], AttributeProto.INTS),
    ([], AttributeProto.FLOATS), ([1.0, 2.0], AttributeProto.FLOATS), ([1, 2], AttributeProto.FLOATS),
])
def test_an_attribute_is_what_helper_makes(value, kind):
    mine = attribute("a", value, kind)
    theirs = helper.make_attribute("a", value, attr_type=kind)
    assert mine.SerializeToString() == theirs.SerializeToString()
    assert mine.type == theirs.type


@pytest.mark.parametrize(("value", "kind"), [([], None), (["a", "b"], None), (None, None), ({"a": 1}, None),
                                             (1, AttributeProto.INTS), ([0.5], AttributeProto.INTS)])
def test_what_fold_never_passes_is_refused(value, kind):
    with pytest.raises(TypeError):
        attribute("a", value, kind)


def test_a_constant_node_and_an_opset_id_are_what_helper_makes():
    tensor = numpy_helper.from_array(numpy_helper.to_array(_TENSOR).astype("float32"), "w")
    assert constant_node("w", tensor).SerializeToString() == \
        helper.make_node("Constant", [], ["w"], value=tensor).SerializeToString()
    assert opset_id("pkg.torch.aten", 1).SerializeToString() == \
        helper.make_opsetid("pkg.torch.aten", 1).SerializeToString()
