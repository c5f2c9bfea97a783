"""Reviews of one model as plain data for the session (``gui.session``): every reviewable item with its review
(the Review panel's list), per-overload badge counts (the functions tree), and the review target, bound to the
model and sidecar store it was chosen in so that it can never write into another model's sidecar.

An item with no review of its own shows what ``check`` carries over to it from an earlier body (one the model no
longer has: the same model re-exported over itself keeps its sidecar): the status of a review made on the same
value, or ``changed`` where the value changed since. Without it the app listed as unreviewed what ``check`` passed,
and said nothing of what ``check`` failed as changed since review."""

from __future__ import annotations

from dataclasses import dataclass

from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.review.carried import carried_reviews, shown_review
from inspector.core.review.check import check_model
from inspector.core.review.store import Review, ReviewKey, ReviewStore, review_keys
from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, SpecialisedValue
from inspector.core.util.units import plural
from inspector.gui.analysis import Analyses, Preempted, Selection
from inspector.gui.family_model import BadgeCounts
from inspector.gui.review_panel import FLAGGED, OPEN, ReviewItem
from inspector.gui.worker import give_way

_FLAGGED = {status: BadgeCounts._fields.index(status) for status in FLAGGED}  # its place in ``BadgeCounts``

Reviewable = BodyAnalysis | SpecialisedValue  # an overload's body, or one specialised value


@dataclass(frozen=True, slots=True)
class Target:
    """What the review bar marks, bound to the model (its index and review store) it was chosen in."""

    item: ReviewItem
    index: ModelIndex
    store: ReviewStore


def find_target(analyses: Analyses, index: ModelIndex, store: ReviewStore, sel: Selection, obj: Reviewable
                ) -> Target | None:
    """The review target for ``obj`` (the body of ``sel``, or one of its specialised values), bound to this model;
    None when ``obj`` is not among the family's reviewable items."""
    if analyses.index is not index or not sel.analysis.members:
        return None
    fam = analyses.family_of(sel.analysis.members[0])
    family_analysis = analyses.family(fam) if fam is not None else None
    if family_analysis is None:
        return None
    for key, thing in review_keys(family_analysis):
        if thing is obj:
            return Target(ReviewItem(key, thing, family_analysis), index, store)
    return None


def value_reviews(analyses: Analyses, index: ModelIndex, store: ReviewStore, carried: dict[ReviewKey, Review],
                  sel: Selection) -> dict[int, Review]:
    """The review of each specialised value of the body of ``sel``, as the Review list shows it (``shown_review``), by
    ``id`` of the value: what the Signature tab's table says beside each."""
    if analyses.index is not index or not sel.analysis.members or not sel.analysis.specialised:
        return {}
    fam = analyses.family_of(sel.analysis.members[0])
    family_analysis = analyses.family(fam) if fam is not None else None
    if family_analysis is None:
        return {}
    shown = {id(s) for s in sel.analysis.specialised}
    return {id(obj): shown_review(store.get(key), carried.get(key)) for key, obj in review_keys(family_analysis)
            if key.kind == "value" and id(obj) in shown}


def target_label(target: Target, sel: Selection) -> str:
    """What the review bar names: a value with its place; a function's overload; the body of the aten calls shown,
    with how many calls share it (``aten::linear  (linear_6): body of 9 calls``): an overload may have several bodies,
    each reviewed on its own, and "overload aten::linear" named the body of Qwen2's 6 linear calls with a bias and that
    of its 9 without alike."""
    item = target.item
    if item.key.kind == "value":
        return item.label
    members = item.body.members if item.body is not None else []
    if not members or isinstance(members[0], FunctionKey):
        return f"overload {sel.title}"
    return f"{sel.title}: body of {plural(len(members), 'call')}"


def review_items(analyses: Analyses, store: ReviewStore
                 ) -> tuple[list[tuple[ReviewItem, Review]], dict[int, BadgeCounts], dict[ReviewKey, Review]]:
    """Every reviewable item of every family with the review shown for it (``shown_review``), per-overload badge
    counts, and the reviews carried over from earlier bodies (``carried_reviews``)."""
    items: list[tuple[ReviewItem, Review]] = []
    family_analyses: list[FamilyAnalysis] = []
    for fam in analyses.index.families:
        while True:
            give_way()  # a background job: what the user clicks meanwhile goes first
            try:
                fa = analyses.family(fam)
                break
            except Preempted:  # a selection needed the analyses meanwhile: this family again, after it
                continue
        family_analyses.append(fa)
        for key, obj in review_keys(fa):
            items.append((ReviewItem(key, obj, fa), store.get(key)))  # type: ignore[arg-type]
    carried = carried_reviews(check_model(analyses.index, store, family_analyses).items)
    items = [(item, shown_review(review, carried.get(item.key))) for item, review in items]
    return items, badges(items, analyses.index), carried


def badges(items: list[tuple[ReviewItem, Review]], index: ModelIndex | None) -> dict[int, BadgeCounts]:
    """Per overload, keyed by id(overload): its specialised values, its items left to review, and those marked
    suspicious and wrong (``BadgeCounts``), so that a flagged item stays findable in the tree once reviewed."""
    if index is None:
        return {}
    owner: dict[int, int] = {}
    for fam in index.families:
        for ov in fam.overloads:
            if ov.function is not None:
                owner[hash(ov.function)] = id(ov)
            for call in ov.aten_calls:
                owner[id(call)] = id(ov)
    counts: dict[int, list[int]] = {}
    for item, review in items:
        body = item.body
        if body is None:
            continue
        ovs = {owner.get(hash(m) if isinstance(m, FunctionKey) else id(m)) for m in body.members}
        for ov_id in ovs - {None}:
            c = counts.setdefault(ov_id, [0, 0, 0, 0])  # type: ignore[arg-type]
            if item.key.kind == "value":
                c[0] += 1
            if review.status in OPEN:
                c[1] += 1
            elif review.status in _FLAGGED:
                c[_FLAGGED[review.status]] += 1
    return {k: BadgeCounts(*v) for k, v in counts.items()}

