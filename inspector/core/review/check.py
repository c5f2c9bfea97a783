"""Reviews in CI: is every review item of a model reviewed OK, and what changed since it was reviewed?

The items are exactly those the app's Review panel and the report list: ``review.review_keys`` of every family
(each distinct body, then each specialised value that is not parametric). Each gets one ``CheckStatus``:

- ``ok``: a review applies by fingerprint (``ReviewStore.get``) with status ok; or (value items) no review
  applies, but the same slot of the same family and template was reviewed ok on an earlier body and recorded
  the very value this body holds (``basis`` says ``same_value``): the value did not change, only its body did.
- ``suspicious`` / ``wrong``: a review says so (by fingerprint, or the same value as above).
- ``changed``: no review applies, but the same family, template and slot was reviewed on an earlier body: the
  baked values changed since (a re-export with another SDPA scale). ``reviewed_value`` is the value recorded by
  that review (``None`` when the review recorded none), ``value`` the value now; for an overload, ``changes``
  lists the values of its body that differ from the ones recorded on the earlier body.
- ``unreviewed``: nothing applies, and the item is review-worthy.
- ``not_review_worthy``: an overload whose body holds no specialised value and that is its family's only body
  (nothing was baked in, nothing differs from a sibling). Specialised values are always review-worthy.

When several earlier bodies of one template were reviewed (two attention layers with different head counts), a body
is compared with the one whose recorded values agree with it in the most slots (then the latest). An earlier body is
one the model no longer has, or one it still has whose review recorded the bodies of its template the model had then
(``siblings``, see ``store``) and the body checked is not among them: it appeared after the review. A re-export that
changed Swin's ``layer_norm_eps`` for part of its layers moved those layer_norm calls to a new body and left the
others in the reviewed one; the new body's eps read ``unreviewed`` where it had changed from the value reviewed. A
sibling body of the same template that was in the model when the review was made (Swin's 16 view bodies) is no later
version of the reviewed one, and the review never stands for it (one value of one of them reviewed ok made 10 items
of the others "changed since review" in `check`, while the app listed them unreviewed); nor does a review of a body
still in the model that recorded no siblings (an older sidecar): which bodies came after it is unknown.

The check passes when no item is ``unreviewed``, ``suspicious``, ``wrong`` or ``changed``. Each pass is linear
in the items and the reviews (the reviews are indexed once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.review.store import Review, ReviewKey, ReviewStore, fold_key_of, review_keys
from inspector.core.specialise.categories import short_where
from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, SpecialisedValue, Specialiser
from inspector.core.util.units import plural

if TYPE_CHECKING:
    from inspector.core.review.value_changes import ValueChange

CheckStatus = Literal["ok", "suspicious", "wrong", "changed", "unreviewed", "not_review_worthy"]
CHECK_STATUSES: tuple[CheckStatus, ...] = ("changed", "wrong", "suspicious", "unreviewed", "ok",
                                           "not_review_worthy")
FAILING: frozenset[str] = frozenset({"changed", "wrong", "suspicious", "unreviewed"})
Basis = Literal["fingerprint", "same_value", "earlier_body", "none"]
CHECK_FORMAT = "onnx-inspector/check"
CHECK_VERSION = 1
MAX_CALLS_NAMED = 3


@dataclass(slots=True)
class CheckItem:
    """One review item with its check status and what the reviews say about it."""

    status: CheckStatus
    key: ReviewKey
    where: str  # "body" for an overload; "Op.attribute" or "NAME (Op)" for a value
    owner: str  # the overload or the calls the item belongs to
    value: Any = None  # a value item's value now
    basis: Basis = "none"  # how the review that decided the status was found
    review_status: str = "unreviewed"  # the deciding review's status (the earlier one for "changed")
    reviewed_value: Any = None  # the value that review recorded
    note: str = ""
    changes: list[ValueChange] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        return self.status in FAILING

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "kind": self.key.kind, "family": self.key.family, "where": self.where,
            "owner": self.owner, "slot": self.key.slot or None, "value": self.value,
            "basis": self.basis, "review_status": self.review_status, "reviewed_value": self.reviewed_value,
            "note": self.note, "changes": [{"where": c.where, "old": c.old, "new": c.new} for c in self.changes],
            "template": self.key.template, "fingerprint": self.key.fingerprint,
        }


@dataclass(slots=True)
class CheckResult:
    """A model's review items checked against a review file."""

    model: str
    reviews: str  # the review file read
    items: list[CheckItem]

    @property
    def passed(self) -> bool:
        return not any(i.failing for i in self.items)

    @property
    def failing(self) -> list[CheckItem]:
        """The items that fail, the worst first (changed, wrong, suspicious, then unreviewed: ``CHECK_STATUSES``'
        order), each status in the families' order: a model with 40 items nobody reviewed yet and one a reviewer
        marked wrong listed the wrong one wherever its family fell, past the 10 errors GitHub shows a step."""
        rank = {status: k for k, status in enumerate(CHECK_STATUSES)}
        return sorted((i for i in self.items if i.failing), key=lambda i: rank[i.status])

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = dict.fromkeys(CHECK_STATUSES, 0)
        for i in self.items:
            out[i.status] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``check --format json`` object (documented in the README)."""
        return {"format": CHECK_FORMAT, "version": CHECK_VERSION, "model": self.model, "reviews": self.reviews,
                "passed": self.passed, "counts": self.counts(), "items": [i.to_json() for i in self.items]}


def check_model(index: ModelIndex, store: ReviewStore,
                analyses: Sequence[FamilyAnalysis] | None = None) -> CheckResult:
    """Check every review item of ``index`` against ``store`` (see the module doc)."""
    if analyses is None:
        analyses = Specialiser(index).analyse_all()
    keyed = [(analysis, review_keys(analysis)) for analysis in analyses]
    earlier = _Earlier(store, {key.fingerprint for _a, keys in keyed for key, _o in keys})
    items: list[CheckItem] = []
    for analysis, keys in keyed:
        owner_of = {id(s): body for body in analysis.bodies for s in body.specialised}
        by_body: dict[int, list[tuple[ReviewKey, BodyAnalysis | SpecialisedValue]]] = {}
        for key, obj in keys:
            if isinstance(obj, SpecialisedValue):
                body = owner_of.get(id(obj))
                if body is not None:
                    by_body.setdefault(id(body), []).append((key, obj))
            elif isinstance(obj, BodyAnalysis):
                by_body.setdefault(id(obj), []).append((key, obj))
        lone = len(analysis.bodies) == 1
        for body in analysis.bodies:
            entries = by_body.get(id(body), [])
            if entries:
                items += _check_body(body, entries, store, earlier, lone)
    return CheckResult(str(index.path), str(store.path), items)


class _Earlier:
    """Reviews indexed once by (kind, family, template, slot), to find those made on an earlier body: one whose
    fingerprint is none of ``present``, the bodies of the model checked, or one still present whose review
    recorded its template's bodies then (``Review.siblings``), for the bodies that were not among them."""

    def __init__(self, store: ReviewStore, present: set[str]) -> None:
        # with each review, the bodies it never stands for: its recorded siblings if its body is present, else none
        self.by_slot: dict[tuple[str, str, str, str], list[tuple[ReviewKey, Review, frozenset[str]]]] = {}
        # the same by the fold key (``fold_keys``): reviews made on the body's flat or folded form
        self.by_fold: dict[tuple[str, str, str, str], list[tuple[ReviewKey, Review, str]]] = {}
        for key, review in store.items():
            if review.status == "unreviewed" or (key.fingerprint in present and not review.siblings):
                continue  # (a body of this model reviewed without siblings: no body is known to be later)
            slot = (key.kind, key.family, key.template, key.slot)
            if key.fingerprint in present:  # earlier only for the bodies that came after it
                self.by_slot.setdefault(slot, []).append((key, review, frozenset(review.siblings)))
                continue  # (the model has this review's body: it is in this review's form, no look across fold)
            self.by_slot.setdefault(slot, []).append((key, review, frozenset()))
            fold = fold_key_of(store, key)
            if fold is not None:
                self.by_fold.setdefault((key.kind, key.family, fold[0], fold[2]), []).append((key, review, fold[1]))

    def of(self, key: ReviewKey) -> dict[str, Review]:
        """Reviews of ``key``'s slot on other bodies of its template (in either form across fold), by their body's
        fingerprint: those of bodies gone from the model, and those of bodies still in it whose recorded siblings
        do not hold ``key``'s body (it appeared since)."""
        found = self.by_slot.get((key.kind, key.family, key.template, key.slot), [])
        out = {k.fingerprint: r for k, r, then in found
               if k.fingerprint != key.fingerprint and key.fingerprint not in then}
        if key.fold[0]:
            for k, r, ffp in self.by_fold.get((key.kind, key.family, key.fold[0], key.fold[2]), []):
                if ffp != key.fold[1] and k.fingerprint != key.fingerprint:
                    out.setdefault(k.fingerprint, r)
        return out


def _check_body(body: BodyAnalysis, entries: list[tuple[ReviewKey, BodyAnalysis | SpecialisedValue]],
                store: ReviewStore, earlier: _Earlier, lone: bool) -> list[CheckItem]:
    owner = _owner(body)
    values = [(k, o) for k, o in entries if isinstance(o, SpecialisedValue)]
    old_values = {k: earlier.of(k) for k, _o in values}
    old_overloads = {k: earlier.of(k) for k, o in entries if not isinstance(o, SpecialisedValue)}
    paired = _pair(values, old_values, list(old_overloads.values())) or ""
    out: list[CheckItem] = []
    for key, obj in entries:
        if isinstance(obj, SpecialisedValue):
            out.append(_check_value(key, obj, owner, store.get(key), old_values[key].get(paired)))
            continue
        changes = []
        for k, spec in values:
            old = old_values[k].get(paired)
            if old is not None and old.value is not None and old.value != spec.literal.value:
                from inspector.core.review.value_changes import ValueChange  # (a changed value: start-up)

                changes.append(ValueChange(short_where(spec), old.value, spec.literal.value))
        worthy = bool(values) or not lone
        out.append(_check_overload(key, owner, store.get(key), old_overloads[key].get(paired), changes, worthy))
    return out


def _pair(values: list[tuple[ReviewKey, SpecialisedValue]], old_values: dict[ReviewKey, dict[str, Review]],
          old_overloads: list[dict[str, Review]]) -> str | None:
    """The earlier body (fingerprint) to compare with: most recorded values equal to this body's, then latest."""
    found = [*old_values.values(), *old_overloads]
    old_bodies = sorted({fp for d in found for fp in d})
    if not old_bodies:
        return None

    def score(fp: str) -> tuple[int, str]:
        same = 0
        for k, spec in values:
            r = old_values[k].get(fp)
            if r is not None and r.value is not None and r.value == spec.literal.value:
                same += 1
        return same, max((d[fp].updated for d in found if fp in d), default="")

    return max(old_bodies, key=score)


def _check_value(key: ReviewKey, spec: SpecialisedValue, owner: str, review: Review,
                 old: Review | None) -> CheckItem:
    value = spec.literal.value
    item = CheckItem("unreviewed", key, short_where(spec), owner, value=value)
    if review.status != "unreviewed":
        item.status, item.basis = cast(CheckStatus, review.status), "fingerprint"
        item.review_status, item.reviewed_value, item.note = review.status, review.value, review.note
    elif old is not None:
        item.review_status, item.reviewed_value, item.note = old.status, old.value, old.note
        if old.value is not None and old.value == value:
            item.status, item.basis = cast(CheckStatus, old.status), "same_value"
        else:
            item.status, item.basis = "changed", "earlier_body"
    return item


def _check_overload(key: ReviewKey, owner: str, review: Review, old: Review | None, changes: list[ValueChange],
                    worthy: bool) -> CheckItem:
    item = CheckItem("unreviewed", key, "body", owner)
    if review.status != "unreviewed":
        item.status, item.basis = cast(CheckStatus, review.status), "fingerprint"
        item.review_status, item.note = review.status, review.note
    elif old is not None:
        item.status, item.basis = "changed", "earlier_body"
        item.review_status, item.note, item.changes = old.status, old.note, changes
    elif not worthy:
        item.status = "not_review_worthy"
    return item


def _owner(body: BodyAnalysis) -> str:
    """The overloads (local functions) or the calls (aten) a body belongs to, named briefly."""
    members = body.members
    if not members:
        return ""
    if isinstance(members[0], FunctionKey):
        names = [str(m) for m in members[:MAX_CALLS_NAMED]]
        more = f" and {len(members) - MAX_CALLS_NAMED} more" if len(members) > MAX_CALLS_NAMED else ""
        return f"overload {', '.join(names)}{more}"
    named = []
    for call in members[:MAX_CALLS_NAMED]:
        module = getattr(call, "module_path", "")
        named.append(f"{getattr(call, 'name', call)}" + (f" in {module}" if module else ""))
    n = len(members)
    more = f" and {n - MAX_CALLS_NAMED} more" if n > MAX_CALLS_NAMED else ""
    return f"{plural(n, 'call')}: {', '.join(named)}{more}"


def load_reviews(model_path: Path, reviews: Path | None) -> ReviewStore:
    """The review store to check against: the model's sidecar, or ``reviews`` (which must exist) instead."""
    store = ReviewStore(model_path)
    if reviews is not None:
        if not reviews.exists():
            from inspector.core.util.errors import InspectorError

            raise InspectorError(f"cannot read review file {reviews}: no such file")
        store.path = reviews
    store.load()
    return store
