"""Links from literals to aten arguments, by evidence: the literal reaches the operand or attribute through which
torchlib's lowering implements that argument, and its value is what the lowering makes of the argument.

The evidence is learned: the catalogue (``core.aten.evidence``, generated from one-op torch exports) names, for each
overload and parameter, the ONNX *place* (an attribute ``Op.attr``, or an operand ``Op[slot]`` that a constant
reaches through value-preserving ops such as Cast and CastLike) and the relation (``core.specialise.relations``)
by which the lowering turns the argument into the value found there (``perm`` is the identity with ``dim0`` and
``dim1`` swapped; ``pads`` is ``padding`` repeated for begin and end). A few rules are written by hand, each where
the generator cannot reach, saying why. Equal values in any other place are a coincidence, not a link.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inspector.core.aten.evidence import covered_parameters, evidence_for, op_name
from inspector.core.bodies.body import Body
from inspector.core.model.fx import Symbol, TensorRef
from inspector.core.specialise.flow import BodyFlow, GraphShapes, Shape, value_shape
from inspector.core.specialise.relations import (
    Args,
    Ctx,
    Expect,
    _dim,
    _dtype,
    _element,
    _end_dim,
    _equal,
    _last_axes,
    _scalar,
    _string,
    close,
    num,
    relation,
    unwrap,
)

if TYPE_CHECKING:
    from inspector.core.specialise.constant_uses import Use

__all__ = ["ArgLink", "BodyFlow", "GraphShapes", "Place", "Shape", "explain_shape", "link", "literal_place",
           "plain_value", "rules_for", "value_shape"]


@dataclass(frozen=True, slots=True)
class ArgLink:
    """Evidence that a literal came from an aten argument: the rule that tied it and what the data flow showed."""

    parameter: str
    value: Any  # the argument's value in this call (a whole list even when one element is linked)
    rule: str  # the evidence in words: "perm swaps dims 1 and 2", "Conv.pads [1, 1] are padding [1] at begin and end"
    place: str = ""  # where the lowering implements the argument and the literal sits: "Transpose.perm", "Mul[1]"


# --- the rules ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    """``parameter`` is implemented through ``place``: ``Op.attr`` (an attribute) or ``Op[slot]`` (an operand)."""

    parameter: str
    op_type: str
    attribute: str | None = None
    slots: tuple[int, ...] = ()
    expect: Expect = _equal

    @property
    def place(self) -> str:
        if self.attribute is not None:
            return f"{self.op_type}.{self.attribute}"
        return f"{self.op_type}[{'|'.join(map(str, self.slots))}]"


def _a(param: str, op: str, attr: str, expect: Expect = _equal) -> Rule:
    return Rule(param, op, attr, (), expect)


def _o(param: str, op: str, *slots: int, expect: Expect = _scalar) -> Rule:
    return Rule(param, op, None, slots, expect)


# Written by hand only where the generator (scripts/gen_evidence.py) cannot reach; each says why, from
# resources/evidence_coverage.md. A rule applies only to a parameter the catalogue has no evidence for.
_NOT_REGISTERED = "no overload of the op in the pinned torchlib registry has the parameter (exports of other versions)"
_NUMBER_FOR_TENSOR = "a Python number for a Tensor parameter: torch's function takes tensors there, only a " \
                     "decomposition passes a number, and the one-op export passes tensors"
HAND_RULES: dict[str, list[Rule]] = {
    # varying normalized_shape changes the body's structure (the scale of ones takes its shape): no slot aligns
    "layer_norm": [_a("normalized_shape", "LayerNormalization", "axis", _last_axes)],
    "rms_norm": [_a("eps", "RMSNormalization", "epsilon", _scalar)],  # _NOT_REGISTERED
    "batch_norm": [_a("eps", "BatchNormalization", "epsilon", _scalar)],  # _NOT_REGISTERED
    "convert_element_type": [_a("dtype", "Cast", "to", _dtype)],  # _NOT_REGISTERED (a prims op)
    "squeeze": [_o("dims", "Squeeze", 1, expect=_dim())],  # _NOT_REGISTERED
    # varying groups changes the weight's shape, and the generator changes one argument at a time
    "conv1d": [_a("groups", "Conv", "group")], "conv2d": [_a("groups", "Conv", "group")],
    "conv3d": [_a("groups", "Conv", "group")], "convolution": [_a("groups", "Conv", "group")],
    # sym_size exists only with dynamic shapes; one-op exports have static ones
    "sym_size": [_a("dim", "Shape", "start", _dim()), _a("dim", "Shape", "end", _end_dim)],
    # split's dim: the body's structure changes with it (the outputs' shapes)
    "split": [_a("dim", "SplitToSequence", "axis", _dim()), _a("dim", "Split", "axis", _dim())],
    # reshape is exported as view (whose parameter is size): the evidence is learned for view
    "reshape": [_o("shape", "Reshape", 1, expect=_element)],
    # scalar_tensor's s: the one-op export folds the whole call into a constant the body does not read
    "scalar_tensor": [_o("s", "Cast", 0)],
    # pad's mode: reflect and replicate take no value, and the one-op variant keeps the base call's value
    "pad": [_a("mode", "Pad", "mode", _string)],
    # dropout is exported only in training mode; the generator exports in eval mode
    "scaled_dot_product_attention": [_o("dropout_p", "Dropout", 1)],
    # _NUMBER_FOR_TENSOR
    "minimum": [_o("other", "Min", 1)], "maximum": [_o("other", "Max", 1)],
    "bitwise_and": [_o("other", "And", 1)], "bitwise_or": [_o("other", "Or", 1)],
    "floor_divide": [_o("other", "Div", 1)],
}


def rules_for(target: str) -> tuple[Rule, ...]:
    """Rules of ``aten::name.overload``: the learned evidence, then the hand-written rules of its op for the
    parameters the catalogue has no evidence for (computed once per target)."""
    return _rules(target)


@functools.lru_cache(maxsize=1024)
def _rules(target: str) -> tuple[Rule, ...]:
    learned: list[Rule] = []
    for e in evidence_for(target):
        expect = relation(e.relation)
        if expect is not None:
            slots = () if e.attribute is not None else (e.slot,)
            learned.append(Rule(e.parameter, e.op_type, e.attribute, slots, expect))
    covered = covered_parameters(target)
    hand = [r for r in HAND_RULES.get(op_name(target), ()) if r.parameter not in covered]
    return (*learned, *hand)


# --- applying them -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Place:
    """Where a literal sits: an attribute of a top-level node, or the operands a constant reaches."""

    attribute: tuple[int, str, str] | None  # (node, op_type, attribute)
    uses: tuple[Use, ...]
    label: str = "constant"  # how the evidence names the literal: "constant val_49"


def link(target: str, args: Args, value: Any, place: Place, flow: BodyFlow) -> list[ArgLink]:
    """Every rule of ``target`` whose place this literal is and whose expected value it holds."""
    out: list[ArgLink] = []
    seen: set[tuple[str, str]] = set()
    for rule in rules_for(target):
        if rule.parameter not in args:
            continue
        arg = args[rule.parameter]
        for ctx in _contexts(rule, value, place, flow):
            hit = rule.expect(arg, args, ctx)
            if hit is not None and (rule.parameter, rule.place) not in seen:
                seen.add((rule.parameter, rule.place))
                how = f" (through {', '.join(ctx.via)})" if ctx.via else ""
                text = hit[1].replace("the argument", rule.parameter)
                text = f"{rule.place} {text}" if not text.startswith(("perm ", "pads ", "axis ", "end ")) else text
                out.append(ArgLink(rule.parameter, plain_value(arg), f"{text}{how}", rule.place))
    # hand-written where the generator cannot reach: the default scale (None) is 1/sqrt(E) of the query's last
    # dim, a relation to an input shape; and the data flow shows which of query and key each Mul scales (torchlib
    # splits the scale into its square root on both), which the learned "Mul[1] is sqrt(scale)" does not say.
    # Where this rule ties the constant, its link replaces the learned one
    if target.split("::", 1)[-1].startswith("scaled_dot_product_attention") and place.uses:
        special = _sdpa_scale(args, value, place, flow)
        if special:
            out = [a for a in out if a.parameter != "scale"] + special
    return out


def _contexts(rule: Rule, value: Any, place: Place, flow: BodyFlow) -> Iterable[Ctx]:
    if rule.attribute is not None:
        if place.attribute is not None and place.attribute[1:] == (rule.op_type, rule.attribute):
            yield Ctx(value, flow, place.attribute[0])
        return
    for use in place.uses:
        if use.op_type == rule.op_type and use.slot in rule.slots and "Sqrt" not in use.via:
            yield Ctx(value, flow, use.node, use.via)


_SCALE_PLACE = "Mul on query/key"


def _sdpa_scale(args: Args, value: Any, place: Place, flow: BodyFlow) -> list[ArgLink]:
    """The SDPA scale: a constant multiplying query and key (as its square root, torchlib's split) or their
    product; with the default scale, the value must be 1/sqrt(E) for the query's typed last dimension E."""
    v = num(unwrap(value))
    if v is None or isinstance(v, bool) or v <= 0 or "scale" not in args:
        return []
    q_k: set[int] = set()
    for use in place.uses:
        node = flow.body.nodes[use.node]
        if use.op_type != "Mul" or len(node.input) != 2:
            continue
        side: set[int] = set(flow.from_inputs(node.input[1 - use.slot]) & {0, 1})
        if not side and node.output:  # key read through a rewritten chain: it is the right factor of q @ k^T
            side = {1 for i, slot in flow.consumers.get(node.output[0], ()) if
                    flow.body.nodes[i].op_type == "MatMul" and slot == 1}
        q_k |= side
    if not q_k:
        return []
    sqrt_in_graph = any("Sqrt" in u.via for u in place.uses if u.op_type == "Mul")
    per_mul = math.sqrt(float(v)) if sqrt_in_graph else float(v)
    both = q_k == {0, 1}
    applied = per_mul * per_mul if both else per_mul  # the factor the product query @ key^T is scaled by
    if both:
        how = "its square root taken in the graph, applied to both query and key" if sqrt_in_graph else \
            "applied to both query and key"
    else:
        how = "applied to the " + ("query" if 0 in q_k else "key")
    scale = args["scale"]
    if scale is not None:
        if isinstance(scale, (int, float)) and close(applied, float(scale)):
            form = "sqrt(scale)" if both and not sqrt_in_graph else "scale"
            return [ArgLink("scale", scale, f"{place.label} is {form}, {how}", _SCALE_PLACE)]
        return []
    q = flow.input_shape(0)
    e = q[-1] if q else None
    if e and close(applied, 1.0 / math.sqrt(e)):
        form = "sqrt(1/sqrt(E))" if both and not sqrt_in_graph else "1/sqrt(E)"
        return [ArgLink("scale", None, f"default scale: {place.label} is {form}, {how}, for head dim E={e} "
                                       f"(the last dim of query {_shape_text(q)})", _SCALE_PLACE)]
    return []


def _fmt(x: float) -> str:
    return f"{x:.8g}"


def _shape_text(shape: Shape | None) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]" if shape is not None else "?"


def plain_value(v: Any) -> Any:
    """An argument value as plain data: symbols as their text, other FX nodes as ``{"node": name}``."""
    if isinstance(v, Symbol):
        return v.text
    if isinstance(v, TensorRef):
        return {"node": v.name}
    if isinstance(v, (list, tuple)):
        return [plain_value(x) for x in v]
    return v


def literal_place(body: Body, path: Sequence[int | str], name: str, kind: str, op_type: str,
                  flow: BodyFlow) -> Place:
    """The place of a literal: an attribute of a top-level node, or the uses of a constant's value."""
    if kind == "initializer":
        return Place(None, tuple(flow.uses(name)), f"constant {name}")
    if len(path) != 1 or not isinstance(path[0], int):
        return Place(None, ())
    node = body.nodes[path[0]]
    if kind == "constant":
        label = f"constant {node.output[0]}" if node.output else "constant"
        return Place(None, tuple(flow.uses(node.output[0])), label) if node.output else Place(None, ())
    return Place((path[0], op_type, name), ())


# --- shape-specialised values ------------------------------------------------------------------------------------


def explain_shape(target: str, args: Args, value: Any, place: Place, flow: BodyFlow) -> str | None:
    """Why a constant shape is what it is, from the typed shapes of the values it is used with, when the lowering
    computed it from an input shape at trace time (it would be wrong for another shape); None otherwise."""
    v = value
    if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return None
    op = target.split("::", 1)[-1].split(".", 1)[0]
    for use in place.uses:
        if use.op_type != "Reshape" or use.slot != 1 or use.via:
            continue
        node = flow.body.nodes[use.node]
        data = node.input[0] if node.input else ""
        shape = flow.shapes.get(data)
        if shape is None or None in shape:
            continue
        if op in ("view", "_unsafe_view", "reshape"):
            text = _resolved_size(v, args.get("size", args.get("shape")), shape, data)
        elif op == "scaled_dot_product_attention":
            text = _key_reshape(v, shape, data, flow)
        else:
            text = None
        if text:
            return text
    return None


def _dims(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _resolved_size(v: list[int], size: Any, shape: Shape, data: str) -> str | None:
    """``view(size)`` with -1 (or a symbolic size) where the baked shape has a number: resolved at trace time."""
    if not isinstance(size, list) or len(size) != len(v):
        return None
    numel = math.prod(d for d in shape if d is not None)
    unresolved = [i for i, s in enumerate(size) if not isinstance(s, int) or s == -1]
    if not unresolved or any(v[i] == -1 for i in unresolved) or math.prod(v) != numel:
        return None
    if any(isinstance(size[i], int) and size[i] != v[i] for i in range(len(v)) if i not in unresolved):
        return None
    which = ", ".join(f"size[{i}]={size[i] if isinstance(size[i], int) else plain_value(size[i])}" for i in unresolved)
    return f"{_dims(v)}: {which} resolved from the static shape of {data} {_dims(shape)}"


def _key_reshape(v: list[int], shape: Shape, data: str, flow: BodyFlow) -> str | None:
    """torchlib's SDPA reshapes the key to (-1, S, E), transposes it, and reshapes it back to (..., E, S)."""
    dims = [d for d in shape if d is not None]
    if len(v) == 3 and len(dims) >= 2 and v[1:] == dims[-2:] and v[0] in (-1, math.prod(dims[:-2])):
        return f"{_dims(v)} = (-1, S, E) of key {data} {_dims(shape)}" + (" (-1 resolved)" if v[0] != -1 else "")
    # the reshape back: its data comes from Transpose(Reshape(key)); the key's leading dims, then E and S
    producer = flow.producer.get(data)
    if producer is None or flow.body.nodes[producer].op_type != "Transpose":
        return None
    before = flow.producer.get(flow.body.nodes[producer].input[0])
    if before is None or flow.body.nodes[before].op_type != "Reshape":
        return None
    key = flow.body.nodes[before].input[0]
    k = flow.shapes.get(key)
    if k is None or None in k or len(k) < 2:
        return None
    kd = [d for d in k if d is not None]
    if len(v) == len(kd) and v[:-2] == kd[:-2] and v[-2:] == [kd[-1], kd[-2]]:
        return f"{_dims(v)} = key's leading dims, then (E, S), of key {key} {_dims(k)}"
    if len(v) == 4 and len(kd) == 5 and v[-2:] == [kd[-1], kd[-2]] and math.prod(v[:-2]) == math.prod(kd[:-2]):
        return f"{_dims(v)} = key's leading dims merged, then (E, S), of key {key} {_dims(k)}"
    return None
