"""Planning a fold: which aten calls of a flat export can become function calls, and with which body and binding.

Each call's plan is its body (built and fingerprinted once per group key), the values its group reads and makes, the
tensor argument each read is (by metadata evidence only: ``_Evidence``), and the form of its FX arguments (schema
binding and call attributes, once per form). A call stays flat, with the reason, when folding it would be unsafe:
inside a function body, in a branch or loop body of a node not its own (unless asked), nodes shared with another call,
unreadable metadata, or a group that is not convex (folding would form a cycle). A call whose own nodes hold a loop
or branches (``embedding_bag``) folds with them. Calls are then grouped into function classes by target, body
and binding. ``build.py`` makes the protobuf from these plans.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from onnx import AttributeProto

from inspector.core.aten.schemas import BoundArgument, Parameter
from inspector.core.bodies.body import Body, group_body
from inspector.core.bodies.bodykey import GroupShape, group_shape
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.fold.messages import attribute
from inspector.core.model.calls import AtenCall
from inspector.core.model.fx import FxNode, Symbol, TensorRef
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.signature import CallSignature, call_signature
from inspector.core.model.signature_forms import SignatureForm, SignatureForms
from inspector.core.model.walk import NodePath, resolve_path, subgraphs

USER_INPUT = "USER_INPUT"


@dataclass(slots=True)
class Planned:
    call: AtenCall
    body: Body  # shared by the calls of one group key: names are those of the call that built it
    fingerprint: str
    # tuples, not lists: a tuple of names or numbers leaves the cyclic collector's lists at its first collection, a
    # list never does. With the collector on (the API in-process; the console script turns it off), 320k lists held
    # through a 100k-node fold made CPython walk the whole heap more often (``aten_fold._SHAPED``)
    indices: tuple[int, ...]
    reads: tuple[str, ...]  # what this call's group reads, in body (first-use) order
    outputs: tuple[str, ...]  # what this call's group makes that is read outside it
    roles: tuple[int | None, ...]  # per read: the tensor argument it is, by position in ``arg_names``
    form: Form
    maps: GraphMaps  # of the graph holding the group: the main graph, or a branch or loop body of one of its nodes
    # set once the call's function is known (``aten_fold``): what every call of its function and form sets alike
    # (``build.call_head``), and the order in which it passes its reads (``build.call_inputs``; empty: as read). Held
    # here, not in a tuple per call beside the plan: one container less per call for the garbage collector
    head: bytes = b""
    order: tuple[int, ...] = ()


@dataclass(slots=True)
class Form:
    """What the calls of one FX argument form share: tensor arguments named by schema parameter (``tensors_1`` for
    lists), the non-tensor arguments, and the call node's attributes made from them."""

    arg_names: list[str]
    bound: list[BoundArgument]  # non-tensor arguments, and numbers passed to Tensor parameters
    attributes: list[AttributeProto]
    doc: str  # the schema text
    arg_refs: list[int] = field(default_factory=list)  # per tensor argument, which %reference of the text it is
    args: list[str] = field(default_factory=list)  # per tensor argument, its FX name (forms of one call only)


@dataclass(slots=True)
class FunctionClass:
    """Calls of one target and one body whose input bindings agree: one function."""

    target: str
    fingerprint: str
    roles: dict[int, int]  # read position -> tensor argument position
    plans: list[Planned]
    key: FunctionKey | None = None

    def accepts(self, roles: tuple[int | None, ...]) -> bool:
        taken = {r: p for p, r in self.roles.items()}
        for p, r in enumerate(roles):
            if r is None:
                continue
            if self.roles.get(p, r) != r or taken.get(r, p) != p:
                return False
        return True

    def add(self, plan: Planned) -> None:
        self.plans.append(plan)
        for p, r in enumerate(plan.roles):
            if r is not None:
                self.roles[p] = r

    def order(self) -> list[int]:
        """Formal input order as read positions: bound roles by argument position, then the rest in body order."""
        n = len(self.plans[0].reads)
        bound = sorted(self.roles, key=lambda p: self.roles[p])
        return bound + [p for p in range(n) if p not in self.roles]

    def binding(self) -> str:
        return ",".join(f"{p}:{r}" for p, r in sorted(self.roles.items()))


class Planner:
    """Plans the fold of each call. Work that depends only on the body (``group_body``, its fingerprint) is done
    once per distinct group key (``core/bodies/bodykey.py``), and work that depends only on the FX arguments' form (the
    schema binding, the call's attributes) once per form (``SignatureForms``); each call binds its own names."""

    def __init__(self, index: ModelIndex, maps: GraphMaps, inside_subgraphs: bool = False) -> None:
        self.maps = maps
        self.inside_subgraphs = inside_subgraphs
        self.evidence = _Evidence(index, maps)
        self.signatures = SignatureForms()
        self.bodies: dict[Hashable, tuple[Body, str]] = {}
        self.forms: dict[int, Form] = {}  # by id of the SignatureForm (kept alive by ``signatures``)
        self.inner: dict[NodePath, GraphMaps | None] = {}
        self._index = index
        self._nested: dict[object, set[int]] | None = None  # main-graph node -> the calls with nodes in its subgraphs

    def _owners(self, i: object) -> set[int]:
        """The calls (by id) with nodes in the branches or loop bodies of main-graph node ``i`` (made on first use:
        only calls with such nodes ask)."""
        if self._nested is None:
            self._nested = {}
            for c in self._index.provenance.calls:
                if c.scope is MAIN or c.scope == MAIN:
                    for p in c.node_paths:
                        if len(p) > 1:
                            self._nested.setdefault(p[0], set()).add(id(c))
        return self._nested.get(i, set())

    def maps_at(self, prefix: NodePath) -> GraphMaps | None:
        """Maps of the branch or loop body ``prefix`` = (main-graph node, attribute); None if there is none."""
        if prefix not in self.inner:
            index, attr = prefix
            graph = None
            if isinstance(index, int) and index < len(self.maps.inputs):
                graph = next((g for s, g in subgraphs(self.maps.graph.node[index]) if s == attr), None)
            self.inner[prefix] = GraphMaps(graph, self.maps, prefix) if graph is not None else None
        return self.inner[prefix]

    def plan(self, call: AtenCall, claimed: dict[NodePath, set[int]], shape: GroupShape | None = None) -> Planned | str:
        """The call's plan, or why it stays flat. ``shape``: the call's ``group_shape``, if made already (fold makes
        those of all calls in one loop, ``group_shapes``)."""
        reason = _why_not(call, claimed[()], self._owners)
        main = self.maps
        maps: GraphMaps | None = main
        if reason == _IN_SUBGRAPH and self.inside_subgraphs:
            prefixes = {p[:-1] for p in call.node_paths}
            prefix = prefixes.pop() if len(prefixes) == 1 else None
            maps = self.maps_at(prefix) if prefix is not None and len(prefix) == 2 else None
            if prefix is None or maps is None:
                return reason
            if any(p[-1] in claimed.get(prefix, ()) for p in call.node_paths):
                return "nodes shared with another call"
            reason = None
        if reason is not None or maps is None:
            return reason or _IN_SUBGRAPH
        shared = self.signatures.form(call)
        if shared is not None:
            sig_form, names = shared
            if not sig_form.fx.complete:
                return "fx_node metadata unreadable"
            form = self.forms.get(id(sig_form))
            if form is None:
                form = self.forms[id(sig_form)] = _form(sig_form.signature, sig_form.fx, shared=True)
            args = [names[k] for k in form.arg_refs] if form.arg_refs else form.args  # this call's tensor arguments
        else:
            fx = call.fx
            if fx is None or not fx.complete:
                return "fx_node metadata unreadable"
            form = _form(call_signature(call), fx, shared=False)
            args = form.args
        if maps is not main:
            shape = None
        elif shape is None:
            shape = group_shape(call, maps)
        if shape is not None:
            known = self.bodies.get(shape.key)
            if known is None:
                body = group_body(call, maps)
                known = self.bodies[shape.key] = (body, fingerprint(body).full)
            body, fp = known
            indices, reads, outputs = tuple(shape.indices), tuple(shape.reads), tuple(shape.outputs)
        else:
            body = group_body(call, maps)
            fp = fingerprint(body).full
            indices = tuple([int(p[-1]) for p in body.node_paths])
            reads = tuple(body.canonical_inputs if body.canonical_inputs is not None else body.inputs)
            outputs = tuple(body.outputs)
        reason = (_cycle_reason(indices, maps) if len(indices) > 1 else None) or \
            (None if outputs else "no output is used")
        if reason is not None:
            return reason
        return Planned(call, body, fp, indices, reads, outputs, self.evidence.roles(reads, args), form, maps)


class _Evidence:
    """Which FX node an ONNX value of the main graph is, from metadata only: the output of the group of that
    FX node, or a graph input / parameter whose ``original_node_name`` (or, for user inputs, name) is it."""

    def __init__(self, index: ModelIndex, maps: GraphMaps) -> None:
        self.maps = maps
        # value -> the FX node it is; a set only for a value claimed by several (one set per value of a 100k-node
        # graph cost 0.1 s)
        self.fx_of: dict[str, str | set[str]] = {}
        fx_of, outputs, main = self.fx_of, maps.outputs, MAIN
        claim = fx_of.setdefault  # the value's first FX node; another one makes it ambiguous (_add)
        for call in index.provenance.calls:
            if call.scope is not main and call.scope != main:
                continue
            name = call.name
            for p in call.node_paths:
                if len(p) == 1 and type(i := p[0]) is int:
                    outs = outputs[i]
                else:  # in a branch or loop body (value names are unique across the model's graphs)
                    try:
                        outs = list(resolve_path(maps.graph.node, p).output)
                    except KeyError:
                        continue
                for out in outs:
                    if out and (known := claim(out, name)) is not name and known != name:
                        self._add(out, name)
        for value, fx_name in maps.original_names:  # inputs and value infos with an original_node_name, in order
            self._add(value, fx_name)
        graph = maps.graph
        for v in graph.input:
            kinds = {p.value for p in v.metadata_props if p.key == "pkg.torch.export.graph_signature.InputSpec.kind"}
            if kinds <= {USER_INPUT} and v.name not in maps.initializers:
                self._add(v.name, v.name)  # user inputs are the FX placeholders

    def _add(self, value: str, fx_name: str) -> None:
        known = self.fx_of.get(value)
        if known is None:
            self.fx_of[value] = fx_name
        elif isinstance(known, str):
            if known != fx_name:
                self.fx_of[value] = {known, fx_name}
        else:
            known.add(fx_name)

    def roles(self, reads: tuple[str, ...], args: list[str]) -> tuple[int | None, ...]:
        """Per read, the position of the tensor argument it is; None without evidence or when ambiguous."""
        roles: list[int | None] = []
        used: set[int] = set()
        fx_of = self.fx_of
        for name in reads:
            names = fx_of.get(name)
            role = None
            if names:
                one = type(names) is str
                for k, a in enumerate(args):
                    if (a == names if one else a in names) and k not in used:
                        role = k
                        used.add(k)
                        break
            roles.append(role)
        return tuple(roles)


def _form(sig: CallSignature, fx: FxNode, shared: bool) -> Form:
    """The form's tensor arguments, non-tensor arguments and call attributes; with ``shared``, tensor arguments
    are the placeholders of a ``SignatureForm`` and are recorded by reference number."""
    args: list[str] = []
    arg_names: list[str] = []
    refs: list[TensorRef] = []
    if sig.bound:
        for b in sig.bound:
            items = b.value if isinstance(b.value, (list, tuple)) else [b.value]
            mine = [x for x in items if isinstance(x, TensorRef)]
            for j, ref in enumerate(mine):
                refs.append(ref)
                arg_names.append(b.parameter.name if len(items) == 1 else f"{b.parameter.name}_{j}")
    else:
        for v in (*fx.args, *fx.kwargs.values()):
            refs.extend(x for x in (v if isinstance(v, (list, tuple)) else (v,)) if isinstance(x, TensorRef))
        arg_names = [f"arg{k}" for k in range(len(refs))]
    # non-tensor arguments, and numbers passed to Tensor parameters (``mul(x, 0.5)``): attributes of the call
    bound = [b for b in sig.bound if not b.parameter.is_tensor or _is_number(b.value)]
    attributes = [a for a in (aten_attribute(b.parameter.name, b.value, b.parameter) if b.provided else None
                              for b in bound) if a is not None]
    doc = sig.schema.text if sig.schema else ""
    if shared:
        arg_refs = [SignatureForm.reference(r) for r in refs]
        return Form(arg_names, bound, attributes, doc, arg_refs=[k for k in arg_refs if k is not None])
    args = [r.name for r in refs]
    return Form(arg_names, bound, attributes, doc, args=args)


def classes_of(planned: list[Planned]) -> list[FunctionClass]:
    """Calls grouped by target, body and tensor parameters, split further where their input bindings disagree."""
    by_key: dict[tuple[str, str, tuple[str, ...]], list[FunctionClass]] = {}
    out: list[FunctionClass] = []
    # A class that took a binding keeps taking it, and one that refused it keeps refusing it (a class's roles only
    # grow), so the class a (target, body, form, binding) went to is remembered: most calls repeat one.
    went: dict[tuple[str, str, int, tuple[int | None, ...]], FunctionClass] = {}
    for plan in planned:
        target, form = plan.call.target, plan.form
        memo = (target, plan.fingerprint, id(form), tuple(plan.roles))
        cls = went.get(memo)
        if cls is None:
            options = by_key.setdefault((target, plan.fingerprint, tuple(form.arg_names)), [])
            cls = next((c for c in options if c.accepts(plan.roles)), None)
            if cls is None:
                cls = FunctionClass(target, plan.fingerprint, {}, [])
                options.append(cls)
                out.append(cls)
            went[memo] = cls
            cls.add(plan)
        else:
            cls.plans.append(plan)  # its roles are in the class already
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_IN_SUBGRAPH = "nodes inside a subgraph"  # folded when they all sit in one branch or loop body of a main-graph node


def _why_not(call: AtenCall, claimed: set[int], owners: Callable[[object], set[int]]) -> str | None:
    """Why the call cannot be folded, before its FX arguments are read. A call whose nodes include a loop or a branch
    (``embedding_bag``'s Loop over the bags) folds with its body when no other call has nodes there (``owners``):
    they would be moved into this call's function with it."""
    if call.scope is not MAIN and call.scope != MAIN:
        return "inside a function body"
    if not call.target.startswith("aten::"):
        if len(call.candidates) > 1:  # (a recognised body several overloads lower to: no schema to bind)
            return "fits several overloads: " + ", ".join(call.candidates)
        return "not an aten op"
    paths = call.node_paths
    main = {p[0] for p in paths if len(p) == 1}
    for p in paths:
        if len(p) != 1 and (p[0] not in main or owners(p[0]) != {id(call)}):
            return _IN_SUBGRAPH
    for p in paths:
        if len(p) == 1 and p[0] in claimed:
            return "nodes shared with another call"
    return None


def _cycle_reason(indices: tuple[int, ...], maps: GraphMaps) -> str | None:
    """Folding is safe when no path leaves the group and comes back into it (the group is convex)."""
    group = set(indices)
    lo, hi = min(indices), max(indices)
    if hi - lo + 1 == len(group):
        return None
    reach: set[str] = set()
    for j in range(lo, hi + 1):
        reads = maps.reads(j)
        if j in group:
            if any(r in reach for r in reads if maps.producer.get(r, -1) not in group):
                return "folding would form a cycle"
            reach.update(o for o in maps.outputs[j] if o)
        elif any(r in reach for r in reads):
            reach.update(o for o in maps.outputs[j] if o)
    return None


def aten_attribute(name: str, value: Any, param: Parameter) -> AttributeProto | None:
    """An ONNX attribute for an aten argument value; None when it has no ONNX form (None, nested lists)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return attribute(name, int(value))
    if isinstance(value, (int, float, str)):
        return attribute(name, value)
    if isinstance(value, Symbol):
        return attribute(name, value.text)
    if isinstance(value, (list, tuple)) and not value:  # ``size=[]``: an empty list of the parameter's type
        kind = AttributeProto.FLOATS if "float" in param.type.lower() else AttributeProto.INTS
        return attribute(name, [], kind)
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, bool) for v in value):
            return attribute(name, [int(v) for v in value])
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return attribute(name, list(value))
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return attribute(name, [float(v) for v in value], AttributeProto.FLOATS)
    return None
