"""The diff's data: what ``diff_models`` returns, and its versioned JSON form (``onnx-inspector/diff`` v1).

Kinds and sections are ``Literal`` types; their values are the JSON strings. How a report words them (titles,
the verdict) is presentation and lives in ``inspector.report.diff_text``. ``Change.detail`` and
``FoldRelation.explanation`` are part of the JSON format, so they are made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from inspector.core.util.jsonsafe import json_safe
from inspector.core.util.units import plural

DIFF_FORMAT = "onnx-inspector/diff"
DIFF_VERSION = 1

# Sections, in the order reports show them. "function" and "aten_call" are the family kinds
# (``inspector.core.model.index.FamilyKind``): a change of a family sits in the section of its kind.
Section = Literal["model", "function", "aten_call", "initializer", "input", "output", "node"]
SECTIONS: tuple[Section, ...] = get_args(Section)
ChangeKind = Literal[
    "folded",
    "ir_version", "opset_added", "opset_removed", "opset_changed", "producer", "model_field",
    "metadata_added", "metadata_removed", "metadata_changed",
    "family_added", "family_removed", "overload_added", "overload_removed", "overload_renamed",
    "signature_changed", "call_added", "call_removed", "call_changed",
    "value_changed", "body_changed", "rewired",
    "initializer_added", "initializer_removed", "initializer_reshaped", "initializer_revalued",
    "input_added", "input_removed", "input_retyped", "output_added", "output_removed", "output_retyped",
    "node_added", "node_removed", "node_changed",
]
CHANGE_KINDS: tuple[ChangeKind, ...] = get_args(ChangeKind)
EditOp = Literal["added", "removed", "changed"]
EQUIVALENT_KINDS: frozenset[ChangeKind] = frozenset({"folded"})  # differences that leave the computation the same
MAX_EDITS = 200  # node edits kept per body change


@dataclass(frozen=True, slots=True)
class NodeEdit:
    """One step of the node-level alignment of two bodies whose templates differ."""

    op: EditOp
    node: str  # op label, e.g. "Reshape", "com.microsoft::Gelu", or "constant FLOAT[3]"
    index_a: int | None  # position in A's body (walk order); None when added
    index_b: int | None
    detail: str = ""  # for "changed": the attributes that differ

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "node": self.node, "index_a": self.index_a, "index_b": self.index_b,
                "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ArgChange:
    """An aten argument a changed value came from (by ``specialise.links``' evidence), with its value in each
    of the two calls: ``dim1: 2 -> 3``, ``scale: None -> 0.3``."""

    parameter: str
    old: Any
    new: Any

    def to_json(self) -> dict[str, Any]:
        return {"parameter": self.parameter, "old": json_safe(self.old), "new": json_safe(self.new)}


@dataclass(slots=True)
class Change:
    """One difference. ``sites`` lists every call site / function / value it applies to (identical changes at
    several call sites of one family are one change); ``where`` is the first of them."""

    kind: ChangeKind
    section: Section
    family: str  # family label ("aten::view", "local.tr"), op label for nodes, "" elsewhere
    where: str
    old: Any = None  # JSON-friendly
    new: Any = None
    detail: str = ""  # one readable line
    sites: list[str] = field(default_factory=list)
    edits: Sequence[NodeEdit] = ()  # a shared empty tuple: a diff may hold a million changes
    arguments: tuple[ArgChange, ...] = ()  # for value changes: the aten arguments whose values differ
    # for an initializer whose name does not say where it is read: the first aten call that reads it, as its place
    # (``encoder.layers.0.blocks.0.attention.q_proj › linear``), and how many more do (``facts._read_by``)
    read_by: str = ""
    # for a call one side lacks: the other side's call read where ``where`` is read (``run.merged_calls``: two calls
    # of B that are one call of A, which stands in for each)
    stand_in: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind, "section": self.section, "family": self.family, "where": self.where,
            "old": json_safe(self.old), "new": json_safe(self.new), "detail": self.detail, "sites": list(self.sites),
        }
        if self.read_by:
            out["read_by"] = self.read_by
        if self.stand_in:
            out["stand_in"] = self.stand_in
        if self.arguments:
            out["arguments"] = [a.to_json() for a in self.arguments]
        if self.edits:
            out["edits"] = [e.to_json() for e in self.edits]
        return out


@dataclass(slots=True)
class FoldRelation:
    """One side is the other folded: its aten calls are calls of local functions with the same bodies."""

    folded: Literal["a", "b"]  # the side whose calls are function calls
    calls: int  # aten calls that are flat on one side and a function call on the other
    functions: int  # distinct functions those calls call
    domains: list[str]
    identical: int  # calls whose flat body equals the called function's body
    other_changes: int = 0  # changes besides the fold itself (set when the run is over)
    unit: Literal["aten", "module"] = "aten"  # what became a call: aten calls, or module instances (fold --modules)
    differ: list[str] = field(default_factory=list)  # module folds: the module calls whose nodes changed

    @property
    def explanation(self) -> str:
        """One account that agrees with the verdict: "bodies identical" only when nothing else differs."""
        flat, folded = ("A", "B") if self.folded == "b" else ("B", "A")
        domains = ", ".join(self.domains)
        what = plural(self.calls, "aten call") if self.unit == "aten" else plural(self.calls, "module instance")
        head = (f"{folded} is {flat} folded: {what} became calls of {plural(self.functions, 'local function')} "
                f"in {domains}; ")
        if self.identical == self.calls and not self.other_changes:
            return head + "bodies identical"
        parts = []
        if self.unit == "module" and self.identical != self.calls:
            shown = ", ".join(self.differ[:5]) + (f", … {len(self.differ) - 5} more" if len(self.differ) > 5 else "")
            parts.append(f"{self.calls - self.identical} of {self.calls} module calls differ ({shown})")
        elif self.identical != self.calls:
            parts.append(f"{self.calls - self.identical} of {plural(self.calls, 'body', 'bodies')} "
                         f"{'differs' if self.calls - self.identical == 1 else 'differ'}")
        if self.other_changes:
            parts.append(f"{plural(self.other_changes, 'change')} besides the fold")
        return head + " and ".join(parts) + ", so not equivalent (listed below)"


@dataclass(slots=True)
class MatchCount:
    """How the units of one kind (functions, aten calls, ...) were paired between the two models."""

    matched: int = 0
    only_a: int = 0
    only_b: int = 0
    renamed: int = 0  # matched pairs whose names differ
    # of the initializers on one side only, those baked into aten calls: compared there, as their calls' values (a
    # Reshape's shape the optimizer named after its view, ``view_27/shape`` in one export and ``view_29/shape`` in the
    # other), so not listed as added or removed
    baked: int = 0

    def to_json(self) -> dict[str, int]:
        return {"matched": self.matched, "only_a": self.only_a, "only_b": self.only_b, "renamed": self.renamed,
                "baked": self.baked}


@dataclass(slots=True)
class ModelDiff:
    """What changed between two models: the changes, and a fold relating them when one folds the other."""

    a: str
    b: str
    changes: list[Change]
    fold: FoldRelation | None = None
    matched: dict[str, MatchCount] = field(default_factory=dict)  # functions, aten_calls, ... -> counts
    # the files of both models that no output of this diff may replace (``paths.check_output``); not part of it
    protected: list[Path] = field(default_factory=list, compare=False, repr=False)

    @property
    def equal(self) -> bool:
        """Nothing changed (names aside)."""
        return not self.changes

    @property
    def equivalent(self) -> bool:
        """Same computation: equal, or different only in ways that keep it (a fold)."""
        return all(c.kind in EQUIVALENT_KINDS for c in self.changes)

    @property
    def renamed(self) -> int:
        """Matched items whose names differ (information, never a change)."""
        return sum(m.renamed for m in self.matched.values())

    def grouped(self) -> list[tuple[Section, str, list[Change]]]:
        """``(section, family, changes)`` in report order: model, families by label, then the rest."""
        groups: dict[tuple[Section, str], list[Change]] = {}
        for c in self.changes:
            groups.setdefault((c.section, c.family), []).append(c)
        order = {s: k for k, s in enumerate(SECTIONS)}
        keys = sorted(groups, key=lambda k: (order.get(k[0], len(order)), k[1]))
        return [(s, f, groups[(s, f)]) for s, f in keys]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.changes:
            out[c.kind] = out.get(c.kind, 0) + 1
        return out


def diff_dict(d: ModelDiff) -> dict[str, Any]:
    """The versioned JSON object (``onnx-inspector/diff`` version 1)."""
    return {
        "format": DIFF_FORMAT,
        "version": DIFF_VERSION,
        "a": d.a,
        "b": d.b,
        "equal": d.equal,
        "equivalent": d.equivalent,
        "explanation": d.fold.explanation if d.fold else None,
        "counts": d.counts(),
        "matched": {k: m.to_json() for k, m in d.matched.items()},
        "renamed": d.renamed,
        "changes": [c.to_json() for c in d.changes],
    }

