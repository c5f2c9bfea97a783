"""What the window shows for a selection: the body analysis and signature behind a tree item.

Family analyses are computed once per family (in a worker thread for large families) and cached.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import onnx

from inspector.core.aten.torchlib import TorchlibEntry, torchlib_for
from inspector.core.bodies.body import Body
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.function_sites import CallSite
from inspector.core.model.index import Family, ModelIndex, Overload
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.module_tree import ModuleNode
from inspector.core.model.signature import CallSignature, call_signature, function_call_signature
from inspector.core.model.walk import NodePath
from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, Specialiser
from inspector.core.util.units import plural
from inspector.gui.worker import checkpoint, give_way, on_background_job

TreeObject = Family | Overload | CallSite | FunctionKey | AtenCall | ModuleNode | None
"""What a row of the functions or modules tree stands for (None: nothing, e.g. the root)."""


def scope_of(obj: TreeObject) -> Scope | None:
    """The graph a tree object is shown in: an overload's function body or its first aten call, a call site's
    callee, a module's main graph (None: nothing to show)."""
    if isinstance(obj, Family):
        obj = obj.overloads[0] if obj.overloads else None
    if isinstance(obj, Overload):
        obj = obj.function if obj.function is not None else (obj.aten_calls[0] if obj.aten_calls else None)
    if isinstance(obj, CallSite):
        return obj.callee
    if isinstance(obj, (FunctionKey, AtenCall)):
        return obj
    return MAIN if isinstance(obj, ModuleNode) else None


def same_scope(a: object, b: object) -> bool:
    """Whether two scopes are one graph: an aten call by identity (two calls may look alike), others by value."""
    return a is b or (not isinstance(a, AtenCall) and not isinstance(b, AtenCall) and a is not None and a == b)


def main_call_owners(index: ModelIndex) -> dict[NodePath, AtenCall]:
    """Node of the main graph (by path) -> the aten call it belongs to: one pass over the calls. By the whole path:
    the calls in the branches of an If (``torch.cond``) have paths under the If's position, and keyed by that
    position alone every node of both branches, and the If itself, belonged to whichever call came last."""
    return {p: call for call in index.provenance.calls if call.scope == MAIN for p in call.node_paths if p}


@dataclass(frozen=True, slots=True)
class Selection:
    title: str
    analysis: BodyAnalysis
    signature: CallSignature | None
    family_note: str
    target: str | None  # aten target, for the torchlib source
    calls: tuple[str, ...] = ()  # every call with exactly this body: module path › FX name, or call-site path
    lone: bool = False  # no other body of its template in the family: nothing to compare its values with
    torchlib: TorchlibEntry | None = None  # the torchlib function that lowers ``target`` (real-valued variant)
    rewritten: tuple[str, ...] = ()  # optimizer rules that rewrote the call's nodes (then torchlib did not bake them)
    call: str | None = None  # the call site selected (its ``where``), among ``calls``
    recognised: tuple[str, ...] = ()  # a call recognised by body template (no fx metadata): the templates that fit
    candidates: tuple[str, ...] = ()  # ... and their targets (several: an ambiguous body)
    ruled_out: tuple[str, ...] = ()  # ... and the targets it fits too, that its output's name rules out
    # the selected aten call's own body, by its own names (the analysis's body is its first call's: the same nodes,
    # constants and slots, read from another place of the graph); None: the analysis's is shown
    own_body: Body | None = None
    # every body of the call's target where it has several, in the family's order: (its first call, its calls, its
    # nodes); the one shown among them is ``analysis``'s (Qwen2's linear: 6 calls with a bias, 9 without)
    bodies: tuple[tuple[AtenCall, int, int], ...] = ()


def _bodies_of(analysis: FamilyAnalysis, target: str) -> tuple[tuple[AtenCall, int, int], ...]:
    """``Selection.bodies``: the bodies of ``target``'s calls where there are several, else none."""
    found = [(first, len(b.members), len(b.body.nodes)) for b in analysis.bodies if b.members
             and isinstance(first := b.members[0], AtenCall) and first.target == target]
    return tuple(found) if len(found) > 1 else ()


class Preempted(Exception):  # not an error: a background job's turn ended
    """A background analysis stopped so that another thread could have the analyses' lock; nothing was cached."""


class Analyses:
    """Thread-safe cache of family analyses for one index."""

    def __init__(self, index: ModelIndex) -> None:
        self.index = index
        self.specialiser = Specialiser(index)
        self._lock = threading.Lock()
        self._cache: dict[int, FamilyAnalysis] = {}
        # a background analysis pauses while a job the user waits for runs, and stops (Preempted) when someone
        # waits for this lock
        self._wanted = 0  # threads waiting for the lock
        self._wanted_lock = threading.Lock()
        self.specialiser.pause = self._pause
        # the main graph's maps and shapes, which analyses read, are made (once) in steps through the job's
        # checkpoint: in one piece, reading them held the GIL for 15-50 ms at a time at 100k nodes, a stall of the
        # GUI thread while the Review list was made behind it (the bench's filter typing: 2-9 -> 18-55 ms)
        self.specialiser.progress = checkpoint

    def _pause(self) -> None:
        """Between calls of a family being analysed: a background job waits while a job the user waits for runs,
        and gives up the family when a thread waits for the lock (it is analysed again later)."""
        give_way(unless=lambda: self._wanted > 0)
        if self._wanted > 0 and on_background_job():
            raise Preempted

    def family(self, fam: Family) -> FamilyAnalysis:
        hit = self._cache.get(id(fam))  # a finished analysis takes no lock: the GUI thread (reviewing's target)
        if hit is not None:  # never waits while the background analyses another family
            return hit
        if not self._lock.acquire(blocking=False):
            with self._wanted_lock:
                self._wanted += 1
            try:
                self._lock.acquire()
            finally:
                with self._wanted_lock:
                    self._wanted -= 1
        try:
            hit = self._cache.get(id(fam))
            if hit is None:
                hit = self._cache[id(fam)] = self.specialiser.analyse(fam)
            return hit
        finally:
            self._lock.release()

    def family_of(self, obj: TreeObject) -> Family | None:
        if isinstance(obj, Family):
            return obj
        for fam in self.index.families:
            if isinstance(obj, Overload) and obj in fam.overloads:
                return fam
            if isinstance(obj, AtenCall) and fam.kind == "aten_call" and (fam.domain, fam.name) == obj.family[:2]:
                return fam
            if isinstance(obj, CallSite) and fam.kind == "function" and any(o.function == obj.callee
                                                                           for o in fam.overloads):
                return fam
            if isinstance(obj, FunctionKey) and fam.kind == "function" and any(o.function == obj
                                                                              for o in fam.overloads):
                return fam
        return None

    def selection(self, obj: TreeObject) -> Selection | None:
        """The body to show for a tree object (None for things without one, e.g. modules)."""
        fam = self.family_of(obj)
        if fam is None:
            return None
        analysis = self.family(fam)
        n_ov, n_b = len(fam.overloads), len(analysis.bodies)
        note = (f"{fam.label}: {plural(n_ov, 'overload')}, "
                f"{plural(n_b, 'distinct body', 'distinct bodies')}")
        if isinstance(obj, Family):
            obj = fam.overloads[0] if fam.overloads else None
        if isinstance(obj, FunctionKey):  # a function's body shown in the graph: its overload
            obj = next((o for o in fam.overloads if o.function == obj), None)
        site: CallSite | None = None
        if isinstance(obj, CallSite):
            site = obj
            obj = next(o for o in fam.overloads if o.function == obj.callee)
        if isinstance(obj, Overload):
            if obj.kind == "function" and obj.function is not None:
                bodies = analysis.bodies_of([obj.function])
                if not bodies:
                    return None
                sites = self.index.functions.calls.get(obj.function, [])
                sig = self._folded_signature(obj.function, site or (sites[0] if sites else None))
                return Selection(str(obj.function), bodies[0], sig, note, obj.target,
                                 tuple(x.where for x in sites), _lone(analysis, bodies[0]), _lowering(obj.target),
                                 (), site.where if site is not None else None)
            if obj.aten_calls:
                obj = obj.aten_calls[0]
        if isinstance(obj, AtenCall):
            body = next((b for b in analysis.bodies if any(m is obj for m in b.members)), None)
            if body is None:
                return None
            same = tuple(m.place for m in body.members if isinstance(m, AtenCall))
            return Selection(f"{obj.target}  ({obj.name})", body, call_signature(obj), note, obj.target, same,
                             _lone(analysis, body), _lowering(obj.target), tuple(obj.rule_names),
                             obj.place, obj.recognised, obj.candidates,
                             obj.ruled_out, self._own_body(obj, body), _bodies_of(analysis, obj.target))
        return None

    def _own_body(self, call: AtenCall, body: BodyAnalysis) -> Body | None:
        """``call``'s own group body where the analysis's was made from another call of it: one body per call
        selected (tenths of a millisecond), never per call of a family; the fingerprint must be the analysis's (the
        same group key), else none is given."""
        first = body.members[0] if body.members else None
        if first is call or not self.specialiser.in_one_graph(call):
            return None
        own = self.specialiser.body_of_call(call)
        return own if fingerprint(own).full == body.fingerprints.full else None

    def _folded_signature(self, key: FunctionKey, site: CallSite | None) -> CallSignature | None:
        """The aten signature of an aten function (``fold``'s or another producer's), with the values of the call at
        ``site`` bound (None for any other function)."""
        proto = self.index.functions.functions.get(key)
        if proto is None:
            return None
        return function_call_signature(proto, site_node(self.index, site) if site is not None else None,
                                       target=self.index.functions.aten_target(key))


def site_node(index: ModelIndex, site: CallSite) -> onnx.NodeProto | None:
    """The node of a call site (in the main graph or in the calling function's body); None if it cannot be found."""
    return index.functions.site_node(site, index.proto.graph.node)


def _lowering(target: str | None) -> TorchlibEntry | None:
    return next((e for e in torchlib_for(target) if not e.complex), None) if target else None


def _lone(analysis: FamilyAnalysis, body: BodyAnalysis) -> bool:
    """True when no other body of the family shares ``body``'s template."""
    template = body.fingerprints.template
    return sum(1 for b in analysis.bodies if b.fingerprints.template == template) == 1
