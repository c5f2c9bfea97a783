"""FX node text parsing: targets, tensor references vs. literals, lists, kwargs, damage."""

from __future__ import annotations

import math

from inspector.core.model.fx import Symbol, TensorRef, op_target, parse_fx_node


def test_transpose():
    n = parse_fx_node(
        "%transpose_2 : [num_users=1] = call_function[target=torch.ops.aten.transpose.int]"
        "(args = (%gelu, 1, 2), kwargs = {})"
    )
    assert n is not None
    assert (n.name, n.op, n.aten_target) == ("transpose_2", "call_function", "aten::transpose.int")
    assert n.args == (TensorRef("gelu"), 1, 2)
    assert n.kwargs == {}


def test_lists_kwargs_and_symbols():
    n = parse_fx_node(
        "%empty : [num_users=1] = call_function[target=torch.ops.aten.empty.memory_format](args = "
        "([2, -3],), kwargs = {dtype: torch.float32, device: device(type='cpu'), pin_memory: False})"
    )
    assert n is not None and n.complete
    assert n.args == ([2, -3],)
    assert n.kwargs["dtype"] == Symbol("torch.float32")
    assert n.kwargs["device"] == Symbol("device(type='cpu')")
    assert n.kwargs["pin_memory"] is False


def test_floats_none_inf_and_tensor_lists():
    n = parse_fx_node(
        "%cat : [num_users=1] = call_function[target=torch.ops.aten.cat.default](args = "
        "([%a, %b], -1), kwargs = {scale: 0.25, eps: 1e-05, lo: -inf, none: None, s: 'tanh'})"
    )
    assert n is not None
    assert n.args == ([TensorRef("a"), TensorRef("b")], -1)
    assert n.kwargs["scale"] == 0.25 and n.kwargs["eps"] == 1e-05
    assert n.kwargs["lo"] == -math.inf and n.kwargs["none"] is None and n.kwargs["s"] == "tanh"


def test_default_overload_and_non_op_targets():
    assert op_target("torch.ops.aten.relu.default") == "aten::relu"
    assert op_target("torch.ops.prims.convert_element_type.default") == "prims::convert_element_type"
    assert op_target("<built-in function getitem>") is None
    n = parse_fx_node("%getitem : [num_users=1] = call_function[target=operator.getitem](args = (%m, 0), kwargs = {})")
    assert n is not None and n.aten_target is None and n.args == (TensorRef("m"), 0)


def test_damaged_text_degrades():
    n = parse_fx_node("%bad : [num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%x, ")
    assert n is not None and not n.complete and n.aten_target == "aten::add.Tensor"
    assert parse_fx_node("not fx at all") is None
    deep = "%d : [num_users=1] = call_function[target=torch.ops.aten.x.default](args = (" + "[" * 500 + ")"
    n = parse_fx_node(deep)
    assert n is not None and not n.complete
