"""The report's view model: everything an annotated report shows, as plain dataclasses, one for every format.

``inspector.report.build.build_report`` runs the core analyses (families, specialised values, aten signatures,
reviews, findings) once and keeps their results here as plain text and JSON-safe values; the HTML (templates),
Markdown, JSON and PDF writers only format them. Nothing here escapes anything: model strings are kept as they are
(they are untrusted: markup, control and bidi characters, URLs), and each writer escapes for its own output kind
with ``inspector.core.util.textsafe``.

Large models: the per-family detail is capped (see ``Limits``); what was left out is counted (``*_omitted``) and
said in ``Report.notes``. External data is never read (parameter sizes come from tensor metadata).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from inspector.core.diff import Change, ModelDiff
from inspector.core.model.calls import RULED_OUT
from inspector.core.model.index import ModelFacts
from inspector.core.model.parameters import ParameterStats
from inspector.core.reviewed_changes import Reviewed
from inspector.core.specialise.categories import Category

# a review's statuses, and ``changed``: what ``check`` says of an item whose review was made on an earlier body and
# whose values changed since (``core.review.carried``)
STATUSES = ("unreviewed", "ok", "suspicious", "wrong", "changed")


@dataclass(slots=True)
class Limits:
    """How much detail a report keeps; everything beyond is counted and noted, never silently dropped."""

    families: int = 200  # families analysed and shown in full (all are listed in the summary table)
    bodies_per_family: int = 20  # distinct bodies shown per family
    members_listed: int = 20  # call names listed per body
    body_lines: int = 300  # lines of ONNX text per body
    findings: int = 1000
    changes: int = 2000  # diff changes
    function_graphs: int = 100  # inline SVGs of function overload bodies
    aten_graphs: int = 30  # inline SVGs of aten call bodies
    graph_nodes: int = 150  # scene nodes per graph
    graph_seconds: float = 30.0  # total layout time for all graphs


# --- the report -------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ReviewInfo:
    status: str  # one of STATUSES: the item's own review's, else what ``check`` carries over (below)
    note: str = ""  # the item's own review's
    updated: str = ""
    # where the item has no review of its own and ``check`` decides it by a review of an earlier body (one the model
    # no longer has; ``core.review.carried``): that review's status and note, how it applies (``same_value``: the
    # value is the one reviewed, so its status stands; ``earlier_body``: changed since), and the sentence the app
    # shows for it ("was 0.5 when reviewed ok: …")
    previous_status: str | None = None
    previous_note: str = ""
    previous_basis: str = ""
    previous_value: Any = None  # JSON-safe: the value that review recorded (a value item's)
    carried: str = ""


@dataclass(slots=True)
class ArgumentLink:
    parameter: str
    value: Any  # JSON-safe
    rule: str  # the evidence, e.g. "perm swaps dims 1 and 2"
    place: str = ""  # where the lowering implements the argument: "Transpose.perm", "Mul on query/key"


@dataclass(slots=True)
class CallValue:
    """The value one call site passes for a parametric attribute (a TorchScript module function's eps)."""

    call: str  # the call site's path
    value: Any  # JSON-safe
    text: str


@dataclass(slots=True)
class TorchlibInfo:
    """The torchlib (onnxscript) function that lowers an aten overload, from the shipped catalogue."""

    target: str  # "aten::transpose.int"
    function: str  # "aten_transpose"
    trace_only: bool
    source: str  # "function_libs/torch_lib/ops/core.py:10114"

    @property
    def kind(self) -> str:
        """``trace_only`` (Python run at export time: the values it computes are baked in) or ``script``."""
        return "trace_only" if self.trace_only else "script"

    @property
    def text(self) -> str:
        """``aten::transpose.int → torchlib aten_transpose, trace_only``."""
        return f"{self.target} → torchlib {self.function}, {self.kind}"


@dataclass(slots=True)
class SpecialisedInfo:
    id: str  # unique in the report ("f3-b0-s1"); generated, never model text
    category: Category
    where: str  # "Transpose.perm", "constant val_9 (read by Reshape)"
    node: str | None  # node path in the body ("0", "3/then_branch/1"); None for a constant input
    op_type: str | None
    kind: str  # attribute, constant, initializer, parametric
    name: str  # attribute or constant name
    value: Any  # JSON-safe
    value_text: str
    varies: bool
    family_values: list[Any]
    links: list[ArgumentLink]
    refers_to: str | None
    description: str  # plain text: what it is, what varies, where it came from (tooltips)
    line: int | None = None  # index of the body line that shows it
    review: ReviewInfo | None = None
    shape: str | None = None  # shape-specialised: how an input shape made it (wrong for another shape)
    baked_by: str | None = None  # the trace_only torchlib function that put it there at export time
    call_sites: list[CallValue] = field(default_factory=list)  # parametric: what each call site passes
    read_by: str | None = None  # a constant input: the path of the first node reading it


@dataclass(slots=True)
class Span:
    """A piece of a signature or body line; ``spec`` ties it to a specialised value, ``parameter`` to an aten
    parameter."""

    text: str
    spec: str | None = None
    parameter: str | None = None


@dataclass(slots=True)
class ArgumentInfo:
    parameter: str
    type: str
    value: Any  # JSON-safe; tensor arguments as "%name"
    text: str
    is_default: bool
    provided: bool
    specialised: list[str] = field(default_factory=list)  # ids of the values tied to it


@dataclass(slots=True)
class SignatureInfo:
    target: str | None
    text: str
    spans: list[Span]
    problem: str | None
    arguments: list[ArgumentInfo]


@dataclass(slots=True)
class BodyInfo:
    id: str  # "f3-b0"
    title: str
    overloads: list[str]  # the overloads (as shown) whose members have this body
    fingerprint: str
    template: str
    calls: int
    node_count: int
    members: list[str]  # aten call names, or the function key
    members_omitted: int
    signature: SignatureInfo | None
    lines: list[list[Span]]
    lines_omitted: int
    specialised: list[SpecialisedInfo]
    review: ReviewInfo | None = None
    svg: str | None = None  # standalone SVG (inspector.render.layout.to_svg), model strings XML-escaped
    graph_note: str | None = None
    lone: bool = False  # no other body of its template in the family: nothing to compare its values with
    left_out: list[SpecialisedInfo] = field(default_factory=list)  # literals not listed: ONNX schema defaults
    torchlib: TorchlibInfo | None = None  # what lowered the body's aten target
    rewritten_by: list[str] = field(default_factory=list)  # optimizer rules that rewrote the call's nodes
    # calls recognised by body template (nodes without fx metadata, ``core.model.recognise``): the templates that fit
    # its calls, and their targets (several: an ambiguous body)
    recognised: list[str] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)
    ruled_out: list[str] = field(default_factory=list)  # targets it fits too, that its outputs' names rule out

    @property
    def recognised_text(self) -> str:
        """``Recognised by template aten::gelu#0 …`` (plain text; each writer escapes it), "" for none."""
        if not self.recognised:
            return ""
        n = len(self.recognised)
        text = f"Recognised by template{'s' if n != 1 else ''} {', '.join(self.recognised)} (no fx metadata)"
        if len(self.candidates) > 1:
            text += f"; ambiguous body, candidates: {', '.join(self.candidates)}"
        if self.ruled_out:
            text += f"; also fits {', '.join(self.ruled_out)}: {RULED_OUT}"
        return text

    @property
    def spec_by_id(self) -> dict[str, SpecialisedInfo]:
        return {s.id: s for s in self.specialised}


@dataclass(slots=True)
class OverloadInfo:
    overload: str  # as shown ("" for the default)
    label: str
    calls: int
    function: tuple[str, str, str] | None  # (domain, name, overload)
    target: str | None
    nodes: int | None
    body_ids: list[str] = field(default_factory=list)
    torchlib: TorchlibInfo | None = None


@dataclass(slots=True)
class FamilyInfo:
    id: str  # "f3"
    kind: str
    domain: str
    name: str
    label: str
    calls: int
    torchscript_variants: bool
    overloads: list[OverloadInfo]
    detailed: bool = False
    body_count: int = 0
    bodies: list[BodyInfo] = field(default_factory=list)
    bodies_omitted: int = 0
    specialised_count: int = 0
    review_counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """The model section: the index's own ``ModelFacts`` and ``ParameterStats``, kept as they are (not copied field
    by field), with what they do not hold: the file's path and the inputs a caller feeds (initializers left out)."""

    path: str
    facts: ModelFacts
    parameters: ParameterStats
    inputs: list[str]

    @property
    def file_name(self) -> str:
        return PurePath(self.path).name

    @property
    def opsets(self) -> dict[str, int]:
        """The opset imports, sorted by domain (the default domain ``""`` first)."""
        return dict(sorted(self.facts.opsets.items()))


@dataclass(slots=True)
class OpCount:
    domain: str
    op_type: str
    count: int


@dataclass(slots=True)
class FindingInfo:
    kind: str
    severity: str
    message: str
    where: list[str]


@dataclass(slots=True)
class DiffInfo:
    """The comparison section: the diff, and how many of its changes a report lists."""

    diff: ModelDiff
    changes: list[Change]  # the first ``Limits.changes`` changes
    changes_omitted: int
    # per change listed (by ``id``): what this model's reviews say of its body (``core.reviewed_changes``)
    reviewed: dict[int, Reviewed] = field(default_factory=dict)

    @property
    def other(self) -> str:
        """The compared model, as the diff names it."""
        return self.diff.b

    @property
    def equal(self) -> bool:
        return self.diff.equal

    @property
    def equivalent(self) -> bool:
        return self.diff.equivalent


@dataclass(slots=True)
class ReviewSummary:
    available: bool  # a review store was given and could be read
    sidecar: str | None  # file name of the sidecar
    error: str | None
    counts: dict[str, int]  # reviewable things of the analysed families, by status


@dataclass(slots=True)
class Report:
    generator: str
    model: ModelInfo
    op_histogram: list[OpCount]
    families: list[FamilyInfo]
    families_omitted: int  # families listed but not analysed in full
    findings: list[FindingInfo]
    findings_omitted: int
    reviews: ReviewSummary
    diff: DiffInfo | None
    graphs: str  # "included", "disabled", "unavailable" (pygraphviz missing), "none" (nothing to draw)
    notes: list[str]  # what was left out, and why

    @property
    def title(self) -> str:
        return f"ONNX Inspector report: {self.model.file_name}"


# how the HTML pages name each review status on its badge (the report's, and its diff's reviewed changes)
BADGE_LABELS = {"unreviewed": "unreviewed", "ok": "OK", "suspicious": "suspicious", "wrong": "wrong",
                "changed": "changed"}
# what the report's Reviews section lists, the worst first as ``check`` lists failing items: changed since reviewed,
# then marked wrong, then suspicious (an unreviewed item is counted, not listed)
FLAGGED = ("changed", "wrong", "suspicious")


def flagged_reviews(report: Report) -> list[tuple[FamilyInfo, BodyInfo, SpecialisedInfo | None, ReviewInfo]]:
    """(family, body, specialised value or None for the overload, review) of each item whose status is in
    ``FLAGGED``, in that order, then in the families' order."""
    out: list[tuple[FamilyInfo, BodyInfo, SpecialisedInfo | None, ReviewInfo]] = []
    for f in report.families:
        for b in f.bodies:
            if b.review is not None and b.review.status in FLAGGED:
                out.append((f, b, None, b.review))
            out += [(f, b, s, s.review) for s in b.specialised if s.review is not None and s.review.status in FLAGGED]
    rank = {status: k for k, status in enumerate(FLAGGED)}
    return sorted(out, key=lambda item: rank[item[3].status])


def carried_count(report: Report) -> int:
    """How many review items read as a review of an earlier body (``ReviewInfo.carried``)."""
    return sum(1 for f in report.families for b in f.bodies
               for r in (b.review, *(s.review for s in b.specialised)) if r is not None and r.carried)
