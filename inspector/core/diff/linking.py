"""What the link rules (``inspector.core.specialise.links``) read about one side of a diff, to name the aten arguments a
changed value came from: each call's bound arguments, its body's inputs in the order of its tensor arguments, and
the static shapes of the values a rule asks about (looked up on demand; most rules ask none)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import onnx

from inspector.core.aten.schemas import BoundArgument, SchemaCatalogue
from inspector.core.bodies.body import Body
from inspector.core.diff.arguments import CallContext, call_context
from inspector.core.diff.values import is_number
from inspector.core.model.calls import AtenCall
from inspector.core.model.graph import ORIGINAL_NODE_NAME
from inspector.core.model.keys import FunctionKey
from inspector.core.model.signature import call_signature
from inspector.core.specialise.links import GraphShapes

if TYPE_CHECKING:
    from inspector.core.diff.cut import GraphCut, Unit


class SideLinks:
    def __init__(self, graph: onnx.GraphProto, aten_units: Sequence[Unit | None], cut: GraphCut) -> None:
        # (no reference to the Side: a cycle would keep its units alive until the cyclic GC runs)
        self.graph = graph
        self._cut = cut  # (the graph inputs and value infos with metadata)
        self._aten_units = aten_units
        self._bound: dict[int, list[BoundArgument]] = {}
        self._onnx_name: dict[str, str] | None = None
        self._aten_call_of: dict[FunctionKey, AtenCall] | None = None
        # the static shapes a link rule asks for (most ask none), each read on first use
        self._shapes = GraphShapes(graph)

    def bound(self, call: AtenCall, catalogue: SchemaCatalogue) -> list[BoundArgument]:
        """Non-tensor aten arguments (and numbers passed to Tensor parameters), as the specialiser uses them."""
        got = self._bound.get(id(call))
        if got is None:
            sig = call_signature(call, catalogue)
            got = [x for x in sig.bound if not x.parameter.is_tensor or is_number(x.value)]
            self._bound[id(call)] = got
        return got

    def aten_call_of(self, key: FunctionKey) -> AtenCall | None:
        """The first aten call of the main graph that calls function ``key`` (a folded export's call node)."""
        if self._aten_call_of is None:
            self._aten_call_of = {}
            for unit in self._aten_units:
                if unit is not None and unit.callee is not None and unit.call is not None:
                    self._aten_call_of.setdefault(unit.callee, unit.call)
        return self._aten_call_of.get(key)

    def call_context(self, call: AtenCall | None, body: Body, catalogue: SchemaCatalogue) -> CallContext | None:
        """What the link rules read for a body of ``call``: its bound arguments, and the body's inputs in the order
        of the call's tensor arguments, typed from the graph (only the values the body touches are looked up)."""
        if call is None:
            return None
        args = {x.parameter.name: x.value for x in self.bound(call, catalogue) if x.provided}
        if not args:
            return None
        order = {self.onnx_name.get(n, n): k for k, n in enumerate(call.tensor_args())}
        inputs = sorted(body.inputs, key=lambda n: order.get(n, len(order)))  # stable: the rest keep their order
        ordered = Body(body.label, body.nodes, inputs, body.outputs, body.constants, body.node_paths,
                       body.canonical_inputs)
        return call_context(call.target, args, ordered, self._shapes)

    @property
    def onnx_name(self) -> dict[str, str]:
        """FX names of parameters -> their ONNX value names (as ``GraphMaps.onnx_name``), read on first use."""
        if self._onnx_name is None:
            self._onnx_name = {}
            for v in self._cut.described_values:
                for p in v.metadata_props:
                    if p.key == ORIGINAL_NODE_NAME:
                        self._onnx_name[p.value] = v.name
        return self._onnx_name
