"""Read one-op exports with the inspector and learn, per parameter, which literal slot moved with it and by which
relation (``inspector.core.specialise.relations``): the half of ``gen_evidence.py`` that needs no torch.

An observation is what the inspector sees of the call in one export: the bound arguments (bound exactly as at run
time, from the export's FX text), the body's template fingerprint, its literals, and for every literal the
(place, relation) pairs under which each argument explains it. A slot *moves with* a parameter when the variant
that changed only that argument has the same template and a different value in that slot; the evidence is the
first relation (in ``ORDER``) that holds at one place in the base export and in every variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspector.core.aten.evidence import op_name
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.bodies.literals import body_literals
from inspector.core.model.fx import Symbol
from inspector.core.model.index import open_index
from inspector.core.model.signature import call_signature
from inspector.core.specialise.flow import BodyFlow
from inspector.core.specialise.links import literal_place
from inspector.core.specialise.relations import Ctx, relation
from inspector.core.specialise.specialiser import Specialiser

DIM_NAMES = ("dim", "dims", "dim0", "dim1", "start_dim", "end_dim", "axis")
ORDER = ["swap", "permute", "last_axes", "pads", "bool", "dtype", "string", "reduction", "dim", "dim_of_node",
         "dim_plus1", "dim_of_node_plus1", "end_dim", "scalar", "equal", "element", "stride_or_kernel",
         "repeated", "scales", "at:0", "at:1", "at:2", "at:3", "at:4", "at:5", "size_minus", "torch_pads",
         "ones_then", "shape_then", "pow10", "neg", "reciprocal", "sqrt", "rsqrt"]
SCALES = ("alpha", "beta")  # arguments that scale another one (times:alpha), never tied through the product
_DIM_ONLY = {"swap", "permute", "dim", "dim_of_node", "dim_plus1", "dim_of_node_plus1", "end_dim"}


@dataclass
class Observation:
    target: str
    args: dict[str, Any]
    template: str
    keys: list[str]
    values: list[Any]
    places: list[list[str]]  # every place each literal sits at
    holds: dict[str, list[set[tuple[str, str]]]]  # parameter -> per literal, the (place, relation) that hold
    outputs: list[Any]
    problem: str | None = None
    fx_text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _contexts(body: Any, lit: Any, flow: BodyFlow) -> list[tuple[str, Ctx]]:
    place = literal_place(body, lit.path, lit.name, lit.kind, lit.op_type, flow)
    out: list[tuple[str, Ctx]] = []
    if place.attribute is not None:
        node, op, attr = place.attribute
        out.append((f"{op}.{attr}", Ctx(lit.value, flow, node)))
    for use in place.uses:
        if "Sqrt" not in use.via:
            out.append((f"{use.op_type}[{use.slot}]", Ctx(lit.value, flow, use.node, use.via)))
    return out


def observe(path: Path, target: str) -> Observation | str:
    """What the inspector sees of ``target``'s call in the export at ``path``; a reason when there is none."""
    index = open_index(path)
    specialiser = Specialiser(index)
    # the exporter's own calls only: a node it left bare would be recognised by the shipped template catalogue, so what
    # is learned would depend on what was learned before (the scratch clone classified ``_native_batch_norm_legit`` as
    # "decomposed" into its functional form and a recognised ``_to_copy_or_alias_or_clone_or_detach``)
    calls = [c for fam in index.families if fam.kind == "aten_call" for ov in fam.overloads for c in ov.aten_calls
             if not c.recognised]
    mine = [c for c in calls if c.target == target] or [c for c in calls if op_name(c.target) == op_name(target)]
    if not mine and len({c.target for c in calls}) == 1:
        mine = calls[:1]  # decomposed into one other op (conv_transpose2d into convolution): learn that op's
    if not mine:
        held = ", ".join(sorted({c.target for c in calls})) or "no aten call"
        return f"decomposed: the export holds {held}"
    call = mine[0]
    body = specialiser.body_of_call(call)
    sig = call_signature(call, specialiser.catalogue)
    args = {x.parameter.name: x.value for x in sig.bound
            if x.provided and (not x.parameter.is_tensor or _is_number(x.value))}
    flow = BodyFlow(body, specialiser.maps_of(call)[1])
    lits = _by_name(body_literals(body))
    contexts = [_contexts(body, lit, flow) for lit in lits]
    holds: dict[str, list[set[tuple[str, str]]]] = {}
    for p, arg in args.items():
        per: list[set[tuple[str, str]]] = []
        for ctxs in contexts:
            got: set[tuple[str, str]] = set()
            for rel in [*ORDER, *(f"times:{q}" for q in args if q != p and q in SCALES and _is_number(args[q]))]:
                if rel in _DIM_ONLY and p not in DIM_NAMES:
                    continue
                fn = relation(rel)
                for place, ctx in ctxs:
                    if fn is not None and fn(arg, args, ctx) is not None:
                        got.add((place, rel))
            per.append(got)
        holds[p] = per
    outputs = [[d.dim_value for d in o.type.tensor_type.shape.dim] for o in index.proto.graph.output]
    return Observation(call.target, args, fingerprint(body).template, [lit.key for lit in lits],
                       [lit.value for lit in lits], [[pl for pl, _c in c] for c in contexts], holds, outputs,
                       sig.problem, call.fx_text)


def _by_name(lits: list[Any]) -> list[Any]:
    """The literals with each node's attributes in name order: literals are aligned by position between the base
    export and its variants, and the exporter writes a node's attributes in any order (grid_sampler's GridSample
    wrote ``padding_mode`` before ``mode`` where ``mode`` was ``nearest``: each was learned as the other's table)."""
    out: list[Any] = []
    k = 0
    while k < len(lits):
        j = k + 1
        if lits[k].kind != "initializer":
            while j < len(lits) and lits[j].kind != "initializer" and lits[j].path == lits[k].path:
                j += 1
        out += sorted(lits[k:j], key=lambda lit: lit.name)
        k = j
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text(v: Any) -> str | None:
    """A string, enum, bool or int argument as the key of a learned table (as ``relations._mapped`` reads it)."""
    if isinstance(v, Symbol):
        return v.text.lower()
    if isinstance(v, (str, bool, int)):
        return str(v).lower()
    return None


def _learn_one(p: str, base: Observation, obs: list[Observation], by_shape: set[int]) -> dict[str, Any]:
    same = [o for o in obs if o.template == base.template and len(o.keys) == len(base.keys)]
    if not same:
        return {"status": "structure_changes", "reason": "the body's structure changes with the argument"}
    moved = sorted({k for o in same for k in range(len(base.keys)) if o.keys[k] != base.keys[k]})
    if not moved:
        if any(o.outputs != base.outputs for o in same):
            return {"status": "only_in_shape", "reason": "no literal moves; the output shape does"}
        return {"status": "not_baked", "reason": "no literal of the body moves with it"}
    evidence: list[list[str]] = []
    unexplained: list[str] = []
    for k in moved:
        if p not in base.holds:
            unexplained.append(f"slot {k}: argument not bound")
            continue
        common = set(base.holds[p][k])
        for o in same:
            common &= o.holds.get(p, [set()] * len(base.keys))[k]
        chosen: dict[str, str] = {}
        for place, rel in sorted(common, key=lambda pr: (ORDER.index(pr[1]) if pr[1] in ORDER else len(ORDER), pr)):
            chosen.setdefault(place, rel)
        if not chosen:
            table = _map(p, base, same, k)
            if table is not None:
                chosen = {place: table for place in base.places[k]}
        if chosen:
            evidence += [[place, rel] for place, rel in sorted(chosen.items())]
        else:
            why = "computed from a shape" if k in by_shape else "no known relation"
            unexplained.append(f"{'/'.join(base.places[k]) or 'unused'}: {base.values[k]!r} -> "
                               f"{[o.values[k] for o in same]!r} ({why})")
    if evidence:
        return {"status": "evidence", "evidence": evidence, "unexplained": unexplained}
    shaped = any("computed from a shape" in u for u in unexplained)
    return {"status": "computed_from_shape" if shaped else "unexplained", "reason": "; ".join(unexplained)[:300]}


def _map(p: str, base: Observation, same: list[Observation], k: int) -> str | None:
    """A table from a string, enum or bool argument to the literal, when every export agrees on it."""
    table: dict[str, str] = {}
    for o in [base, *same]:
        arg, value = o.args.get(p), o.values[k]
        key = _text(arg)
        if isinstance(arg, int) and not isinstance(arg, bool) and not isinstance(value, str):
            return None  # an int mapped to an int is a relation a table cannot generalise (dim -> axis)
        if key is None or not isinstance(value, (str, int)) or isinstance(value, bool) \
                or any(c in key + str(value) for c in ";=\t\n"):
            return None
        if table.setdefault(key, str(value)) != str(value):
            return None
    return "map:" + ";".join(f"{a}={b}" for a, b in sorted(table.items())) if len(table) > 1 else None


def learn(target: str, base: Observation, variants: dict[str, list[Observation]], failed: dict[str, str],
          plan: Any) -> dict[str, Any]:
    shape_obs = variants.pop("#shape", [])
    by_shape = {k for o in shape_obs if o.template == base.template and len(o.keys) == len(base.keys)
                for k in range(len(base.keys)) if o.keys[k] != base.keys[k]}
    params: dict[str, dict[str, Any]] = {}
    for p in plan.parameters:
        if p in plan.not_varied:
            params[p] = {"status": "not_varied", "reason": plan.not_varied[p]}
        elif p in variants:
            params[p] = _learn_one(p, base, variants[p], by_shape)
        elif p in failed:
            params[p] = {"status": "variant_failed", "reason": failed[p]}
        else:
            params[p] = {"status": "not_varied", "reason": "no variant"}
    problems = sorted({o.problem for o in [base, *(x for v in variants.values() for x in v)] if o.problem})
    return {"observed": base.target, "params": params, "fx_problems": problems, "fx_text": base.fx_text[:300],
            "shape_slots": len(by_shape)}
