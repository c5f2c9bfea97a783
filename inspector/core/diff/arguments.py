"""Which aten argument a changed value came from, by the evidence-based link rules of ``specialise.links``
(the literal sits where torchlib's lowering implements the argument, and holds what the lowering makes of it),
never by equal values alone. Each side of a value change is linked in its own call; the arguments whose values
differ between the two calls are named with both values (``dim1 (Transpose.perm): [0, 2, 1, 3] -> [0, 3, 2, 1];
dim1: 2 -> 3``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inspector.core.bodies.body import Body
from inspector.core.bodies.literals import Literal
from inspector.core.diff.model import ArgChange
from inspector.core.diff.values import show_value
from inspector.core.model.calls import made_inside
from inspector.core.model.fx import TensorRef
from inspector.core.specialise.links import ArgLink, BodyFlow, Shape, link, literal_place, plain_value

if TYPE_CHECKING:  # (bound where a body's operators changed: a diff of equal exports never binds one)
    from inspector.core.model.signature import CallSignature


@dataclass(slots=True)
class CallContext:
    """One side of a value change: the aten call's target and bound arguments, and its body's data flow (the
    body's inputs in the order of the call's tensor arguments, typed from the graph)."""

    target: str
    args: dict[str, Any]
    flow: BodyFlow
    key: str  # the target and argument values, for caching labels

    def links(self, lit: Literal) -> list[ArgLink]:
        """The aten arguments this literal of the body derives from (none for parametric attributes)."""
        if lit.kind == "parametric" or not self.args:
            return []
        place = literal_place(self.flow.body, lit.path, lit.name, lit.kind, lit.op_type, self.flow)
        return link(self.target, self.args, lit.value, place, self.flow)


def call_context(target: str, args: dict[str, Any], body: Body, shapes: Mapping[str, Shape]) -> CallContext:
    return CallContext(target, args, BodyFlow(body, shapes), f"{target}{args!r}")


def name_arguments(where: str, lit_a: Literal, ctx_a: CallContext | None, lit_b: Literal,
                   ctx_b: CallContext | None) -> tuple[str, tuple[ArgChange, ...]]:
    """The label of a changed literal (``dim1 (Transpose.perm)``) and the linked arguments whose values differ
    between the two calls. Without such an argument, the label names every linked argument (the value changed
    while the argument did not: a shape-specialised value such as the default SDPA scale for another head dim)."""
    links_a = ctx_a.links(lit_a) if ctx_a is not None else []
    links_b = ctx_b.links(lit_b) if ctx_b is not None else []
    params: list[str] = []
    for x in (*links_a, *links_b):
        if x.parameter not in params:
            params.append(x.parameter)
    if not params:
        return _named(where, lit_a, lit_b), ()
    changed: list[ArgChange] = []
    for p in params:
        old = _value(p, links_a, ctx_a)
        new = _value(p, links_b, ctx_b)
        if old != new:
            changed.append(ArgChange(p, old, new))
    shown = [a.parameter for a in changed] or params
    return f"{', '.join(shown)} ({where})", tuple(changed)


def _named(where: str, lit_a: Literal, lit_b: Literal) -> str:
    """``where`` with the name of the constant read there where both sides give it the name torch gave its FX value
    (``unsqueeze_14 (Mul.B)``, GPT-NeoX's rotary table, as the summary and the app call it): the exporter's own
    constants, ``val_<n>``, are numbered, and a number says nothing."""
    name = lit_a.name
    if lit_a.kind != "initializer" or name != lit_b.name or not name or made_inside(name):
        return where
    return f"{name} ({where})"


def _value(parameter: str, links: Sequence[ArgLink], ctx: CallContext | None) -> Any:
    for x in links:
        if x.parameter == parameter:
            return x.value
    return plain_value(ctx.args.get(parameter)) if ctx is not None else None


TENSOR = "tensor"  # a tensor passed as an argument, as an argument change shows it (``bias: None -> tensor``)


def passed_differently(sig_a: CallSignature, sig_b: CallSignature) -> tuple[ArgChange, ...]:
    """The arguments two calls of one overload pass differently, for a body whose operators changed: what the
    aten signature says of why. A tensor counts as passed or not (``bias: None -> tensor``: a Linear given a bias
    lowers to MatMul and Add), never by its name, which differs in every call; any other value by its value, a size
    computed in the graph by the FX node that computes it (``size: [1, 8, 96] -> [%sym_size_int_1, 8, 96]``: a
    dynamic export's view). Case: Qwen2 against Mistral, each attention projection's body "1 -> 2 nodes: +1 (Add)"
    without a word of its bias."""
    if sig_a.schema is None or sig_b.schema is None or sig_a.schema.name != sig_b.schema.name \
            or sig_a.schema.overload != sig_b.schema.overload:
        return ()
    passed_b = {x.parameter.name: x.value for x in sig_b.bound}
    out: list[ArgChange] = []
    for x in sig_a.bound:
        if x.parameter.name in passed_b:
            tensor = x.parameter.is_tensor
            old, new = _passed(x.value, tensor), _passed(passed_b[x.parameter.name], tensor)
            if old != new:
                out.append(ArgChange(x.parameter.name, old, new))
    return tuple(out)


def _passed(v: Any, tensor: bool) -> Any:
    if isinstance(v, TensorRef):
        return TENSOR if tensor else repr(v)
    if isinstance(v, (list, tuple)) and any(isinstance(x, TensorRef) for x in v):
        return [_passed(x, tensor) for x in v]
    return plain_value(v)


def arguments_text(arguments: Sequence[ArgChange], value: tuple[str, str] | None = None) -> str:
    """``; dim1: 2 -> 3`` (empty without arguments); None is an argument left at its default. ``value``: the
    changed value's old and new text, which an argument that reads the same need not repeat."""
    shown = [(a.parameter, _shown(a.old), _shown(a.new)) for a in arguments]
    shown = [s for s in shown if s[1:] != value]
    return "; " + ", ".join(f"{p}: {old} -> {new}" for p, old, new in shown) if shown else ""


def _shown(v: Any) -> str:
    return "None" if v is None else show_value(v)
