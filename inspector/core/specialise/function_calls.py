"""What the link rules read about an aten function's body (``core.model.aten_functions``), as they read it about a
flat aten call's group: the target, the aten arguments of the call, and the static shapes of the body's values.

An overload's body is the same for all its calls, and a flat body's links are made with the arguments of the first
call that has it; so an aten function's links are made with the arguments of its first call site, bound from the
call node's FX metadata where it has some, else from its attributes (``function_call_signature``). The body's
formal inputs take the shapes of the values the call passes (typed in the calling graph), values the function
types itself their declared shapes, and every other name the shape of the same name in the main graph (``fold``
keeps the names of the values inside a body, though not their types).

Threat: the function, its calls and their metadata come from an untrusted file; only parsed, bounded reads
(``function_call_signature``, ``resolve_path``) touch them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from inspector.core.aten.schemas import BoundArgument, SchemaCatalogue
from inspector.core.model.calls import RULE_NAME
from inspector.core.model.functions import FunctionIndex
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.signature import function_call_signature
from inspector.core.specialise.flow import GraphShapes, Shape, value_shape


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """An aten function's target, its first call's non-tensor arguments (and numbers passed to Tensor
    parameters), the shapes its body's values take at that call, and whether the optimizer rewrote the call."""

    target: str
    bound: list[BoundArgument]
    shapes: Mapping[str, Shape]
    rewritten: bool


def function_call(functions: FunctionIndex, key: FunctionKey, main_shapes: GraphShapes,
                  catalogue: SchemaCatalogue) -> FunctionCall | None:
    """The link context of aten function ``key``; None when it is not an aten function or has no schema."""
    target = functions.aten_target(key)
    proto = functions.functions.get(key)
    if target is None or proto is None:
        return None
    sites = functions.calls.get(key) or []
    node = functions.site_node(sites[0], functions.main) if sites else None
    sig = function_call_signature(proto, node, catalogue, target)
    if sig is None:
        return None
    bound = [x for x in sig.bound if not x.parameter.is_tensor or _is_number(x.value)]
    actual: dict[str, str] = {}
    if node is not None and sites[0].caller == MAIN:
        actual = {formal: node.input[k] for k, formal in enumerate(proto.input) if k < len(node.input)}
    rewritten = node is not None and any(p.key == RULE_NAME for p in node.metadata_props)
    declared = {v.name: shape for v in proto.value_info if (shape := value_shape(v)) is not None}
    return FunctionCall(target, bound, CallShapes(actual, main_shapes, declared), rewritten)


class CallShapes(Mapping[str, Shape]):
    """Shapes of a function body's values at one call: a formal input has the shape of the value passed to it, a
    value the function types (``FunctionProto.value_info``, IR 10) that shape, any other the main graph's."""

    def __init__(self, actual: dict[str, str], outer: GraphShapes, declared: dict[str, Shape] | None = None) -> None:
        self._actual = actual
        self._outer = outer
        self._declared = declared or {}

    def __getitem__(self, name: str) -> Shape:
        if name in self._declared and name not in self._actual:
            return self._declared[name]
        return self._outer[self._actual.get(name, name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._actual)

    def __len__(self) -> int:
        return len(self._actual)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
