"""Aten signatures of aten calls (flat, or calls of aten functions, ``aten_functions``): the catalogued schema with this
call's arguments bound to parameters."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import onnx

from inspector.core.aten.schemas import AtenSchema, BoundArgument, Parameter, SchemaCatalogue, bind, format_signature
from inspector.core.model.calls import FX_NODE, AtenCall
from inspector.core.model.fx import FxNode, Symbol, TensorRef, parse_fx_node
from inspector.core.model.walk import as_text


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
    """``call``'s schema with its arguments bound; for a recognised call whose body several overloads share, no
    schema: which would be a guess. Its ``problem`` names each candidate's schema instead, one a line, so a reader
    sees what tells them apart (``conv2d``'s ``SymInt[2] stride=[1, 1]``, ``convolution``'s ``bool transposed``)."""
    if call.recognised and len(call.candidates) > 1:
        cat = catalogue or SchemaCatalogue.default()
        schemas = [(c, cat.get(c)) for c in call.candidates]
        lines = [format_signature(schema, None) if schema is not None else f"{c} (no catalogued schema)"
                 for c, schema in schemas]
        return CallSignature(None, (), "\n".join([f"a body {len(lines)} overloads share, so no one schema binds "
                                                  "this call's values; the candidates:", *lines]))
    fx = call.fx
    if not (call.recognised and len(call.candidates) == 1 and fx is not None):
        return signature_of(call.target, fx, catalogue or SchemaCatalogue.default())
    tensors = recognised_tensors(call)
    if tensors:
        fx = replace(fx, kwargs={**tensors, **fx.kwargs})
    sig = signature_of(call.target, fx, catalogue or SchemaCatalogue.default())
    # a tensor the template takes but this call's nodes do not show (read by a node another call holds, a mask's
    # Where made once for every layer) is not recovered: shown missing, never as its default (``attn_mask=None``
    # would say no mask was passed); so is an argument a literal of the template moves with that was not read back
    # (a Concat's axis -1 had shown swin's cat as ``dim=0``)
    unbound = (_template_tensors(call) | _template_arguments(call)).difference(tensors, fx.kwargs)
    if unbound and sig.bound:
        sig = replace(sig, bound=tuple(
            replace(b, value=None, is_default=False, provided=False) if b.parameter.name in unbound else b
            for b in sig.bound))
        folded = [f"{p}: the optimizer folded {op}({p}) into {value}" for p, (op, value) in _folded(call).items()
                  if p in unbound]
        if folded:
            sig = replace(sig, problem="; ".join(filter(None, [sig.problem, *folded])))
    return sig


def _folded(call: AtenCall) -> dict[str, tuple[str, str]]:
    """The tensors of ``call``'s template that its nodes do not read because the optimizer folded the template node
    reading them into a constant: parameter -> (that node's operator, the constant read in its place). A stripped
    export's ``linear`` read ``weight=<missing>`` with no word of where its weight went: its Transpose was folded into
    the ``val_<n>`` its MatMul reads. Only where the call's nodes are the template's last ones, node for node
    (``_by_wiring``'s test); the constant's name is the model's text (shown escaped)."""
    from inspector.core.model.recognise_call import RecognisedCall  # (the matcher's module: start-up)

    t = _naming_template(call)
    nodes = call.nodes() if isinstance(call, RecognisedCall) else None
    if t is None or not nodes:
        return {}
    body = [n for n in nodes if not (n.op_type == "Constant" and n.domain in ("", "ai.onnx"))]
    skip = len(t.nodes) - len(body)
    if skip <= 0:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for tn, node in zip(t.nodes[skip:], body):
        if (node.op_type, node.domain) != (tn.op_type, tn.domain) or len(node.input) != len(tn.inputs):
            return {}
        for ref, value in zip(tn.inputs, node.input):
            if ref.kind == "n" and ref.a < skip:  # (a folded node's output, read here as a constant)
                gone = t.nodes[ref.a]
                for x in gone.inputs:
                    param = t.tensors[x.a] if x.kind == "x" and x.a < len(t.tensors) else ""
                    if param:
                        out.setdefault(param, (gone.op_type, value))
    return out


def _template_tensors(call: AtenCall) -> set[str]:
    """The parameters of the outside tensors of ``call``'s template (``_naming_template``)."""
    t = _naming_template(call)
    return {p for p in t.tensors if p} if t is not None else set()


def _template_arguments(call: AtenCall) -> set[str]:
    """The parameters a literal of ``call``'s first template moves with (its masked slots; not an input dimension)."""
    from inspector.core.aten.templates import template_named  # (the catalogue is read where it is used: start-up)

    t = template_named(call.recognised[0]) if call.recognised else None
    if t is None:
        return set()
    slots = [*t.constants, *(slot for n in t.nodes for _name, slot in n.attributes)]
    return {p for slot in slots if slot.masked for p in slot.moves_with if not p.startswith("#")}


def _naming_template(call: AtenCall) -> Any:
    """The first of the templates ``call`` was recognised by that names its outside tensors (None if none does)."""
    from inspector.core.aten.templates import template_named  # (the catalogue is read where it is used: start-up)

    return next((t for name in call.recognised if (t := template_named(name)) is not None and any(t.tensors)), None)


def recognised_tensors(call: AtenCall) -> dict[str, Any]:
    """The tensor arguments of a call recognised by body template, by parameter: each outside tensor of its template
    named by the parameter the generator passed it as (``Template.tensors``). Only where that is certain: the call's
    nodes (its Constant feeders aside) are the template's (or its last ones), node for node in graph order, with every
    operand the template takes from one of those nodes read from that node (``_by_wiring``: SDPA's query, key and
    value, read by its Mul, Reshape and last MatMul; a linear's input and bias where the optimizer folded its weight's
    Transpose); else, the template's first node is the call's first node (same operator and operand count) and reads
    every outside tensor. Otherwise none (the signature shows those parameters as missing). A multi-node call the
    matcher found holds what its match read (``RecognisedCall.wiring``): that comes first, for a body whose nodes lie
    in another order than the template's (the zoo's stripped exports: 22 of 97 multi-node calls' tensors, missing
    before, each the one torch's FX text names); a one-node body among the nodes computing its shape (an unoptimised
    export's view) reads them from its one node of the template's operator."""
    from inspector.core.model.recognise_call import RecognisedCall  # (the matcher's module: start-up)

    t = _naming_template(call)
    if t is None or not t.nodes:
        return {}
    wiring = call.wiring if isinstance(call, RecognisedCall) else None
    values = dict(wiring[1]) if wiring is not None and wiring[0] == t.name else None  # (as the match read them)
    nodes = call.nodes() if isinstance(call, RecognisedCall) and values is None else None
    if values is None and nodes:
        values = _by_wiring(t.nodes, nodes)
        if values is None and len(t.nodes) == 1:  # (a one-node body with the nodes computing its shape: noopt views)
            values = _by_first_node(t.nodes, _the_node(t.nodes[0], nodes))
    if values is None:
        values = _by_first_node(t.nodes, call.first_node)
    out: dict[str, Any] = {}
    for a, value in sorted(values.items()):
        param = t.tensors[a] if a < len(t.tensors) else ""
        if not param or not value:
            continue
        got = out.get(param)
        if got is None:
            out[param] = TensorRef(as_text(value))
        else:  # a list parameter (``cat``'s tensors): each tensor in order
            out[param] = [*(got if isinstance(got, list) else [got]), TensorRef(as_text(value))]
    return out


def _by_wiring(template: Sequence[Any], nodes: list[onnx.NodeProto]) -> dict[int, str] | None:
    """Each outside tensor of ``template`` (its ``x`` operands, by number) as the graph value the call's ``nodes``
    read there, if the nodes (Constant nodes aside: a template holds their values as constants) are the template's
    node for node (or its last ones), with the same operators and operand counts, and every operand the template wires
    from one of those nodes is that node's output here: the order is then the body's, not a guess. None otherwise."""
    body = [n for n in nodes if not (n.op_type == "Constant" and n.domain in ("", "ai.onnx"))]
    if not body or len(body) > len(template):
        return None
    # fewer nodes than the template: its last ones, the others folded by the optimizer (a weight's Transpose) or
    # computed by an earlier call and shared (``recognise_shared``); what those made is not checked, and the tensors
    # only they read stay unbound
    skip = len(template) - len(body)
    values: dict[int, str] = {}
    for tn, node in zip(template[skip:], body):
        if (node.op_type, node.domain) != (tn.op_type, tn.domain) or len(node.input) != len(tn.inputs):
            return None
        for ref, value in zip(tn.inputs, node.input):
            if ref.kind == "n" and ref.a >= skip:
                made = body[ref.a - skip].output
                if ref.b >= len(made) or made[ref.b] != value:
                    return None
            elif ref.kind == "x" and values.setdefault(ref.a, value) != value:
                return None
    return values


def _the_node(tn: Any, nodes: list[onnx.NodeProto]) -> onnx.NodeProto | None:
    """The one node of ``nodes`` of template node ``tn``'s operator and operand count (a one-node body's, beside the
    Constant, Cast and Concat nodes an unoptimised export computes its shape with), None unless exactly one is."""
    found = [n for n in nodes if (n.op_type, n.domain, len(n.input)) == (tn.op_type, tn.domain, len(tn.inputs))]
    return found[0] if len(found) == 1 else None


def _by_first_node(template: Sequence[Any], node: onnx.NodeProto | None) -> dict[int, str]:
    """Each outside tensor of ``template`` as the call's first node reads it, where that node is the template's first
    (same operator and operand count) and reads every one; else none."""
    head = template[0]
    outside = {r.a for n in template for r in n.inputs if r.kind == "x"}
    if node is None or (node.op_type, node.domain) != (head.op_type, head.domain) \
            or len(node.input) != len(head.inputs) or outside != {r.a for r in head.inputs if r.kind == "x"}:
        return {}
    values: dict[int, str] = {}
    for ref, value in zip(head.inputs, node.input):
        if ref.kind == "x":
            values.setdefault(ref.a, value)
    return values


def signature_of(target: str, fx: FxNode | None, cat: SchemaCatalogue) -> CallSignature:
    schema = cat.get(target) if target.startswith("aten::") or "::" in target else None
    if schema is None:
        return CallSignature(None, (), f"no catalogued schema for {target}")
    if fx is None:
        return CallSignature(schema, (), "the FX node text could not be read")
    try:
        bound = tuple(bind(schema, fx.args, fx.kwargs))
    except ValueError as e:
        merged = _merge_words(fx.args)
        try:
            if merged == fx.args:
                raise
            bound = tuple(bind(schema, merged, fx.kwargs))
        except ValueError:
            return CallSignature(schema, (), f"arguments do not fit the schema: {e}")
    problem = None
    if not fx.complete:
        problem = "the FX arguments were only partly readable"
        if fx.unread:
            problem += ": could not read " + ", ".join(repr(u) for u in fx.unread)
    return CallSignature(schema, bound, problem)


def _merge_words(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Adjacent bare words joined with ",": FX prints a string without quotes, so an einsum equation such as
    ``ij,jk`` reads as two names; tried only when the arguments as read do not fit the schema."""
    out: list[Any] = []
    for a in args:
        word = isinstance(a, Symbol) and "." not in a.text and "(" not in a.text
        if word and out and isinstance(out[-1], Symbol) and "." not in out[-1].text and "(" not in out[-1].text:
            out[-1] = Symbol(f"{out[-1].text},{a.text}")
        else:
            out.append(a)
    return tuple(out)


def function_call_signature(f: onnx.FunctionProto, call: onnx.NodeProto | None = None,
                            catalogue: SchemaCatalogue | None = None,
                            target: str | None = None) -> CallSignature | None:
    """The aten signature of an aten function (``aten_functions``: known by its doc string, name and domain, or
    its call's metadata), exactly as for a flat aten call. When the call node carries readable FX metadata, the
    arguments are bound from it as a flat call's are, and the call's attributes are checked against them (a
    disagreement is the signature's ``problem``); otherwise non-tensor parameters take the call's attribute values,
    else the function's declared defaults, else the schema's, and tensor parameters take the value the call passes
    to the function input of that name. Without ``call`` the function's own defaults are bound (and parameters
    without one are missing). ``target``: the aten target when the caller knows it (a ``FunctionIndex``).
    None when the function is not an aten function."""
    cat = catalogue or SchemaCatalogue.default()
    if target is None:
        from inspector.core.model.aten_functions import recognise  # (a function not indexed yet: start-up)

        target = recognise(f, [call] if call is not None else [], None, cat).target
    schema = cat.get(target) if target else None
    if schema is None:
        return None
    given = {a.name: a for a in call.attribute if not a.ref_attr_name} if call is not None else {}
    actual = {formal: call.input[k] for k, formal in enumerate(f.input)
              if call is not None and k < len(call.input)}
    fx_sig = _fx_signature(call, target, cat) if call is not None and target is not None else None
    if fx_sig is not None and fx_sig.bound:
        # tensor arguments as the values the call passes to the input of their name (the metadata names them by
        # FX names, which are no ONNX values); one passed to no input of that name is not shown
        passed = tuple(b if not isinstance(b.value, TensorRef) else
                       BoundArgument(b.parameter, TensorRef(actual[b.parameter.name]), False, True)
                       if b.parameter.name in actual else BoundArgument(b.parameter, None, False, False)
                       for b in fx_sig.bound)
        return _checked(CallSignature(fx_sig.schema, passed, fx_sig.problem), given)
    declared = {a.name: a for a in f.attribute_proto}
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


def _fx_signature(call: onnx.NodeProto, target: str, cat: SchemaCatalogue) -> CallSignature | None:
    """The signature the call node's FX metadata binds, when it names ``target``; None without such metadata."""
    text = next((as_text(p.value) for p in call.metadata_props if p.key == FX_NODE), None)
    if text is None or len(text) > MAX_FX_TEXT:
        return None
    fx = parse_fx_node(text)
    if fx is None or fx.aten_target != target:
        return None
    return signature_of(target, fx, cat)


MAX_FX_TEXT = 1_000_000  # untrusted text: bound what is parsed (the zoo's longest FX text is far below)


def _checked(sig: CallSignature, given: dict[str, onnx.AttributeProto]) -> CallSignature:
    """``sig`` (bound from FX metadata) with the call's attributes checked against it: an attribute that names a
    parameter but holds another value than the metadata is the signature's problem (the metadata's values stay:
    they are the aten call's own)."""
    differ = []
    for b in sig.bound:
        attr = given.get(b.parameter.name)
        if attr is None or b.value is None:
            continue
        passed = _attribute_value(attr, b.parameter)
        if not _same(passed, b.value):
            differ.append(f"{b.parameter.name}: attribute {passed!r}, FX metadata {plain(b.value)!r}")
    if not differ:
        return sig
    problem = "the call's attributes disagree with its FX metadata: " + "; ".join(differ)
    return CallSignature(sig.schema, sig.bound, f"{sig.problem}; {problem}" if sig.problem else problem)


def plain(v: object) -> object:
    """An argument value as plain data for comparing and showing: symbols as their text, tuples as lists."""
    if isinstance(v, Symbol):
        return v.text
    if isinstance(v, TensorRef):
        return f"%{v.name}"
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def _same(a: object, b: object) -> bool:
    a, b = plain(a), plain(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-12)
        return False
    return a == b


def _attribute_value(attr: onnx.AttributeProto, param: Parameter) -> object:
    """An attribute as the aten argument it stands for (ints back to bools for ``bool`` parameters)."""
    from onnx import helper  # the rest of onnx only when a function declares attributes (start-up: util/onnxpkg.py)

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
