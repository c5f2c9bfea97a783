"""Aten signatures of aten calls (flat, or calls of functions ``fold`` made): the catalogued schema with this
call's arguments bound to parameters."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import onnx
from onnx import helper

from inspector.core.aten_schema import AtenSchema, BoundArgument, Parameter, SchemaCatalogue, bind, format_signature
from inspector.core.fx import TensorRef
from inspector.core.provenance import AtenCall, split_target


@dataclass(frozen=True, slots=True)
class CallSignature:
    """The schema of an aten call and its bound arguments; ``problem`` says why binding fell short."""

    schema: AtenSchema | None
    bound: tuple[BoundArgument, ...]
    problem: str | None = None

    @property
    def text(self) -> str:
        if self.schema is None:
            return ""
        return format_signature(self.schema, list(self.bound) if self.bound else None)

    def non_tensor(self) -> list[BoundArgument]:
        """The arguments trace_only code may have baked into the ONNX body."""
        return [b for b in self.bound if not b.parameter.is_tensor]


def call_signature(call: AtenCall, catalogue: SchemaCatalogue | None = None) -> CallSignature:
    cat = catalogue or SchemaCatalogue.default()
    schema = cat.get(call.target) if call.is_aten or "::" in call.target else None
    if schema is None:
        return CallSignature(None, (), f"no catalogued schema for {call.target}")
    fx = call.fx
    if fx is None:
        return CallSignature(schema, (), "the FX node text could not be read")
    try:
        bound = tuple(bind(schema, fx.args, fx.kwargs))
    except ValueError as e:
        return CallSignature(schema, (), f"arguments do not fit the schema: {e}")
    problem = None if fx.complete else "the FX arguments were only partly readable"
    return CallSignature(schema, bound, problem)


def folded_target(f: onnx.FunctionProto, catalogue: SchemaCatalogue | None = None) -> str | None:
    """The aten target a local function stands for, as ``fold`` writes one: its doc string is the catalogued
    schema of an aten overload whose op is the function's name (``aten::view(Tensor(a) self, SymInt[] size)``
    for ``pkg.torch.aten.view``). None for any other function."""
    doc = f.doc_string if isinstance(f.doc_string, str) else ""
    head = doc.partition("(")[0].strip()
    if not head.startswith("aten::") or len(head) > 200:
        return None
    cat = catalogue or SchemaCatalogue.default()
    schema = cat.get(head)
    if schema is None or split_target(head)[1] != f.name:
        return None
    return head


def function_call_signature(f: onnx.FunctionProto, call: onnx.NodeProto | None = None,
                            catalogue: SchemaCatalogue | None = None) -> CallSignature | None:
    """The aten signature of a folded function, exactly as for a flat aten call: non-tensor parameters take the
    call's attribute values, else the function's declared defaults, else the schema's; tensor parameters take
    the value the call passes to the function input of that name. Without ``call`` the function's own defaults
    are bound (and parameters without one are missing). None when the function carries no aten schema."""
    cat = catalogue or SchemaCatalogue.default()
    target = folded_target(f, cat)
    schema = cat.get(target) if target else None
    if schema is None:
        return None
    given = {a.name: a for a in call.attribute} if call is not None else {}
    declared = {a.name: a for a in f.attribute_proto}
    actual = {formal: call.input[k] for k, formal in enumerate(f.input)
              if call is not None and k < len(call.input)}
    bound: list[BoundArgument] = []
    missing = []
    for param in schema.parameters:
        if param.name in given:  # numbers passed to Tensor parameters are attributes too (``mul(x, 0.5)``)
            bound.append(BoundArgument(param, _attribute_value(given[param.name], param), False, True))
        elif param.is_tensor:
            if param.name in actual:
                bound.append(BoundArgument(param, TensorRef(actual[param.name]), False, True))
            elif param.has_default:
                bound.append(BoundArgument(param, param.default_value, True, True))
            else:
                bound.append(BoundArgument(param, None, False, False))
                missing.append(param.name)
        elif param.name in declared:
            bound.append(BoundArgument(param, _attribute_value(declared[param.name], param), True, True))
        elif param.has_default:
            bound.append(BoundArgument(param, param.default_value, True, True))
        else:
            bound.append(BoundArgument(param, None, False, False))
            missing.append(param.name)
    problem = None
    if missing:
        problem = f"no function input or attribute stands for {', '.join(missing)}"
    return CallSignature(schema, tuple(bound), problem)


def _attribute_value(attr: onnx.AttributeProto, param: Parameter) -> object:
    """An attribute as the aten argument it stands for (ints back to bools for ``bool`` parameters)."""
    value = helper.get_attribute_value(attr)
    if attr.type == onnx.AttributeProto.FLOAT:
        value = _float32_text(value)
    elif attr.type == onnx.AttributeProto.FLOATS:
        value = [_float32_text(v) for v in value]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if param.type.startswith("bool"):
        if isinstance(value, int):
            return bool(value)
        if isinstance(value, list):
            return [bool(v) for v in value]
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", "replace") for v in value]
    return value


def _float32_text(v: float) -> float:
    """A float attribute (float32) as the shortest decimal that reads back to it: ``1e-05``, not
    ``9.999999747378752e-06``."""
    f32 = struct.unpack("f", struct.pack("f", v))[0]
    for digits in range(1, 10):
        short = float(f"{f32:.{digits}g}")
        if struct.unpack("f", struct.pack("f", short))[0] == f32:
            return short
    return f32
