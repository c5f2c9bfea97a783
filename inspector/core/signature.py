"""Aten signatures of aten calls: the catalogued schema with this call's arguments bound to parameters."""

from __future__ import annotations

from dataclasses import dataclass

from inspector.core.aten_schema import AtenSchema, BoundArgument, SchemaCatalogue, bind, format_signature
from inspector.core.provenance import AtenCall


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
